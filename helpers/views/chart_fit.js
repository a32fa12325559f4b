// The book's charts at any width (helpers/views/charts.py hands this to every figure it renders for
// the static book and Colab as plotly's post_script; {plot_id} is the figure's div). Plotly neither wraps a
// title nor keeps a legend clear of it: here the title wraps to the chart's width, and a legend
// above the plot is placed under the title, each measured, with the top margin and the figure's
// height grown by what they need, so the plot area keeps its size. Runs again when the chart's
// width changes (a phone turned, a folded output opened).
(function () {
  var gd = document.getElementById('{plot_id}');
  if (!gd || !window.Plotly) return;
  var orig = null, busy = false, done = 0, pending = false, failures = 0, axesOrig = null;
  // narrower than this (a phone), plotly's toolbar, which a tap shows, would cover the title:
  // it is hidden (a phone pinches to zoom). By the screen's width, a style rule in force from the
  // page's first chart on, whether or not a chart has been fitted yet (a chart in a fold is
  // fitted only when opened); a chart narrower than the screen is marked so when it is fitted
  var NARROW_PX = 520;
  if (!document.getElementById('ap-chart-fit-style')) {
    var style = document.createElement('style');
    style.id = 'ap-chart-fit-style';
    style.textContent = '@media (max-width: ' + (NARROW_PX - 0.02) + 'px) { .js-plotly-plot .modebar-container ' +
                        '{ display: none !important; } }\n.ap-chart-narrow .modebar-container { display: none !important; }';
    document.head.appendChild(style);
  }
  // every category of a categorical axis labelled (plotly skips every other one where they
  // crowd): a tick per category, turned upright and smaller where the categories are narrow
  // an axis title longer than its axis (a y title on a short phone chart runs up into the
  // title) wraps at a word, measured
  var titlesOrig = null;
  function axisTitles() {
    var full = gd._fullLayout || {};
    if (titlesOrig === null) {
      titlesOrig = {};
      Object.keys(full).forEach(function (key) {
        var ax = full[key];
        if (/^[xy]axis\d*$/.test(key) && ax && ax.title && ax.title.text) titlesOrig[key] = ax.title.text;
      });
    }
    var keys = Object.keys(titlesOrig), reset = {};
    keys.forEach(function (key) {
      if (full[key].title.text !== titlesOrig[key]) reset[key + '.title.text'] = titlesOrig[key];
    });
    return (Object.keys(reset).length ? Plotly.relayout(gd, reset) : Promise.resolve()).then(function () {
      var update = {};
      keys.forEach(function (key) {
        var ax = gd._fullLayout[key], text = titlesOrig[key];
        var el = gd.querySelector('.g-' + ax._id + 'title text');
        var r = el ? el.getBoundingClientRect() : null;
        var length = r ? (key.charAt(0) === 'y' ? r.height : r.width) : 0;
        if (length > ax._length + 4) {
          var limit = Math.max(8, Math.floor(plain(text).length * (ax._length - 8) / length));
          update[key + '.title.text'] = wrap(text, limit).join('<br>');
        }
      });
      return Object.keys(update).length ? Plotly.relayout(gd, update) : null;
    });
  }
  // a legend under the plot (legend.y below 0, in the plot's fraction, which plotly does not keep
  // clear of the x axis's labels and title as they wrap on a phone) is placed under the lowest
  // of them, measured, with the bottom margin and the figure's height grown by what it needs
  var below = null;
  function legendBelow() {
    var full = gd._fullLayout, given = gd.layout.legend || {};
    if (below === null) {
      below = full.showlegend !== false && typeof given.y === 'number' && given.y < 0 && given.yref !== 'container';
    }
    var l = gd.querySelector('.legend');
    if (!below || !l) return null;
    var top = gd.getBoundingClientRect().top, lowest = full._size.t + full._size.h;
    gd.querySelectorAll('.xaxislayer-above text, .g-xtitle text, [class^="g-x"][class$="title"] text').forEach(function (el) {
      var r = el.getBoundingClientRect();
      if (r.height) lowest = Math.max(lowest, r.bottom - top);
    });
    // the entries' own extent: plotly cuts a legend that has no room to a scrolled box
    var entries = [].slice.call(l.querySelectorAll('.traces')).map(function (e) { return e.getBoundingClientRect(); });
    var lh = entries.length ? Math.max.apply(null, entries.map(function (r) { return r.bottom; })) -
                              Math.min.apply(null, entries.map(function (r) { return r.top; })) + 12
                            : l.getBoundingClientRect().height;
    var need = Math.ceil(lowest - (full._size.t + full._size.h) + 10 + lh + 8);
    var height = Math.round(full.height - full._size.b + need);
    return Plotly.relayout(gd, {'margin.b': need, 'height': height, 'legend.yref': 'container',
                                'legend.y': 1 - (lowest + 10) / height, 'legend.yanchor': 'top',
                                'legend.xref': 'container', 'legend.x': 0, 'legend.xanchor': 'left'}).then(function () {
      // placed, the legend may take more rows than it had: measured again, the chart grown to hold it
      var box = gd.getBoundingClientRect(), bottom = 0;
      [].slice.call(gd.querySelectorAll('.legend .traces')).forEach(function (e) {
        bottom = Math.max(bottom, e.getBoundingClientRect().bottom);
      });
      var over = Math.ceil(bottom + 8 - box.bottom);
      if (over <= 0) return null;
      var h = gd._fullLayout.height + over;
      return Plotly.relayout(gd, {'margin.b': need + over, 'height': h, 'legend.y': 1 - (lowest + 10) / h});
    });
  }
  function categoryAxes() {
    var full = gd._fullLayout || {}, update = {};
    if (axesOrig === null) {
      axesOrig = {};
      Object.keys(full).forEach(function (key) {
        var ax = full[key];
        if (!/^[xy]axis\d*$/.test(key) || !ax || ax.type !== 'category') return;
        var given = gd.layout[key] || {};
        axesOrig[key] = {angle: given.tickangle === undefined ? 'auto' : given.tickangle,
                         size: (given.tickfont && given.tickfont.size) || (ax.tickfont && ax.tickfont.size) || 12};
      });
    }
    Object.keys(axesOrig).forEach(function (key) {
      var ax = full[key], o = axesOrig[key];
      var n = (ax._categories || []).length;
      if (!n || !ax._length) return;
      update[key + '.dtick'] = 1;
      update[key + '.tick0'] = 0;
      var spacing = ax._length / n;
      if (key.charAt(0) === 'x' && spacing < 1.6 * o.size) {
        update[key + '.tickangle'] = -90;
        update[key + '.tickfont.size'] = Math.max(8, Math.min(o.size, Math.floor(spacing * 0.95)));
      } else {
        update[key + '.tickangle'] = o.angle;
        update[key + '.tickfont.size'] = o.size;
      }
    });
    return Object.keys(update).length ? Plotly.relayout(gd, update) : Promise.resolve();
  }
  function later() {
    if (pending) return;
    pending = true;
    setTimeout(function () { pending = false; fit(); }, 60);
  }
  function plain(s) { return s.replace(/<[^>]+>/g, ''); }
  function wrap(segment, limit) {
    var sup = /^<sup>([\s\S]*)<\/sup>$/.exec(segment);
    var inner = sup ? sup[1] : segment, max = sup ? Math.round(limit * 1.4) : limit;
    var lines = [], cur = '';
    inner.split(' ').forEach(function (word) {
      var next = cur ? cur + ' ' + word : word;
      if (plain(next).length > max && cur) { lines.push(cur); cur = word; } else { cur = next; }
    });
    if (cur) lines.push(cur);
    return lines.map(function (l) { return sup ? '<sup>' + l + '</sup>' : l; });
  }
  function box(selector) {
    var el = gd.querySelector(selector);
    if (!el || !el.getBBox) return null;
    var b = el.getBBox();
    return b.width || b.height ? b : null;
  }
  function fit() {
    if (busy) { later(); return; }
    // folded away (a closed output or dropdown): fitted when it is shown
    if (gd.checkVisibility ? !gd.checkVisibility() : !gd.getClientRects().length) return;
    var width = gd.clientWidth;
    if (!width || width === done) return;
    busy = true;
    gd.classList.toggle('ap-chart-narrow', width < NARROW_PX);
    var layout = gd.layout, full = gd._fullLayout || {};
    if (orig === null) {
      // charts.fit_layout laid the figure out for a phone and kept the original in meta.fit
      var kept = (layout.meta && layout.meta.fit) || null;
      var legend = layout.legend || {};
      orig = kept ? {title: kept.title || '', top: kept.top, height: kept.height,
                     legendOnTop: !!kept.legendOnTop, gap: kept.gap} : {
        title: (layout.title && layout.title.text) || '',
        top: (full.margin || {}).t || 80,
        height: full.height || 450,
        // a legend above the plot (the book's default) is placed under the title
        legendOnTop: full.showlegend !== false && (legend.y === undefined || legend.y >= 1) &&
                     legend.yref !== 'container'
      };
    }
    var chart = gd.getBoundingClientRect();
    function place(limit, tries) {
      var lines = [];
      orig.title.split('<br>').forEach(function (s) { lines = lines.concat(wrap(s, limit)); });
      return Plotly.relayout(gd, {'title.text': lines.join('<br>'), 'title.x': 0, 'title.xanchor': 'left',
                                  'title.yref': 'container', 'title.y': 1, 'title.yanchor': 'top',
                                  'title.pad.t': 8}).then(function () {
        var t = gd.querySelector('.g-gtitle');
        var b = t ? t.getBoundingClientRect() : null;
        // measured: narrower still where the widest line runs past the chart's edge
        if (b && b.width > width - 8 && tries < 6 && limit > 12) {
          return place(Math.max(12, Math.floor(limit * (width - 8) / b.width) - 1), tries + 1);
        }
        return b;
      });
    }
    categoryAxes().then(function () {
      return place(Math.max(18, Math.floor((width - 24) / 8.2)), 0);
    }).then(function (b) {
      var top = chart.top;
      chart = gd.getBoundingClientRect(); top = chart.top;
      var shift = b && b.height ? Math.max(0, 6 - (b.top - top)) : 0;
      var step = shift ? Plotly.relayout(gd, {'title.pad.t': 8 + shift}) : Promise.resolve();
      return step.then(function () {
        var t = gd.querySelector('.g-gtitle');
        var tb = t ? t.getBoundingClientRect() : null;
        var titleBottom = tb && tb.height ? tb.bottom - gd.getBoundingClientRect().top + 8 : 8;
        if (!orig.legendOnTop) {
          var m = Math.max(orig.top, titleBottom + 8);
          return Plotly.relayout(gd, {'margin.t': m, 'height': orig.height + m - orig.top});
        }
        // the legend's own height at this width, measured, then the legend moved under the title
        var l = gd.querySelector('.legend');
        var lh = l ? l.getBoundingClientRect().height : 0;
        // the gap holds the top subplot's title, where there is one (charts.fit_layout measured it)
        var m2 = titleBottom + lh + (orig.gap || 10);
        var height = orig.height + Math.max(0, m2 - orig.top);
        return Plotly.relayout(gd, {'margin.t': m2, 'height': height, 'legend.yref': 'container',
                                    'legend.y': 1 - titleBottom / height, 'legend.yanchor': 'top',
                                    'legend.x': 0, 'legend.xanchor': 'left'});
      });
    }).then(axisTitles).then(legendBelow).then(function () {
      busy = false; done = width;
      gd.setAttribute('data-fit-width', String(width));  // tests wait for it
      if (gd.clientWidth !== width) later();  // the page reflowed meanwhile
    }, function () {
      busy = false;
      if (++failures < 8) later();  // a relayout refused while plotly was busy: again
    });
  }
  fit();
  for (var d = gd.closest('details'); d; d = d.parentElement && d.parentElement.closest('details')) {
    d.addEventListener('toggle', later);
  }
  if (window.ResizeObserver) new ResizeObserver(function () { fit(); }).observe(gd);
  else window.addEventListener('resize', fit);
})();
