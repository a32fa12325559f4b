/* Guess first, then look, in the reader's browser (helpers/views/guess.py writes the output).
 *
 * judge(key, text) is a port of helpers.views.guess.judge, line for line: the answer key and every
 * message come from Python; tests/test_guess_js.py holds the two to the same verdict on a sweep of
 * inputs. The rest wires one question (or the scorecard) to its output, and keeps the reader's
 * guesses in localStorage (never sent anywhere; where storage is refused, as in some sandboxed
 * frames, the question works and simply forgets).
 *
 * For tests: window.attentionProfiled.guess = {judge, parseNumber, parseKernels, load, clear}.
 */
(function (global) {
  "use strict";
  const ns = (global.attentionProfiled = global.attentionProfiled || {});
  if (!ns.guess) ns.guess = makeApi();
  const api = ns.guess;

  function makeApi() {
    const WHITESPACE = " \t\n\r\f\v\u00a0";
    const SEPARATORS = /[,;\n]+|->|→/;
    const CODE_QUOTES = "`'\"";
    const CODE_PREFIX = /^[\s\S]*(?:::|\.)/;
    const CODE_SUFFIX = /(?:\(\))?_*$/;
    const NUMBER = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
    // a number and the unit after it (the units themselves come with each key, from Python)
    const NUMBER_AND_UNIT = new RegExp("^(.*?)([^0-9.,+\\-" + WHITESPACE + "][^0-9]*)?$", "s");

    function trim(text, characters) {
      characters = characters === undefined ? WHITESPACE : characters;
      let start = 0, end = text.length;
      while (start < end && characters.includes(text[start])) start += 1;
      while (end > start && characters.includes(text[end - 1])) end -= 1;
      return text.slice(start, end);
    }
    function fill(template, name, value) { return template.split("{" + name + "}").join(value); }
    function normaliseKind(token) {
      return trim(token).toLowerCase().replace(new RegExp("[" + WHITESPACE + "]+", "g"), " ");
    }
    function has(table, name) { return Object.prototype.hasOwnProperty.call(table, name); }
    function kernelWord(token) {
      const norm = trim(normaliseKind(token), WHITESPACE + CODE_QUOTES);
      return trim(norm.replace(CODE_PREFIX, "").replace(CODE_SUFFIX, ""), WHITESPACE + CODE_QUOTES);
    }
    function parseKernels(text, aliases) {
      const out = [];
      for (const raw of text.split(SEPARATORS)) {
        const word = trim(raw);
        if (!word) continue;
        const norm = kernelWord(word);
        const kind = has(aliases, norm) ? aliases[norm] : norm.split(" ").join("_").split("-").join("_");
        out.push([word, kind]);
      }
      return out;
    }
    function unhedge(text, hedges) {
      let hedged = true;
      text = trim(text);
      while (hedged) {
        hedged = false;
        for (const hedge of hedges) {
          const head = text.slice(0, hedge.length), rest = text.slice(hedge.length);
          if (head.toLowerCase() === hedge && !(/[A-Za-z]/.test(hedge[hedge.length - 1]) && /^[A-Za-z]/.test(rest))) {
            text = trim(rest);
            hedged = true;
            break;
          }
        }
      }
      return text;
    }
    function parseNumberAndUnit(text) {
      const m = NUMBER_AND_UNIT.exec(trim(text));
      const body = trim(m[1]).split(",").join(""), unit = normaliseKind(m[2] || "");
      return NUMBER.test(body) ? [Number(body), unit] : null;
    }
    function parseNumber(text, units) {
      units = units === undefined ? { "": 1 } : units;
      const found = parseNumberAndUnit(text);
      if (found === null) return null;
      return has(units, found[1]) ? found[0] * units[found[1]] : null;
    }
    function align(guessed, trace) {
      const n = guessed.length, m = trace.length;
      const table = [];
      for (let i = 0; i <= n; i++) table.push(new Array(m + 1).fill(0));
      for (let i = n - 1; i >= 0; i--) {
        for (let j = m - 1; j >= 0; j--) {
          table[i][j] = trace[j].includes(guessed[i]) ? table[i + 1][j + 1] + 1
            : Math.max(table[i + 1][j], table[i][j + 1]);
        }
      }
      const pairs = [];
      let i = 0, j = 0;
      while (i < n && j < m) {
        if (trace[j].includes(guessed[i])) { pairs.push([i, j]); i++; j++; }
        else if (table[i + 1][j] >= table[i][j + 1]) { pairs.push([i, null]); i++; }
        else { pairs.push([null, j]); j++; }
      }
      for (let k = i; k < n; k++) pairs.push([k, null]);
      for (let k = j; k < m; k++) pairs.push([null, k]);
      return pairs;
    }
    const invalid = (message) => ({ valid: false, message });

    function judge(key, text) {
      const messages = key.messages;
      text = text === null || text === undefined ? "" : String(text);
      const kind = key.type;
      if (!trim(text)) return invalid(messages[kind === "choice" ? "empty_choice" : "empty"]);
      if (kind === "kernels") {
        const tokens = parseKernels(text, key.aliases);
        if (!tokens.length) return invalid(messages.empty);  // separators only
        const unknown = tokens.filter(([, k]) => !key.words.includes(k)).map(([w]) => w);
        if (unknown.length) {
          return invalid(fill(fill(messages.unknown_kind, "unknown", unknown.map((w) => '"' + w + '"').join(", ")),
                              "kinds", key.words.join(", ")));
        }
        const trace = key.answer;
        const pairs = align(tokens.map(([, k]) => k), trace.map((t) => t.words));
        // the words left over on each side (see guess.py: misplaced / moved / surplus / extra)
        const looseGuess = pairs.filter(([, ti]) => ti === null).map(([gi]) => tokens[gi][1]);
        const looseTrace = pairs.filter(([gi]) => gi === null).map(([, ti]) => trace[ti].words);
        const items = [];
        for (const [gi, ti] of pairs) {
          if (gi !== null && ti !== null) {
            items.push({ status: "matched", guess: tokens[gi][0], trace: trace[ti].label, href: trace[ti].href });
          } else if (gi !== null) {
            const word = tokens[gi][1];
            const status = looseTrace.some((w) => w.includes(word)) ? "misplaced"
              : trace.some((t) => t.words.includes(word)) ? "surplus" : "extra";
            items.push({ status, guess: tokens[gi][0], trace: "", href: key.explainedBy.href });
          } else {
            const moved = looseGuess.some((w) => trace[ti].words.includes(w));
            items.push({ status: moved ? "moved" : "missing", guess: "", trace: trace[ti].label, href: trace[ti].href });
          }
        }
        const right = items.every((item) => item.status === "matched");
        return { valid: true, verdict: right ? "right" : "wrong", items };
      }
      if (kind === "number") {
        const found = parseNumberAndUnit(unhedge(text, key.hedges || []));
        if (found === null || !Number.isFinite(found[0])) return invalid(fill(messages.not_a_number, "text", trim(text)));
        if (!has(key.units, found[1])) {
          const unit = trim(key.unit);
          return invalid(fill(fill(messages[unit ? "wrong_unit" : "not_a_number"], "text", trim(text)), "unit", unit));
        }
        const value = found[0] * key.units[found[1]];
        const answer = key.answer, tolerance = key.tolerance;
        const right = tolerance ? Math.abs(value - answer) <= tolerance * Math.abs(answer) : value === answer;
        return { valid: true, verdict: right ? "right" : "wrong",
                 items: [{ status: right ? "matched" : "differs", guess: trim(text), trace: key.answerText,
                           href: key.explainedBy.href }] };
      }
      if (kind === "choice") {
        const given = trim(text);
        if (!key.options.includes(given)) {
          return invalid(fill(fill(messages.not_an_option, "text", given), "options", key.options.join(", ")));
        }
        const right = key.accepted.includes(given);
        return { valid: true, verdict: right ? "right" : "wrong",
                 items: [{ status: right ? "matched" : "differs", guess: given, trace: key.answerText,
                           href: key.explainedBy.href }] };
      }
      throw new Error("unknown question type " + kind);
    }

    // --- the reader's guesses, in this browser only -------------------------------------------
    function load(storageKey) {
      try { return JSON.parse(global.localStorage.getItem(storageKey) || "{}") || {}; }
      catch (e) { return {}; }  // no storage here (a sandboxed frame), or something unreadable
    }
    function save(storageKey, id, entry) {
      try {
        const all = load(storageKey);
        all[id] = entry;
        global.localStorage.setItem(storageKey, JSON.stringify(all));
        return true;
      } catch (e) { return false; }
    }
    function clear(storageKey) {
      try { global.localStorage.removeItem(storageKey); return true; } catch (e) { return false; }
    }
    return { judge, parseNumber, parseNumberAndUnit, parseKernels, unhedge, trim, load, save, clear, mounted: [] };
  }

  // --- one question -----------------------------------------------------------------------------
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "text") node.textContent = v; else node.setAttribute(k, v);
    }
    for (const child of children || []) node.append(child);
    return node;
  }

  function chapterTitle() {
    const h1 = document.querySelector("main h1, article h1, h1");
    return h1 ? h1.textContent.replace(/[#¶]\s*$/, "").trim() : document.title;
  }
  function link(href, label) {
    // a link that moves to the row or chart, and opens any fold it sits in
    const a = el("a", { href, class: "apq-why", text: label });
    a.addEventListener("click", (event) => {
      const target = document.getElementById(href.slice(1));
      if (!target) return;
      event.preventDefault();
      for (let p = target; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
      target.classList.add("apq-target");
      target.scrollIntoView({ block: "center" });
      if (!target.hasAttribute("tabindex")) target.setAttribute("tabindex", "-1");
      target.focus({ preventScroll: true });
      setTimeout(() => target.classList.remove("apq-target"), 2500);
    });
    return a;
  }

  function renderResult(container, key, result, guessText) {
    container.replaceChildren();
    const verdict = result ? result.verdict : "revealed";
    const head = el("p", { class: "apq-verdict apq-" + verdict });
    head.append(el("b", { text: key.verdicts[verdict] + " " }));
    // "from the counters: 37.2 times": the answer is read or computed from its source, which "says"
    // nothing (and "the counters says" reads wrong)
    if (result) head.append("You said " + JSON.stringify(api.trim(guessText)) + "; from " + key.source + ": ");
    else head.append("From " + key.source + ": ");
    head.append(el("span", { class: "apq-answer", text: key.answerText }));
    container.append(head);
    const items = result ? result.items
      : key.type === "kernels" ? key.answer.map((t) => ({ status: "revealed", guess: "", trace: t.label, href: t.href }))
      : [{ status: "revealed", guess: "", trace: key.answerText, href: key.explainedBy.href }];
    const table = el("table", { class: "apq-items" });
    table.append(el("thead", {}, [el("tr", {}, [el("th", { scope: "col", text: "you said" }),
      el("th", { scope: "col", text: key.source }), el("th", { scope: "col", text: "" })])]));
    const body = el("tbody");
    for (const item of items) {
      const why = item.status === "matched" || !item.href || item.href === "#" ? ""
        : link(item.href, ["extra", "misplaced", "surplus"].includes(item.status) ? "see " + key.explainedBy.label
          : item.status === "revealed" && key.type === "kernels" ? "its row" : "see why");
      const status = el("span", { class: "apq-status", text: key.statuses[item.status] });
      body.append(el("tr", { class: "apq-" + item.status }, [
        el("td", { "data-label": "you said", class: "apq-guess", text: item.guess || "—" }),
        el("td", { "data-label": key.source, class: "apq-trace", text: item.trace || "—" }),
        el("td", { "data-label": "" }, [status, why ? " " : "", why])]));
    }
    table.append(body);
    container.append(table);
    if (key.explainedBy && key.explainedBy.href && key.explainedBy.href !== "#" && key.type !== "kernels") {
      const p = el("p", { class: "apq-hint" });
      p.append("Explained by ", link(key.explainedBy.href, key.explainedBy.label), ".");
      container.append(p);
    }
    container.hidden = false;
  }

  function mountQuestion(root) {
    root.setAttribute("data-apq-mounted", "");
    const key = JSON.parse(root.querySelector(".apq-data").textContent);
    const form = root.querySelector(".apq-form");
    const message = root.querySelector(".apq-message");
    const result = root.querySelector(".apq-result");
    const input = root.querySelector(".apq-input");
    const read = () => {
      if (input) return input.value;
      const picked = root.querySelector("input[type=radio]:checked");
      return picked ? picked.value : "";
    };
    const write = (value) => {
      if (input) input.value = value;
      else for (const r of root.querySelectorAll("input[type=radio]")) r.checked = r.value === value;
    };
    const remember = (guessText, outcome) => api.save(key.storageKey, key.id, {
      chapter: chapterTitle(), page: location.pathname.split("/").pop(), question: key.question,
      guess: guessText, verdict: outcome, answer: key.answerText, at: new Date().toISOString() });

    function look(event) {
      if (event) event.preventDefault();
      const text = read();
      const outcome = api.judge(key, text);
      if (!outcome.valid) {
        message.textContent = outcome.message;
        if (input) input.setAttribute("aria-invalid", "true");
        result.hidden = true;
        return null;
      }
      message.textContent = "";
      if (input) input.removeAttribute("aria-invalid");
      renderResult(result, key, outcome, text);
      remember(api.trim(text), outcome.verdict);
      root.setAttribute("data-apq-verdict", outcome.verdict);
      return outcome;
    }
    function reveal() {
      message.textContent = "";
      renderResult(result, key, null, "");
      root.setAttribute("data-apq-verdict", "revealed");
      const kept = api.load(key.storageKey)[key.id];
      if (!kept || kept.verdict === "revealed") remember("", "revealed");
      result.focus();
    }
    // no form submission (a sandboxed frame without allow-forms never fires it): the button, and
    // Enter in the field or on an option, look
    const lookAndFocus = (event) => { if (look(event)) result.focus(); };
    form.addEventListener("submit", (event) => event.preventDefault());
    root.querySelector(".apq-look").addEventListener("click", lookAndFocus);
    form.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && event.target.tagName === "INPUT") lookAndFocus(event);
    });
    root.querySelector(".apq-reveal").addEventListener("click", reveal);
    if (input) input.addEventListener("input", () => { message.textContent = ""; input.removeAttribute("aria-invalid"); });

    // a return visit: the guess kept in this browser, judged again against this key
    const kept = api.load(key.storageKey)[key.id];
    if (kept && kept.guess) {
      write(kept.guess);
      const outcome = look(null);
      if (outcome) {
        const note = el("p", { class: "apq-hint apq-kept", text: "Your guess from an earlier visit, kept in this browser." });
        result.prepend(note);
      }
    }
    api.mounted.push({ root, key, look, reveal });
  }

  // --- the scorecard ----------------------------------------------------------------------------
  function mountScorecard(root) {
    root.setAttribute("data-apq-mounted", "");
    const data = JSON.parse(root.querySelector(".apq-data").textContent);
    const box = root.querySelector(".apq-score");
    function draw() {
      box.replaceChildren();
      const all = api.load(data.storageKey);
      const ids = Object.keys(all);
      if (!ids.length) {
        box.append(el("p", { class: "apq-empty", text: "No guesses kept in this browser yet. Each chapter's " +
          "questions keep your guesses here (in this browser only, never sent anywhere)." }));
        return;
      }
      const chapters = new Map();
      for (const id of ids) {
        const g = all[id];
        if (!chapters.has(g.chapter)) chapters.set(g.chapter, []);
        chapters.get(g.chapter).push(g);
      }
      const right = ids.filter((id) => all[id].verdict === "right").length;
      const guessed = ids.filter((id) => all[id].verdict !== "revealed").length;
      box.append(el("p", { class: "apq-total", text: right + " right of " + guessed + " guessed" +
        (ids.length > guessed ? ", " + (ids.length - guessed) + " revealed without a guess" : "") + "." }));
      const table = el("table", { class: "apq-items apq-score-table" });
      table.append(el("thead", {}, [el("tr", {}, ["chapter", "question", "you said", "the trace", "verdict"]
        .map((h) => el("th", { scope: "col", text: h })))]));
      const body = el("tbody");
      for (const [chapter, rows] of chapters) {
        rows.forEach((g, i) => {
          const cells = [];
          if (i === 0) cells.push(el("th", { scope: "rowgroup", rowspan: String(rows.length), "data-label": "chapter", text: chapter }));
          cells.push(el("td", { "data-label": "question", text: g.question }),
                     el("td", { "data-label": "you said", class: "apq-guess", text: g.guess || "—" }),
                     el("td", { "data-label": "the trace", text: g.answer }),
                     el("td", { "data-label": "verdict", class: "apq-" + g.verdict, text: data.verdicts[g.verdict] }));
          body.append(el("tr", {}, cells));
        });
      }
      table.append(body);
      box.append(table);
    }
    const clearButton = el("button", { type: "button", class: "apq-clear", text: "Clear my guesses" });
    clearButton.addEventListener("click", () => { api.clear(data.storageKey); draw(); });
    root.append(clearButton);
    draw();
    api.scorecard = { root, draw };
  }

  const script = document.currentScript;
  const own = script && script.closest("[data-apq], [data-apq-scorecard], [data-apq-group]");
  const roots = !own ? [...document.querySelectorAll("[data-apq], [data-apq-scorecard]")]
    : own.hasAttribute("data-apq-group") ? [...own.querySelectorAll("[data-apq]")] : [own];
  for (const root of roots) {
    if (root.hasAttribute("data-apq-mounted")) continue;
    if (root.hasAttribute("data-apq-scorecard")) mountScorecard(root); else mountQuestion(root);
  }
})(window);
