"""Guess first, then look, in the reader's browser: one question as one self-contained HTML output.

    from helpers import guess
    guess.stage_questions(prof, previous)          # which kernels, in order; faster than before?
    guess.number("roof-pct", "What share of the roof…, in %?", 41.3, tolerance=0.2, unit="%")
    guess.choice("roof-best", "Which stage comes closest to its roof?", STAGES, "sdpa_flash")
    guess.scorecard()                              # the reader's guesses, chapter by chapter

A question's output holds the question, an input (kernels in launch order, matched by kind; a
number, right within a stated tolerance; a choice), a *Look at the trace* button, a *Just reveal*
button, and its **answer key**: JSON computed here from the trace (at build time in replay, at run
time live). ``js/guess.js`` judges the reader's words against the key in the browser, so the
question works where the occupancy calculator does (the static book, JupyterLab, Colab) with no
kernel and no network, and keeps the reader's guesses in ``localStorage`` (never sent anywhere).

``judge(key, text)`` is the one judging function; ``js/guess.js`` is its port, held to it on a
sweep of inputs in Chromium (tests/test_guess_js.py). Bad input (nothing, an unknown kernel kind,
text where a number belongs, an answer that is not an option) gets a message, never a verdict.

Each mismatch links to what explains it: a kernel table row (``tables.kernel_table`` gives its
rows the ids ``kernel_row_id`` makes) or an output wrapped by ``anchored(obj, id)``.
"""
from __future__ import annotations

import html
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from ..core.names import KINDS
from ..core.profile import Profile
from .render import script_json as _script_json, short_name

HERE = Path(__file__).resolve().parent / "js"
SCRIPT = "guess.js"
STYLESHEET = "guess.css"
STORAGE_KEY = "attention-profiled.guesses.v1"

GUESSABLE = tuple(k for k in KINDS if k != "unknown")
# words a reader may use for a kind: the decoder's kinds are the vocabulary, these are synonyms
ALIASES = {"matmul": "gemm", "mm": "gemm", "bmm": "gemm", "linear": "gemm", "addmm": "gemm",
           "sdpa": "attention", "flash": "attention", "fmha": "attention",
           "masked fill": "masked_fill", "masked-fill": "masked_fill", "where": "masked_fill",
           "scale": "elementwise", "mul": "elementwise", "div": "elementwise", "add": "elementwise",
           "triton": "fused", "fusion": "fused", "memory copy": "memcpy", "sum": "reduce"}
# one token per kernel: commas, semicolons, new lines, arrows
SEPARATORS = r"[,;\n]+|->|→"
NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
# whitespace, spelled out: Python's str.strip() and JavaScript's trim() disagree on a few characters
WHITESPACE = " \t\n\r\f\v\u00a0"
# what a number may carry around it and still read as that number
UNIT_CHARACTERS = WHITESPACE + "×xX%µusμ"

MESSAGES = {
    "empty": "Type a guess first (or use Just reveal).",
    "empty_choice": "Pick one of the options first (or use Just reveal).",
    "unknown_kind": "Not a kernel kind: {unknown}. Use the kinds: {kinds}.",
    "not_a_number": "\"{text}\" is not a number. Type a number, such as 12 or 3.5.",
    "not_an_option": "\"{text}\" is not one of the options: {options}.",
}
VERDICTS = {"right": "Right.", "wrong": "Not quite.", "revealed": "Revealed without a guess."}


# ------------------------------------------------------------------------------------ judging

def trim(text: str, characters: str = WHITESPACE) -> str:
    """``text`` without ``characters`` at either end (str.strip with the set spelled out)."""
    start, end = 0, len(text)
    while start < end and text[start] in characters:
        start += 1
    while end > start and text[end - 1] in characters:
        end -= 1
    return text[start:end]


def normalise_kind(token: str) -> str:
    """A reader's word for a kind, as the decoder spells kinds: lower case, single spaces."""
    return re.sub("[" + WHITESPACE + "]+", " ", trim(token).lower())


def parse_kernels(text: str, aliases: dict[str, str]) -> list[tuple[str, str]]:
    """(as typed, the kind it names) per token; the kind is '' for a word that names none."""
    out = []
    for raw in re.split(SEPARATORS, text):
        word = trim(raw)
        if not word:
            continue
        norm = normalise_kind(word)
        kind = aliases.get(norm, norm.replace(" ", "_").replace("-", "_"))
        out.append((word, kind))
    return out


def parse_number(text: str) -> float | None:
    """The number in ``text`` (units and spaces around it allowed), or None."""
    body = trim(text, UNIT_CHARACTERS).replace(",", "")
    return float(body) if re.fullmatch(NUMBER, body) else None


