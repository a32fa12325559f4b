/* The occupancy calculator's page: fields, presets, results, the three impact curves and the SM,
 * drawn as SVG, on top of occupancy.js (the arithmetic). It mounts every calculator output
 * (helpers/occupancy/browser.py) that it finds, once, and reads everything from the output's
 * data: nothing is fetched.
 *
 * In the book (a Sphinx page) the configuration is kept in the page's query string, so a link
 * reproduces it; a link with a value the calculator refuses says so and falls back to the
 * defaults. In a notebook (JupyterLab, Colab) the URL is the notebook's and is left alone.
 *
 * Bad input never shows a wrong number: a field the calculator refuses shows the message
 * helpers.occupancy gives for it, and the results keep the last valid configuration, marked stale.
 *
 * For tests and scripts: window.attentionProfiled.occupancy(gpu, threads, registers, smem,
 * {carveout, sharedMemoryLimit}) and window.attentionProfiled.calculators (each mounted one).
 */
(function (global) {
  "use strict";
  const ns = (global.attentionProfiled = global.attentionProfiled || {});
  ns.calculators = ns.calculators || [];
  const SVG = "http://www.w3.org/2000/svg";
  // Linear: the digits before a point can be read one way only. (\d+\.?\d* could split a run of
  // digits anywhere, and backtracked quadratically: a 50,000-digit link froze the tab for 22 s.)
  const NUMBER = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
  // No number anyone types is longer: a longer field is refused as text, shortened, so that no
  // pattern, message or notice ever works on a huge string
  const MAX_FIELD = 32;
  const clip = (text) => (text.length > MAX_FIELD ? text.slice(0, MAX_FIELD) + "…" : text);
  const FIELDS = [
    { key: "threads", arg: "threads", url: "threads", label: "threads per block" },
    { key: "registers", arg: "registers", url: "registers", label: "registers per thread" },
    { key: "shared_memory", arg: "shared_memory", url: "smem", label: "shared memory per block (bytes)" },
  ];

  // a field's text as the value Python would be handed: a number when it reads as one, else the text
  function parseField(text) {
    if (text.length > MAX_FIELD) return clip(text);
    return NUMBER.test(text) ? Number(text) : text;
  }

  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  const int = (n) => n.toLocaleString("en-US");
  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;
  // presets grouped by the stages that launch them, in the order of the traces
  function groups(presets) {
    const out = new Map();
    for (const p of presets) {
      if (!out.has(p.stages)) out.set(p.stages, []);
      out.get(p.stages).push(p);
    }
    return [...out];
  }
  const kib = (bytes) => `${+(bytes / 1024).toFixed(2)} KiB`;

  function mount(root) {
    root.setAttribute("data-apo-mounted", "");
    // a notebook cell run again replaces its output: forget the calculators no longer on the page
    ns.calculators = ns.calculators.filter((c) => c.root.isConnected);
    const data = JSON.parse(root.querySelector(".apo-data").textContent);
    const calc = ns.createOccupancyCalculator(data);
    const py = ns.py;
    if (!ns.occupancy) ns.occupancy = calc.occupancy;  // the fixed API (every output has the same data)
    const uid = "apo" + (ns.mounted = (ns.mounted || 0) + 1);
    const bookMode = document.documentElement.hasAttribute("data-content_root");
    const style = data.style;
    const resourceLabel = data.labels.resources;
    const specKey = (spec) => spec.product || spec.capability;
    const pct = (fraction) => py.fixed(100 * fraction, 1) + "%";

    // --- the DOM -----------------------------------------------------------------------------
    const fallback = root.querySelector(".apo-fallback");
    if (fallback) fallback.remove();
    const el = document.createElement("div");
    el.className = "apo-body";
    const gpuOptions =
      `<optgroup label="Products">` +
      data.products.map((p) => `<option value="${esc(p.name)}">${esc(p.name)} · sm ${p.capability}, ${p.smCount} SMs</option>`).join("") +
      `</optgroup><optgroup label="Compute capabilities">` +
      data.architectures.map((a) => `<option value="${a.capability}">sm ${a.capability} · ${esc(a.architecture)}</option>`).join("") +
      `</optgroup>`;
    const field = (f) => `
      <div class="apo-field" data-field="${f.key}">
        <label for="${uid}-${f.key}">${f.label}</label>
        <div class="apo-input-row">
          <input type="text" inputmode="numeric" autocomplete="off" spellcheck="false" id="${uid}-${f.key}"
                 aria-describedby="${uid}-${f.key}-msg ${uid}-${f.key}-hint">
          <input type="range" min="0" max="1" step="1" tabindex="-1" aria-hidden="true">
        </div>
        <p class="apo-hint" id="${uid}-${f.key}-hint"></p>
        <p class="apo-error" id="${uid}-${f.key}-msg" role="alert" hidden></p>
      </div>`;
    el.innerHTML = `
      <div class="apo-notice" role="status" hidden></div>
      <details class="apo-presets">
        <summary>Presets: each kernel of the recorded stage traces, as traced</summary>
        <p class="apo-hint apo-preset-source">${esc(data.presetSource)}</p>
        <div class="apo-preset-list">${groups(data.presets).map(([stages, list]) => `
          <div class="apo-preset-group"><span class="apo-preset-stages">${esc(stages)}</span>${list.map((p) => `
            <button type="button" class="apo-preset" data-preset="${p.id}" aria-pressed="false"
                    title="${esc(p.name)}&#10;stages: ${esc(p.stages)} · traced on ${esc(p.tracedOn)}">${esc(p.label)}
              <span class="apo-preset-values">${p.threads} × ${p.registers} · ${int(p.sharedMemory)} B</span></button>`).join("")}
          </div>`).join("")}
        </div>
      </details>
      <div class="apo-controls">
        <div class="apo-field apo-field-gpu">
          <label for="${uid}-gpu">GPU</label>
          <select id="${uid}-gpu" aria-describedby="${uid}-gpu-hint">${gpuOptions}</select>
          <p class="apo-hint" id="${uid}-gpu-hint"></p>
        </div>
        ${FIELDS.map(field).join("")}
        <div class="apo-field">
          <label for="${uid}-carveout">carveout (shared memory per SM the kernel prefers)</label>
          <select id="${uid}-carveout"></select>
        </div>
        <fieldset class="apo-field apo-limit">
          <legend>shared memory limit per block</legend>
          <label><input type="radio" name="${uid}-limit" value="opt-in"> <span data-label="opt-in"></span></label>
          <label><input type="radio" name="${uid}-limit" value="default"> <span data-label="default"></span></label>
        </fieldset>
      </div>
      <div class="apo-results">
        <p class="apo-stale-note" role="status" hidden></p>
        <div class="apo-headline" aria-live="polite"></div>
        <div class="apo-table-wrap"><table class="apo-resources">
          <thead><tr><th>resource</th><th>a block</th><th>in use</th><th>the SM</th><th>left</th><th>alone allows</th></tr></thead>
          <tbody></tbody></table></div>
        <p class="apo-hint apo-table-note"></p>
        <h4 class="apo-h">Impact of varying each, the others held</h4>
        <div class="apo-curves">${FIELDS.map((f) => `
          <figure class="apo-curve" data-curve="${f.key}">
            <figcaption>${f.label.replace(" (bytes)", "")}</figcaption>
            <svg viewBox="0 0 300 200" role="img" aria-label="occupancy against ${f.label}"></svg>
            <p class="apo-readout"></p>
          </figure>`).join("")}
        </div>
        <h4 class="apo-h apo-sm-title"></h4>
        <div class="apo-sm">${data.labels.panelOrder.map((r) => `
          <figure class="apo-panel" data-resource="${r}">
            <figcaption></figcaption>
            <svg preserveAspectRatio="none" role="img" aria-label="${esc(data.labels.panels[r])}"></svg>
            <p class="apo-caption"></p>
          </figure>`).join("")}
        </div>
      </div>
      <p class="apo-share" hidden><a class="apo-share-link" href="">Link to this configuration</a>
        <span class="apo-hint">(the page's address holds it too)</span></p>`;
    root.appendChild(el);
    const $ = (sel) => el.querySelector(sel);
    const gpuSelect = $(`#${uid}-gpu`);
    const carveoutSelect = $(`#${uid}-carveout`);
    const inputs = {}, sliders = {}, errors = {}, hints = {};
    for (const f of FIELDS) {
      const box = $(`[data-field="${f.key}"]`);
      inputs[f.key] = box.querySelector('input[type="text"]');
      sliders[f.key] = box.querySelector('input[type="range"]');
      errors[f.key] = box.querySelector(".apo-error");
      hints[f.key] = box.querySelector(".apo-hint");
    }
    const limitRadios = [...el.querySelectorAll(`input[name="${uid}-limit"]`)];
    const presets = el.querySelector(".apo-presets");
    presets.open = !global.matchMedia || global.matchMedia("(min-width: 700px)").matches;

    // --- state ---------------------------------------------------------------------------------
    let lastValid = null;   // {config, result, series}
    let urlTimer = null;

    function spec() {
      return calc.gpuSpec(gpuSelect.value);
    }

    function setGpuOptions(s) {
      gpuSelect.value = specKey(s);
      $(`#${uid}-gpu-hint`).textContent =
        `per SM: ${s.maxWarpsPerSm} warps, ${s.maxBlocksPerSm} blocks, ${int(s.registersPerSm)} registers, ` +
        `up to ${kib(s.sharedMemoryPerSm)} of shared memory (${int(s.sharedMemoryPerBlockOptin)} B a block, opted in)` +
        (s.smCount ? ` · ${s.smCount} SMs` : "");
      sliders.threads.max = s.maxThreadsPerBlock;
      sliders.threads.min = 1;
      sliders.registers.max = s.maxRegistersPerThread;
      sliders.shared_memory.max = s.sharedMemoryPerBlockOptin;
      hints.threads.textContent = `1 to ${s.maxThreadsPerBlock}; warps of ${s.warpSize}`;
      hints.registers.textContent = `0 to ${s.maxRegistersPerThread}; handed out ${s.registerAllocationUnit} a warp at a time`;
      el.querySelector('[data-label="opt-in"]').textContent = `opted in: up to ${int(s.sharedMemoryPerBlockOptin)} B (as the kernels launch)`;
      el.querySelector('[data-label="default"]').textContent = `default: up to ${int(s.sharedMemoryPerBlockDefault)} B (as Kineto computes it)`;
    }

    function setCarveoutOptions(s, carveout) {
      const options = [`<option value="">no preference (the driver's pick)</option>`]
        .concat(s.carveouts.map((c) => `<option value="${c.percent}">${kib(c.bytes)} (carveout ${c.percent}%)</option>`));
      if (carveout !== null && !s.carveouts.some((c) => c.percent === carveout)) {
        options.push(`<option value="${carveout}">carveout ${carveout}%</option>`);
      }
      carveoutSelect.innerHTML = options.join("");
      carveoutSelect.value = carveout === null ? "" : String(carveout);
    }

    function carveoutValue() {
      return carveoutSelect.value === "" ? null : Number(carveoutSelect.value);
    }

    function limitValue() {
      const checked = limitRadios.find((r) => r.checked);
      return checked ? checked.value : "opt-in";
    }

    // load a configuration into the fields ({gpu, threads, registers, smem, carveout, limit})
    function load(config) {
      const s = calc.gpuSpec(config.gpu);
      setGpuOptions(s);
      setCarveoutOptions(s, config.carveout);
      inputs.threads.value = String(config.threads);
      inputs.registers.value = String(config.registers);
      inputs.shared_memory.value = String(config.smem);
      for (const r of limitRadios) r.checked = r.value === config.limit;
    }

    // --- update: validate, compute, draw -------------------------------------------------------
    function update() {
      const s = spec();
      const values = {};
      let bad = false;
      for (const f of FIELDS) {
        values[f.key] = parseField(inputs[f.key].value);
        const message = calc.fieldMessage(s, f.arg, values[f.key]);
        errors[f.key].hidden = message === null;
        errors[f.key].textContent = message || "";
        inputs[f.key].setAttribute("aria-invalid", message === null ? "false" : "true");
        if (message !== null) bad = true;
        else sliders[f.key].value = String(values[f.key]);
      }
      const smem = values.shared_memory;
      if (!bad) hints.shared_memory.textContent = `${kib(smem)}; 0 to ${int(s.sharedMemoryPerBlockOptin)} opted in, the driver adds ${int(s.reservedSharedMemoryPerBlock)} B a block`;
      if (bad) return markStale(true);
      const options = { carveout: carveoutValue(), sharedMemoryLimit: limitValue() };
      // valid, so integral numbers; + 0 turns a typed -0 into 0
      const config = { gpu: specKey(s), threads: values.threads + 0, registers: values.registers + 0,
                       smem: smem + 0, carveout: options.carveout, limit: options.sharedMemoryLimit };
      const result = calc.detail(s, config.threads, config.registers, config.smem, options);
      const series = calc.impactSeries(s, config.threads, config.registers, config.smem, options);
      lastValid = { config, result, series };
      draw(result, series);
      markStale(false);
      markPreset(config);
      writeUrl(config);
    }

    function markStale(stale) {
      el.querySelector(".apo-results").classList.toggle("apo-stale", stale);
      const note = el.querySelector(".apo-stale-note");
      note.hidden = !stale;
      if (stale && lastValid) {
        const c = lastValid.config;
        note.textContent = `Not updated: a field above holds a value the calculator refuses. Shown: the last valid ` +
          `configuration (${c.gpu}, ${c.threads} threads, ${c.registers} registers, ${int(c.smem)} B).`;
      }
      root.toggleAttribute("data-apo-stale", stale);
    }

    function markPreset(c) {
      for (const b of el.querySelectorAll(".apo-preset")) {
        const p = data.presets.find((q) => q.id === b.dataset.preset);
        const same = p.gpu === c.gpu && p.threads === c.threads && p.registers === c.registers &&
          p.sharedMemory === c.smem && c.carveout === null && c.limit === "opt-in";
        b.setAttribute("aria-pressed", same ? "true" : "false");
      }
    }

    const limiterText = (r) => r.limiters.map((k) => resourceLabel[k]).join(" + ");

    function draw(r, series) {
      const s = r.gpu;
      el.querySelector(".apo-headline").innerHTML = `
        <div class="apo-big"><span class="apo-num" data-out="activeBlocks">${r.activeBlocks}</span><span>active ${r.activeBlocks === 1 ? "block" : "blocks"} per SM</span></div>
        <div class="apo-big"><span class="apo-num" data-out="activeWarps">${r.activeWarps}</span><span>of ${r.maxWarps} warps per SM</span></div>
        <div class="apo-big"><span class="apo-num" data-out="occupancy">${pct(r.occupancy)}</span><span>occupancy</span></div>
        <div class="apo-big apo-limited"><span class="apo-num" data-out="limiters">${esc(limiterText(r))}</span><span>${r.limiters.length > 1 ? "limit" : "limits"} it</span></div>`;
      drawTable(r);
      for (const f of FIELDS) drawCurve(f, r, series[f.key]);
      drawSm(r);
      el.querySelector(".apo-sm-title").textContent =
        `One SM of ${s.name}: ${plural(r.activeBlocks, "block")} resident, ${r.activeWarps} of ${r.maxWarps} warps`;
    }

    function rows(r) {
      const s = r.gpu, b = r.activeBlocks;
      return [
        { k: "warps", per: plural(r.warpsPerBlock, "warp").replace(" ", "\u00a0"), used: r.activeWarps, cap: s.maxWarpsPerSm, unit: "" },
        { k: "registers", per: int(r.registersPerBlock), used: b * r.registersPerBlock, cap: s.registersPerSm, unit: "" },
        // a non-breaking space keeps a number with its unit when a phone's table wraps
        { k: "shared_memory", per: `${int(r.sharedMemoryAllocatedPerBlock)}\u00a0B`, used: b * r.sharedMemoryAllocatedPerBlock, cap: r.sharedMemoryPerSm, unit: "\u00a0B" },
        { k: "blocks", per: "1", used: b, cap: s.maxBlocksPerSm, unit: "" },
      ];
    }

    function drawTable(r) {
      el.querySelector(".apo-resources tbody").innerHTML = rows(r).map((row) => {
        const limit = r.blockLimits[row.k];
        const limiting = r.limiters.includes(row.k);
        return `<tr data-resource="${row.k}" class="${limiting ? "apo-limiting" : ""}">
          <th scope="row">${esc(resourceLabel[row.k])}${limiting ? " ◀" : ""}</th><td data-label="a block">${row.per}</td>
          <td data-out="used" data-label="in use">${int(row.used)}${row.unit} (${pct(r.utilization[row.k])})</td>
          <td data-out="capacity" data-label="the SM">${int(row.cap)}${row.unit}</td>
          <td data-out="left" data-label="left">${int(row.cap - row.used)}${row.unit}</td>
          <td data-out="allows" data-label="alone allows">${limit === data.unlimited ? "no limit" : plural(limit, "block")}</td></tr>`;
      }).join("");
      const s = r.gpu;
      el.querySelector(".apo-table-note").textContent =
        `Registers: ${int(r.registersPerWarp)} a warp (${r.registersPerThread} × ${s.warpSize}, rounded up to ${s.registerAllocationUnit}). ` +
        `Shared memory: a block takes what it asks plus the driver's ${int(s.reservedSharedMemoryPerBlock)} B, rounded up to ${s.sharedMemoryAllocationUnit} B; ` +
        `the SM is set up with ${int(r.sharedMemoryPerSm)} of its ${int(s.sharedMemoryPerSm)} B for this kernel ` +
        (r.sharedMemorySource === "preference" ? "(the kernel's carveout)."
          : "(no preference: the driver's pick, modelled as the smallest size holding the blocks the other limits allow; ncu's launch__shared_mem_config_size shows what it picked).");
    }

    // --- the impact curves ---------------------------------------------------------------------
    const W = 300, H = 200, M = { l: 38, r: 16, t: 10, b: 30 };

    function ticks(max, what) {
      if (what === "shared_memory") {
        const step = max > 160 * 1024 ? 64 * 1024 : 32 * 1024;
        const out = [];
        for (let v = 0; v <= max; v += step) out.push([v, v === 0 ? "0" : `${v / 1024}K`]);
        return out;
      }
      const step = what === "threads" ? 256 : 64;
      const out = [];
      for (let v = 0; v <= max; v += step) out.push([v, String(v)]);
      if (what === "registers") out.push([255, "255"]);
      return out.filter((t, i, a) => i === a.length - 1 || a[a.length - 1][0] - t[0] >= step / 2);
    }

    function drawCurve(f, r, { xs, results }) {
      const fig = el.querySelector(`.apo-curve[data-curve="${f.key}"]`);
      const svg = fig.querySelector("svg");
      const xmax = xs[xs.length - 1];
      const x = (v) => M.l + (v / xmax) * (W - M.l - M.r);
      const y = (p) => M.t + (1 - p / 105) * (H - M.t - M.b);
      const ys = results.map((q) => 100 * q.occupancy);
      let d = `M${x(xs[0]).toFixed(2)},${y(ys[0]).toFixed(2)}`;
      for (let i = 1; i < xs.length; i++) d += `H${x(xs[i]).toFixed(2)}V${y(ys[i]).toFixed(2)}`;
      const now = { threads: r.threadsPerBlock, registers: r.registersPerThread, shared_memory: r.sharedMemoryPerBlock }[f.key];
      const cx = x(now), cy = y(100 * r.occupancy);
      const grid = [0, 25, 50, 75, 100].map((p) =>
        `<line x1="${M.l}" x2="${W - M.r}" y1="${y(p)}" y2="${y(p)}" class="apo-grid"/>` +
        `<text x="${M.l - 5}" y="${y(p) + 4}" text-anchor="end">${p}%</text>`).join("");
      const xt = ticks(xmax, f.key).map(([v, label]) =>
        `<line x1="${x(v)}" x2="${x(v)}" y1="${H - M.b}" y2="${H - M.b + 4}" class="apo-axis"/>` +
        `<text x="${x(v)}" y="${H - M.b + 16}" text-anchor="middle">${label}</text>`).join("");
      svg.innerHTML = `${grid}${xt}
        <line x1="${M.l}" x2="${W - M.r}" y1="${H - M.b}" y2="${H - M.b}" class="apo-axis"/>
        <line x1="${cx}" x2="${cx}" y1="${M.t}" y2="${H - M.b}" stroke="${style.current}" stroke-dasharray="2 3"/>
        <path d="${d}" fill="none" stroke="${style.curve}" stroke-width="2" class="apo-line" data-points="${xs.length}"/>
        <path d="M${cx},${cy - 6}L${cx + 6},${cy}L${cx},${cy + 6}L${cx - 6},${cy}Z" fill="${style.current}" stroke="white" stroke-width="1" class="apo-now"/>
        <g class="apo-hover" visibility="hidden"><line y1="${M.t}" y2="${H - M.b}" stroke="${style.muted}"/><circle r="3.5" fill="${style.curve}"/></g>
        <rect x="${M.l}" y="${M.t}" width="${W - M.l - M.r}" height="${H - M.t - M.b}" fill="transparent" class="apo-hit"/>`;
      const readout = fig.querySelector(".apo-readout");
      const say = (v, q, prefix) => `${prefix}${f.key === "shared_memory" ? int(v) + " B" : v}: ${pct(q.occupancy)}, ` +
        `${plural(q.activeBlocks, "block")}, ${q.activeWarps} warps · ${limiterText(q)}`;
      const rest = say(now, r, "◆ now ");
      readout.textContent = rest;
      const hover = svg.querySelector(".apo-hover");
      const hit = svg.querySelector(".apo-hit");
      hit.onpointermove = (event) => {
        const box = svg.getBoundingClientRect();
        const v = ((event.clientX - box.left) * (W / box.width) - M.l) / (W - M.l - M.r) * xmax;
        let lo = 0, hi = xs.length - 1;
        while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (xs[mid] <= v) lo = mid; else hi = mid; }
        const i = Math.abs(xs[hi] - v) < Math.abs(v - xs[lo]) ? hi : lo;
        hover.setAttribute("visibility", "visible");
        hover.querySelector("line").setAttribute("x1", x(xs[i]));
        hover.querySelector("line").setAttribute("x2", x(xs[i]));
        hover.querySelector("circle").setAttribute("cx", x(xs[i]));
        hover.querySelector("circle").setAttribute("cy", y(ys[i]));
        readout.textContent = say(xs[i], results[i], "");
      };
      hit.onpointerleave = () => { hover.setAttribute("visibility", "hidden"); readout.textContent = rest; };
    }

    // --- the SM --------------------------------------------------------------------------------
    const rect = (x, y, w, h, kind, resource, color, block) =>
      `<rect x="${x}" y="${y}" width="${w}" height="${h}" data-kind="${kind}" data-resource="${resource}"` +
      (block === undefined ? "" : ` data-block="${block}"`) +
      (kind === "capacity" ? ` class="apo-capacity"` : ` fill="${color}" class="apo-fill"`) + ` vector-effect="non-scaling-stroke"/>`;

    function drawSm(r) {
      const s = r.gpu, blocks = r.activeBlocks, wpb = r.warpsPerBlock, subs = s.smSubpartitions;
      const color = (b) => style.blocks[b % style.blocks.length];
      const panels = {};
      // register file: one column per sub-partition, in allocation units; warps take turns
      const unit = s.registerAllocationUnit, units = s.registersPerSm / subs / unit;
      let svg = "";
      for (let i = 0; i < subs; i++) svg += rect(i * 1.1, 0, 1, units, "capacity", "registers");
      const h = r.registersPerWarp / unit;
      if (h) for (let w = 0; w < r.activeWarps; w++) {
        const level = Math.floor(w / subs);
        svg += rect((w % subs) * 1.1, units - (level + 1) * h, 1, h, "fill", "registers", color(Math.floor(w / wpb)), Math.floor(w / wpb));
      }
      panels.registers = { svg, box: `-0.1 0 ${subs * 1.1 + 0.1} ${units}`, caption:
        `${int(blocks * r.registersPerBlock)} of ${int(s.registersPerSm)} registers (${pct(r.utilization.registers)}) in ${subs} sub-partitions, ` +
        `one column each; ${int(r.registersPerWarp)} a warp (${r.registersPerThread} × ${s.warpSize}, in units of ${unit})` };
      // shared memory: what the SM is set up with for this kernel, blocks stacked, the driver's reserve lighter
      const total = r.sharedMemoryPerSm, per = r.sharedMemoryAllocatedPerBlock, reserve = s.reservedSharedMemoryPerBlock;
      svg = "";
      if (total) {
        svg += rect(0, 0, 1, total, "capacity", "shared_memory");
        for (let b = 0; b < blocks; b++) {
          svg += rect(0, total - (b + 1) * per, 1, per, "fill", "shared_memory", color(b), b);
          if (reserve) svg += `<rect x="0" y="${total - b * per - reserve}" width="1" height="${reserve}" data-kind="reserve" class="apo-reserve"/>`;
        }
      }
      panels.shared_memory = { svg, box: `-0.1 0 1.2 ${Math.max(total, 1)}`, caption:
        `${int(blocks * per)} of ${int(total)} B (${pct(r.utilization.shared_memory)}); ${int(per)} B a block` +
        (reserve ? ` (the driver's ${int(reserve)} B lighter)` : "") };
      // warp slots: one column per sub-partition (the scheduler that runs the warp)
      const rowsW = s.maxWarpsPerSm / subs;
      svg = "";
      for (let i = 0; i < subs; i++) for (let j = 0; j < rowsW; j++) svg += rect(i * 1.1, rowsW - j - 0.95, 1, 0.9, "capacity", "warps");
      for (let w = 0; w < r.activeWarps; w++) {
        svg += rect((w % subs) * 1.1, rowsW - Math.floor(w / subs) - 0.95, 1, 0.9, "fill", "warps", color(Math.floor(w / wpb)), Math.floor(w / wpb));
      }
      panels.warps = { svg, box: `-0.1 0 ${subs * 1.1 + 0.1} ${rowsW}`, caption:
        `${r.activeWarps} of ${s.maxWarpsPerSm} warps (${pct(r.utilization.warps)}); ${plural(wpb, "warp")} a block` };
      // block slots
      const cols = 4, rowsB = Math.ceil(s.maxBlocksPerSm / cols);
      svg = "";
      for (let i = 0; i < s.maxBlocksPerSm; i++) svg += rect((i % cols) * 1.1, rowsB - Math.floor(i / cols) - 0.95, 1, 0.9, "capacity", "blocks");
      for (let b = 0; b < blocks; b++) svg += rect((b % cols) * 1.1, rowsB - Math.floor(b / cols) - 0.95, 1, 0.9, "fill", "blocks", color(b), b);
      panels.blocks = { svg, box: `-0.1 0 ${cols * 1.1 + 0.1} ${rowsB}`, caption:
        `${blocks} of ${s.maxBlocksPerSm} block slots (${pct(r.utilization.blocks)})` };

      for (const k of data.limiters) {
        const fig = el.querySelector(`.apo-panel[data-resource="${k}"]`);
        const limiting = r.limiters.includes(k);
        fig.classList.toggle("apo-limiter", limiting);
        fig.querySelector("figcaption").textContent = data.labels.panels[k] + (limiting ? " ◀ the limiter" : "");
        const svgEl = fig.querySelector("svg");
        svgEl.setAttribute("viewBox", panels[k].box);
        svgEl.innerHTML = panels[k].svg;
        fig.querySelector(".apo-caption").textContent = panels[k].caption;
      }
    }

    // --- the page's address (in the book only) -------------------------------------------------
    function query(c) {
      const params = new URLSearchParams(location.search);
      const values = { gpu: c.gpu, threads: c.threads, registers: c.registers, smem: c.smem,
                       carveout: c.carveout === null ? "default" : c.carveout, limit: c.limit };
      for (const k of data.urlKeys) params.set(k, String(values[k]));
      return "?" + params.toString();
    }

    function writeUrl(c) {
      if (!bookMode) return;
      const q = query(c);
      const share = el.querySelector(".apo-share");
      share.hidden = false;
      share.querySelector("a").setAttribute("href", q);
      clearTimeout(urlTimer);
      urlTimer = setTimeout(() => {
        if (location.search !== q) history.replaceState(history.state, "", q + location.hash);
      }, 150);
    }

    // {config, problems}: the link's configuration, or null and what is wrong with it
    function readUrl(search) {
      const params = new URLSearchParams(search);
      if (!data.urlKeys.some((k) => params.has(k))) return { config: null, problems: [] };
      const c = { ...data.initial };
      const problems = [];
      const say = (key, message) => problems.push({ key, value: clip(params.get(key)), message });
      let s = calc.gpuSpec(c.gpu);
      if (params.has("gpu")) {
        try { s = calc.gpuSpec(params.get("gpu")); c.gpu = specKey(s); } catch (e) { say("gpu", e.message); }
      }
      for (const f of FIELDS) {
        if (!params.has(f.url)) continue;
        const value = parseField(params.get(f.url));
        const message = calc.fieldMessage(s, f.arg, value);
        if (message !== null) say(f.url, message);
        else c[f.url] = value + 0;
      }
      if (params.has("carveout")) {
        const raw = params.get("carveout");
        const value = raw === "default" ? null : parseField(raw);
        try { c.carveout = calc.detail(s, 1, 0, 0, { carveout: value }).carveout; } catch (e) { say("carveout", e.message); }
      }
      if (params.has("limit")) {
        const value = params.get("limit");
        try { calc.detail(s, 1, 0, 0, { sharedMemoryLimit: value }); c.limit = value; } catch (e) { say("limit", e.message); }
      }
      return problems.length ? { config: null, problems } : { config: c, problems };
    }

    function notice(problems) {
      const box = el.querySelector(".apo-notice");
      box.hidden = !problems.length;
      box.innerHTML = problems.length ? `<p>This link asks for a configuration the calculator refuses, so it shows the defaults:</p><ul>` +
        problems.map((p) => `<li><code>${esc(p.key)}=${esc(p.value)}</code>: ${esc(p.message)}</li>`).join("") + `</ul>` : "";
    }

    // --- events --------------------------------------------------------------------------------
    for (const f of FIELDS) {
      inputs[f.key].addEventListener("input", update);
      sliders[f.key].addEventListener("input", () => { inputs[f.key].value = sliders[f.key].value; update(); });
    }
    gpuSelect.addEventListener("change", () => {
      const s = spec();
      const carveout = carveoutValue();
      setGpuOptions(s);
      setCarveoutOptions(s, s.carveouts.some((c) => c.percent === carveout) ? carveout : null);
      update();
    });
    carveoutSelect.addEventListener("change", update);
    for (const r of limitRadios) r.addEventListener("change", update);
    el.querySelector(".apo-preset-list").addEventListener("click", (event) => {
      const button = event.target.closest(".apo-preset");
      if (!button) return;
      const p = data.presets.find((q) => q.id === button.dataset.preset);
      load({ gpu: p.gpu, threads: p.threads, registers: p.registers, smem: p.sharedMemory, carveout: null, limit: "opt-in" });
      update();
    });

    // --- start ---------------------------------------------------------------------------------
    const fromUrl = bookMode ? readUrl(location.search) : { config: null, problems: [] };
    notice(fromUrl.problems);
    load(fromUrl.config || data.initial);
    update();

    const instance = {
      root, calc, parseField, readUrl, query,
      // the state the page shows: the last valid configuration, its result and curves, and whether stale
      state: () => ({ stale: root.hasAttribute("data-apo-stale"), config: lastValid && lastValid.config,
                      result: lastValid && lastValid.result, series: lastValid && lastValid.series }),
      load: (config) => { load({ ...data.initial, ...config }); update(); },
    };
    ns.calculators.push(instance);
    return instance;
  }

  const script = document.currentScript;
  const own = script && script.closest("[data-apo-calculator]");
  const roots = own ? [own] : [...document.querySelectorAll("[data-apo-calculator]")];
  for (const root of roots) if (!root.hasAttribute("data-apo-mounted")) mount(root);
})(window);