def _align(guessed: list[str], trace: list[str]) -> list[tuple[int | None, int | None]]:
    """The longest common subsequence of two kind lists, walked in order: (guess index, trace
    index) pairs, None on the side that has no counterpart. Ties go to the guess being extra."""
    n, m = len(guessed), len(trace)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if guessed[i] == trace[j]
                           else max(table[i + 1][j], table[i][j + 1]))
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if guessed[i] == trace[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            pairs.append((i, None))
            i += 1
        else:
            pairs.append((None, j))
            j += 1
    pairs += [(k, None) for k in range(i, n)] + [(None, k) for k in range(j, m)]
    return pairs


def _invalid(message: str) -> dict:
    return {"valid": False, "message": message}


def judge(key: dict, text: str | None) -> dict:
    """The reader's ``text`` against the answer ``key``: ``{"valid": False, "message"}`` for
    input that cannot be judged, else ``{"valid": True, "verdict": "right"|"wrong", "items"}``,
    one item per thing compared: ``status`` (matched, missing, extra, differs), ``guess`` (the
    reader's own words), ``trace`` (what the trace says) and ``href`` (what explains it)."""
    messages = key["messages"]
    text = "" if text is None else str(text)
    kind = key["type"]
    if not trim(text):
        return _invalid(messages["empty_choice" if kind == "choice" else "empty"])
    if kind == "kernels":
        tokens = parse_kernels(text, key["aliases"])
        if not tokens:  # separators only
            return _invalid(messages["empty"])
        unknown = [word for word, k in tokens if k not in key["kinds"]]
        if unknown:
            return _invalid(messages["unknown_kind"].replace("{unknown}", ", ".join(f'"{w}"' for w in unknown))
                            .replace("{kinds}", ", ".join(key["kinds"])))
        trace = key["answer"]
        items = []
        for gi, ti in _align([k for _, k in tokens], [t["kind"] for t in trace]):
            if gi is not None and ti is not None:
                items.append({"status": "matched", "guess": tokens[gi][0], "trace": trace[ti]["label"],
                              "href": trace[ti]["href"]})
            elif gi is not None:
                items.append({"status": "extra", "guess": tokens[gi][0], "trace": "",
                              "href": key["explainedBy"]["href"]})
            else:
                items.append({"status": "missing", "guess": "", "trace": trace[ti]["label"],
                              "href": trace[ti]["href"]})
        right = all(item["status"] == "matched" for item in items)
        return {"valid": True, "verdict": "right" if right else "wrong", "items": items}
    if kind == "number":
        value = parse_number(text)
        if value is None or not math.isfinite(value):
            return _invalid(messages["not_a_number"].replace("{text}", trim(text)))
        answer, tolerance = key["answer"], key["tolerance"]
        right = abs(value - answer) <= tolerance * abs(answer) if tolerance else value == answer
        return {"valid": True, "verdict": "right" if right else "wrong",
                "items": [{"status": "matched" if right else "differs", "guess": trim(text),
                           "trace": key["answerText"], "href": key["explainedBy"]["href"]}]}
    if kind == "choice":
        given = trim(text)
        if given not in key["options"]:
            return _invalid(messages["not_an_option"].replace("{text}", given)
                            .replace("{options}", ", ".join(key["options"])))
        right = given == key["answer"]
        return {"valid": True, "verdict": "right" if right else "wrong",
                "items": [{"status": "matched" if right else "differs", "guess": given,
                           "trace": key["answerText"], "href": key["explainedBy"]["href"]}]}
    raise ValueError(f"unknown question type {kind!r}")


# ------------------------------------------------------------------------------------ the keys

def kernel_row_id(stage: str, position: int) -> str:
    """The id of a kernel table row: the ``position``-th GPU event (1-based) of ``stage``'s forward."""
    return f"{stage}-kernel-{position}"


def kernel_table_id(stage: str) -> str:
    return f"{stage}-kernels"


def _base(qid: str, kind: str, question: str, explained_by: tuple[str, str], source: str) -> dict:
    href, label = explained_by
    return {"version": 1, "id": qid, "type": kind, "question": question, "source": source,
            "explainedBy": {"href": href if href.startswith("#") else f"#{href}", "label": label},
            "messages": dict(MESSAGES), "verdicts": dict(VERDICTS), "storageKey": STORAGE_KEY}


def kernels_key(prof: Profile, qid: str | None = None, question: str | None = None,
                step: int | None = None) -> dict:
    """The answer key of "which GPU events, in launch order?": one item per GPU event of the
    forward, its kind from the kernel-name decoder, linked to its row of the kernel table."""
    events = prof.kernels(step)
    answer = [{"kind": str(e.kind),
               "label": f"{e.kind}: {short_name(str(e.name))}",
               "href": "#" + kernel_row_id(prof.stage, i)}
              for i, e in enumerate(events.itertuples(), start=1)]
    key = _base(qid or f"{prof.stage}-kernels",
                "kernels", question or "Which GPU events will one forward launch, in launch order?",
                ("#" + kernel_table_id(prof.stage), "the kernel table"), "the trace")
    key.update(kinds=list(GUESSABLE), aliases=dict(ALIASES), answer=answer,
               answerText=", ".join(a["kind"] for a in answer)
               + f" ({len(answer)} GPU event{'' if len(answer) == 1 else 's'})")
    return key


def number_key(qid: str, question: str, answer: float, tolerance: float = 0.0, unit: str = "",
               decimals: int | None = None, explained_by: tuple[str, str] = ("", ""),
               source: str = "the trace") -> dict:
    """A number judged right within ``tolerance`` of ``answer``, relatively (0: exactly)."""
    answer = float(answer)
    if decimals is None:
        decimals = 0 if answer.is_integer() else 1
    text = f"{answer:,.{decimals}f}"
    key = _base(qid, "number", question, explained_by, source)
    key.update(answer=answer, tolerance=float(tolerance), unit=unit,
               answerText=f"{text}{unit}",
               toleranceText=(f"right within ±{tolerance:.0%}" if tolerance else "right only if exact"))
    return key


def choice_key(qid: str, question: str, options: Sequence[str], answer: str,
               answer_text: str | None = None, explained_by: tuple[str, str] = ("", ""),
               source: str = "the trace") -> dict:
    options = [str(o) for o in options]
    if str(answer) not in options:
        raise ValueError(f"the answer {answer!r} is not one of the options {options}")
    key = _base(qid, "choice", question, explained_by, source)
    key.update(options=options, answer=str(answer), answerText=answer_text or str(answer))
    return key


def speed_key(prof: Profile, previous: Profile, qid: str | None = None,
              explained_by: tuple[str, str] = ("#gpu-and-cpu-time", "the GPU and CPU time chart")) -> dict:
    """Faster, slower or about the same on the GPU as the stage before, from the two traces' GPU
    time, in the book's one definition (`helpers.core.bound.speed_words`: within 10% is the same)."""
    from ..core.bound import SPEED_WORDS, speed_words
    now, before = prof.summary()["gpu_time_us"], previous.summary()["gpu_time_us"]
    answer = speed_words(now, before)
    return choice_key(qid or f"{prof.stage}-speed",
                      f"Will one forward of {prof.stage} be faster, slower or about the same on the GPU as "
                      f"{previous.stage}?",
                      list(SPEED_WORDS), answer,
                      f"{answer}: {now:,.1f} µs of GPU time against {before:,.1f} µs for {previous.stage}",
                      explained_by)


# ------------------------------------------------------------------------------------ HTML

@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return (HERE / name).read_text()



def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _input_html(key: dict, uid: str) -> str:
    if key["type"] == "kernels":
        kinds = ", ".join(f"<code>{k}</code>" for k in key["kinds"])
        return (f'<label class="apq-label" for="{uid}-input">GPU events in launch order, one kind each, '
                f'separated by commas</label>'
                f'<input type="text" class="apq-input" id="{uid}-input" autocomplete="off" spellcheck="false" '
                f'aria-describedby="{uid}-hint {uid}-message" placeholder="e.g. kind, kind, kind">'
                f'<p class="apq-hint" id="{uid}-hint">Kinds: {kinds}.</p>')
    if key["type"] == "number":
        unit = f" ({html.escape(key['unit'].strip())})" if key["unit"].strip() else ""
        return (f'<label class="apq-label" for="{uid}-input">Your number{unit}</label>'
                f'<input type="text" inputmode="decimal" class="apq-input apq-number" id="{uid}-input" '
                f'autocomplete="off" aria-describedby="{uid}-hint {uid}-message">'
                f'<p class="apq-hint" id="{uid}-hint">{html.escape(key["toleranceText"].capitalize())} '
                f'of what {html.escape(key["source"])} measure{"" if key["source"].endswith("s") else "s"}.</p>')
    radios = "".join(
        f'<label class="apq-option"><input type="radio" name="{uid}-choice" value="{html.escape(o)}"> '
        f'{html.escape(o)}</label>' for o in key["options"])
    return (f'<fieldset class="apq-options" aria-describedby="{uid}-message">'
            f'<legend class="apq-label">Your answer</legend>{radios}</fieldset>')


class Question:
    """One question as a notebook shows it: a single text/html output (see the module docstring)."""

    def __init__(self, key: dict):
        self.key = key

    def judge(self, text: str | None) -> dict:
        return judge(self.key, text)

    def to_html(self, assets: bool = True) -> str:
        """The output; ``assets=False`` leaves out the stylesheet and script (a group has them once)."""
        key = self.key
        uid = "apq-" + _slug(key["id"])
        return (
            f'<div class="apq" id="{uid}" data-apq="{html.escape(key["id"])}">'
            + (f"<style>{_asset(STYLESHEET)}</style>" if assets else "") +
            f'<script type="application/json" class="apq-data">{_script_json(key)}</script>'
            f'<form class="apq-form" aria-labelledby="{uid}-q" novalidate>'
            f'<p class="apq-question" id="{uid}-q"><b>Guess first:</b> {html.escape(key["question"])}</p>'
            f"{_input_html(key, uid)}"
            f'<div class="apq-buttons"><button type="button" class="apq-look">Look at the trace</button>'
            f'<button type="button" class="apq-reveal">Just reveal</button></div>'
            f'<p class="apq-message" id="{uid}-message" role="alert"></p></form>'
            f'<div class="apq-result" id="{uid}-result" aria-live="polite" tabindex="-1" hidden></div>'
            f'<p class="apq-fallback">This question is judged by its output\'s JavaScript, which has '
            f"not run here. In JupyterLab, run the cell again: the scripts of outputs saved in a "
            f"notebook stay inactive until it is trusted.</p>"
            + (f"<script>{_asset(SCRIPT)}</script>" if assets else "") + "</div>")

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.to_html(), "text/plain": f"Guess first: {self.key['question']}"}


class Questions:
    """Several questions as one output, one after the other."""

    def __init__(self, questions: Sequence[Question]):
        self.questions = list(questions)

    def to_html(self) -> str:
        return (f'<div class="apq-group" data-apq-group><style>{_asset(STYLESHEET)}</style>'
                + "".join(q.to_html(assets=False) for q in self.questions)
                + f"<script>{_asset(SCRIPT)}</script></div>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.to_html(),
                "text/plain": "\n".join(f"Guess first: {q.key['question']}" for q in self.questions)}


def kernels(prof: Profile, qid: str | None = None, question: str | None = None) -> Question:
    return Question(kernels_key(prof, qid, question))


def number(qid: str, question: str, answer: float, **kwargs: Any) -> Question:
    return Question(number_key(qid, question, answer, **kwargs))


def choice(qid: str, question: str, options: Sequence[str], answer: str, **kwargs: Any) -> Question:
    return Question(choice_key(qid, question, options, answer, **kwargs))


def stage_questions(prof: Profile, previous: Profile | None = None) -> Questions:
    """A stage chapter's guess: its GPU events in launch order, and (after the first stage)
    whether it is faster on the GPU than the stage before."""
    asked = [kernels(prof)]
    if previous is not None:
        asked.append(Question(speed_key(prof, previous)))
    return Questions(asked)


# ------------------------------------------------------------------------------------ anchors

class Anchored:
    """An output with an id to link to: its HTML inside ``<div id=...>``, other forms as they are."""

    def __init__(self, obj: Any, anchor: str):
        self.obj, self.anchor = obj, anchor.lstrip("#")

    def _repr_mimebundle_(self, include=None, exclude=None):
        from IPython.core.formatters import format_display_data
        # a plotly figure displays itself (_ipython_display_), so the formatter would return only
        # its text: ask the object for its bundle first
        data = None
        if hasattr(self.obj, "_repr_mimebundle_"):
            data = self.obj._repr_mimebundle_(include, exclude)
            data = data[0] if isinstance(data, tuple) else data
        if not data:
            data, _ = format_display_data(self.obj)
        if "text/html" in data:
            data = {**data, "text/html": f'<div id="{html.escape(self.anchor)}" class="apq-anchor">'
                                         f'{data["text/html"]}</div>'}
        # a plain form of its own (else IPython writes this object's address, different each run)
        data.setdefault("text/plain", f"{type(self.obj).__name__} (#{self.anchor})")
        return data


def anchored(obj: Any, anchor: str) -> Anchored:
    """``obj`` shown with the id ``anchor``, so that a question's reveal can link to it."""
    return Anchored(obj, anchor)


# ------------------------------------------------------------------------------------ scorecard

class Scorecard:
    """The reader's guesses kept in this browser, chapter by chapter, with a button to clear them."""

    def to_html(self) -> str:
        return (f'<div class="apq apq-scorecard" data-apq-scorecard>'
                f"<style>{_asset(STYLESHEET)}</style>"
                f'<script type="application/json" class="apq-data">'
                f'{_script_json({"storageKey": STORAGE_KEY, "verdicts": VERDICTS})}</script>'
                f'<div class="apq-score" aria-live="polite"></div>'
                f'<p class="apq-fallback">Your guesses are listed here by this output\'s JavaScript, '
                f"which has not run here.</p>"
                f"<script>{_asset(SCRIPT)}</script></div>")

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.to_html(),
                "text/plain": "Your guesses, kept in your browser (shown in the book and JupyterLab)"}


def scorecard() -> Scorecard:
    return Scorecard()
