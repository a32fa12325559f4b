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

from ..core.measured_on import where
from ..core.names import KINDS
from ..core.profile import Profile
from .render import script_json as _script_json, short_name

HERE = Path(__file__).resolve().parent / "js"
SCRIPT = "guess.js"
STYLESHEET = "guess.css"
STORAGE_KEY = "attention-profiled.guesses.v1"

GUESSABLE = tuple(k for k in KINDS if k != "unknown")

# The book's words for GPU work: ONE table, handed to the browser's judge in every key (js/guess.js
# has no word of its own). Each entry: a word the judge knows, then the other spellings a reader
# may type for it. The decoder's kinds come first; then the libraries and families the book names
# a kernel by ("the fused kernel", "FlashAttention-2's forward", "a cuBLAS gemm", "Triton").
WORDS: dict[str, tuple[str, ...]] = {
    "gemm": ("matmul", "mm", "bmm", "linear", "addmm", "matrix multiply", "gemms", "matmuls"),
    "attention": ("sdpa", "fmha", "attention forward", "attention kernel", "scaled_dot_product_attention",
                  "scaled dot product attention"),
    "softmax": (),
    "masked_fill": ("masked fill", "masked-fill", "where"),
    "elementwise": ("element-wise", "element wise", "scale", "mul", "div", "add"),
    "copy": (), "fill": (), "reduce": ("sum",), "mask": ("triu", "tril"),
    "fused": ("fusion", "fused kernel"),
    "memcpy": ("memory copy",), "memset": (),
    # libraries and families, as the book names them
    "triton": ("inductor", "triton kernel"),
    "flex": ("flexattention", "flex attention", "flex-attention", "flex_attention"),
    "flash": ("flashattention", "flash attention", "flash-attention", "flashattention-2",
              "flashattention2", "flash-attention-2", "fa2"),
    "cutlass": (),
    "xformers": ("mem efficient", "mem-efficient", "memory efficient", "memory-efficient", "efficient"),
    "cudnn": (),
    "cublas": ("cublaslt",),
    "nvjet": (),
    "aten": (),
}
LIBRARY_WORDS = {"cuBLAS (nvjet)": ("cublas", "nvjet"), "cuBLAS": ("cublas",), "CUTLASS": ("cutlass",),
                 "CUTLASS (xformers mem-efficient)": ("cutlass", "xformers"),
                 "FlashAttention-2": ("flash",), "cuDNN": ("cudnn",), "ATen": ("aten",), "Triton": ("triton",)}
# the book calls these kinds "fused": Inductor's fused kernel, and every attention kernel (flash,
# cuDNN, the memory-efficient one, Flex's template: "the three fused backends each launch one kernel")
FUSED_KINDS = ("fused", "attention")
# a spelling -> the word it names (the words themselves included)
ALIASES = {alias: word for word, aliases in WORDS.items() for alias in aliases}


def kernel_words(kind: str, library: str | None = None, op: str | None = None, name: str = "") -> list[str]:
    """The words of WORDS that name one kernel: its kind, its library's, its op's where the op is
    a word ("where" masks in the math backend, "flex_attention"), "fused" for the kinds the book
    calls fused, "flash" for a flash kernel by another library (cuDNN's ``flash_fprop``)."""
    words = [kind, *LIBRARY_WORDS.get(str(library), ())]
    op = str(op or "").lower()
    words.append(ALIASES.get(op, op))
    if kind in FUSED_KINDS:
        words.append("fused")
    if kind == "attention" and "flash" in str(name).lower():
        words.append("flash")
    if kind == "memcpy":  # the book calls a memcpy "a copy" (01: "the copy the trace shows")
        words.append("copy")
    return list(dict.fromkeys(w for w in words if w in WORDS))


# one token per kernel: commas, semicolons, new lines, arrows
SEPARATORS = r"[,;\n]+|->|→"
# what a reader wraps a kernel's name in, as code ("`masked_fill_`", "aten::softmax", "torch.matmul()"):
# quotes and backticks around it, a namespace before it (up to the last :: or .), a call's () and
# the in-place _ after it. [\s\S]: any character in Python's re and JavaScript's RegExp alike
CODE_QUOTES = "`'\""
CODE_PREFIX = r"^[\s\S]*(?:::|\.)"
CODE_SUFFIX = r"(?:\(\))?_*$"
# ASCII digits only: Python's \d also reads other scripts' digits, JavaScript's does not
NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
# whitespace, spelled out: Python's str.strip() and JavaScript's trim() disagree on a few characters
WHITESPACE = " \t\n\r\f\v\u00a0"
# a number and the unit after it: the unit is what follows the last digit, if it starts with none
# of the number's own characters
NUMBER_AND_UNIT = r"^(.*?)([^0-9.,+\-" + WHITESPACE + r"][^0-9]*)?$"

# The units a number field accepts, by what they measure: each spelling and its size in the
# dimension's base unit. A key's unit (" GiB", " µs", " warps") picks its dimension; the key then
# carries every spelling of that dimension with its factor to the key's unit (both µ: U+00B5 and
# U+03BC). ONE table, handed to the browser's judge in every number key.
UNITS: dict[str, dict[str, float]] = {
    "time": {"ns": 1e-3, "µs": 1.0, "μs": 1.0, "us": 1.0, "microseconds": 1.0, "microsecond": 1.0,
             "ms": 1e3, "milliseconds": 1e3, "millisecond": 1e3, "s": 1e6, "seconds": 1e6, "second": 1e6},
    "bytes": {"b": 1.0, "byte": 1.0, "bytes": 1.0, "kib": 2.0 ** 10, "mib": 2.0 ** 20, "gib": 2.0 ** 30,
              "tib": 2.0 ** 40, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12},
    "percent": {"%": 1.0, "percent": 1.0, "pct": 1.0},
    "times": {"×": 1.0, "x": 1.0, "times": 1.0},
    "warps": {"warps": 1.0, "warp": 1.0},
    "kernels": {"kernels": 1.0, "kernel": 1.0},
    "events": {"events": 1.0, "event": 1.0, "gpu events": 1.0, "gpu event": 1.0},
    "stages": {"stages": 1.0, "stage": 1.0},
    "registers": {"registers": 1.0, "register": 1.0, "regs": 1.0},
    "blocks": {"blocks": 1.0, "block": 1.0},
}

# words a reader puts before an estimate ("about 40", "~40"): the number after them is the guess.
# ONE table, handed to the browser's judge in every number key; a word hedge must end the word
# ("around40" reads, "aboutness" does not)
HEDGES = ("approximately", "approx.", "approx", "roughly", "around", "about", "circa", "ca.", "nearly",
          "almost", "maybe", "perhaps", "close to", "≈", "~=", "~")

MESSAGES = {
    "empty": "Type a guess first (or use Just reveal).",
    "empty_choice": "Pick one of the options first (or use Just reveal).",
    "unknown_kind": "Not a kernel kind: {unknown}. Use the kinds: {kinds}.",
    "not_a_number": "\"{text}\" is not a number. Type a number, such as 12 or 3.5.",
    "wrong_unit": "\"{text}\" is not in {unit}. Type a number in {unit}, such as 12 or 3.5.",
    "not_an_option": "\"{text}\" is not one of the options: {options}.",
}
VERDICTS = {"right": "Right.", "wrong": "Not quite.", "revealed": "Revealed without a guess."}
# what the reveal writes beside each item, by its status
# of a kernel list: a guessed word that names nothing the trace launches is "extra"; one that
# names a kernel the alignment left at another place is "misplaced" (that kernel: "moved"); one
# more of a kind than the trace launches is "surplus"
STATUSES = {"matched": "matches", "missing": "missing from your guess", "extra": "not in the trace",
            "misplaced": "in the trace, at another place", "moved": "in your guess, at another place",
            "surplus": "one more than the trace launches", "differs": "differs", "revealed": ""}


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


def kernel_word(token: str) -> str:
    """A reader's token as a word of the table's spelling: lower case, single spaces, with no code
    around it ("`aten::masked_fill_()`" -> "masked_fill")."""
    norm = trim(normalise_kind(token), WHITESPACE + CODE_QUOTES)
    return trim(re.sub(CODE_SUFFIX, "", re.sub(CODE_PREFIX, "", norm)), WHITESPACE + CODE_QUOTES)


def parse_kernels(text: str, aliases: dict[str, str]) -> list[tuple[str, str]]:
    """(as typed, the word it names) per token; a word the table lacks stays as typed (snake_case)."""
    out = []
    for raw in re.split(SEPARATORS, text):
        word = trim(raw)
        if not word:
            continue
        norm = kernel_word(word)
        kind = aliases.get(norm, norm.replace(" ", "_").replace("-", "_"))
        out.append((word, kind))
    return out


def parse_number(text: str, units: dict[str, float] | None = None) -> float | None:
    """The number in ``text`` in the key's unit (its ``units``: a spelling -> its factor), or
    None where there is no number or its unit is not one of ``units`` (a bare number always reads)."""
    units = {"": 1.0} if units is None else units
    found = parse_number_and_unit(text)
    if found is None:
        return None
    value, unit = found
    return value * units[unit] if unit in units else None


def unhedge(text: str, hedges: Sequence[str] = HEDGES) -> str:
    """``text`` trimmed, without the hedges before its number ("about ~40" -> "40")."""
    text, hedged = trim(text), True
    while hedged:
        hedged = False
        for hedge in hedges:
            head, rest = text[:len(hedge)], text[len(hedge):]
            if head.lower() == hedge and not (hedge[-1].isalpha() and re.match("[A-Za-z]", rest)):
                text, hedged = trim(rest), True
                break
    return text


def parse_number_and_unit(text: str) -> tuple[float, str] | None:
    """(the number, its unit in lower case with single spaces; '' for none), or None."""
    m = re.match(NUMBER_AND_UNIT, trim(text), re.S)
    body, unit = trim(m.group(1)).replace(",", ""), normalise_kind(m.group(2) or "")
    return (float(body), unit) if re.fullmatch(NUMBER, body) else None


def _align(guessed: list[str], trace: list[list[str]]) -> list[tuple[int | None, int | None]]:
    """The longest common subsequence of the guessed words and the trace's items (an item matches
    a word it answers to), walked in order: (guess index, trace index) pairs, None on the side
    that has no counterpart. Ties go to the guess being extra."""
    n, m = len(guessed), len(trace)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if guessed[i] in trace[j]
                           else max(table[i + 1][j], table[i][j + 1]))
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if guessed[i] in trace[j]:
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


def _judge_kernels(key: dict, text: str) -> dict:
    messages = key["messages"]
    tokens = parse_kernels(text, key["aliases"])
    if not tokens:  # separators only
        return _invalid(messages["empty"])
    unknown = [word for word, k in tokens if k not in key["words"]]
    if unknown:
        return _invalid(messages["unknown_kind"].replace("{unknown}", ", ".join(f'"{w}"' for w in unknown))
                        .replace("{kinds}", ", ".join(key["words"])))
    trace = key["answer"]
    pairs = _align([k for _, k in tokens], [t["words"] for t in trace])
    # the words left over on each side: a guessed word with a left-over kernel it names was put at
    # another place (ties of the alignment leave either one); else it is one too many, or foreign
    loose_guess = [tokens[gi][1] for gi, ti in pairs if ti is None]
    loose_trace = [trace[ti]["words"] for gi, ti in pairs if gi is None]
    items = []
    for gi, ti in pairs:
        if gi is not None and ti is not None:
            items.append({"status": "matched", "guess": tokens[gi][0], "trace": trace[ti]["label"],
                          "href": trace[ti]["href"]})
        elif gi is not None:
            word = tokens[gi][1]
            status = ("misplaced" if any(word in w for w in loose_trace)
                      else "surplus" if any(word in t["words"] for t in trace) else "extra")
            items.append({"status": status, "guess": tokens[gi][0], "trace": "",
                          "href": key["explainedBy"]["href"]})
        else:
            moved = any(w in trace[ti]["words"] for w in loose_guess)
            items.append({"status": "moved" if moved else "missing", "guess": "", "trace": trace[ti]["label"],
                          "href": trace[ti]["href"]})
    right = all(item["status"] == "matched" for item in items)
    return {"valid": True, "verdict": "right" if right else "wrong", "items": items}


def judge(key: dict, text: str | None) -> dict:
    """The reader's ``text`` against the answer ``key``: ``{"valid": False, "message"}`` for
    input that cannot be judged, else ``{"valid": True, "verdict": "right"|"wrong", "items"}``,
    one item per thing compared: ``status`` (matched, missing, extra, misplaced, moved, surplus,
    differs: STATUSES), ``guess`` (the
    reader's own words), ``trace`` (what the trace says) and ``href`` (what explains it)."""
    messages = key["messages"]
    text = "" if text is None else str(text)
    kind = key["type"]
    if not trim(text):
        return _invalid(messages["empty_choice" if kind == "choice" else "empty"])
    if kind == "kernels":
        return _judge_kernels(key, text)
    if kind == "number":
        found = parse_number_and_unit(unhedge(text, key.get("hedges", ())))
        if found is None or not math.isfinite(found[0]):
            return _invalid(messages["not_a_number"].replace("{text}", trim(text)))
        if found[1] not in key["units"]:
            unit = trim(key["unit"])
            return _invalid(messages["wrong_unit" if unit else "not_a_number"].replace("{text}", trim(text))
                            .replace("{unit}", unit))
        value = found[0] * key["units"][found[1]]
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
        right = given in key["accepted"]
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
            "messages": dict(MESSAGES), "verdicts": dict(VERDICTS), "statuses": dict(STATUSES),
            "storageKey": STORAGE_KEY}


def kernels_key(prof: Profile, qid: str | None = None, question: str | None = None,
                step: int | None = None) -> dict:
    """The answer key of "which GPU events, in launch order?": one item per GPU event of the
    forward, its kind from the kernel-name decoder, linked to its row of the kernel table."""
    events = prof.kernels(step)
    answer = [{"kind": str(e.kind),
               "words": kernel_words(str(e.kind), getattr(e, "library", None), getattr(e, "op", None), str(e.name)),
               "label": f"{e.kind}: {short_name(str(e.name))}",
               "href": "#" + kernel_row_id(prof.stage, i)}
              for i, e in enumerate(events.itertuples(), start=1)]
    key = _base(qid or f"{prof.stage}-kernels",
                "kernels", question or "Which GPU events will one forward launch, in launch order?",
                ("#" + kernel_table_id(prof.stage), "the kernel table"), "the trace")
    key.update(kinds=list(GUESSABLE), words=list(WORDS), aliases=dict(ALIASES), answer=answer,
               answerText=", ".join(a["kind"] for a in answer)
               + f" ({len(answer)} GPU event{'' if len(answer) == 1 else 's'})")
    return key


def units_of(unit: str) -> dict[str, float]:
    """The spellings a number field in ``unit`` accepts, each with its factor to ``unit``: every
    unit of the dimension UNITS puts ``unit`` in, and a bare number (no unit: the key's own)."""
    own = normalise_kind(unit)
    out = {"": 1.0}
    for spellings in UNITS.values():
        if own in spellings:
            out.update({u: f / spellings[own] for u, f in spellings.items()})
            break
    else:
        if own:
            out[own] = 1.0
    return out


def number_key(qid: str, question: str, answer: float, tolerance: float = 0.0, unit: str = "",
               decimals: int | None = None, explained_by: tuple[str, str] = ("", ""),
               source: str = "the trace") -> dict:
    """A number judged right within ``tolerance`` of ``answer``, relatively (0: exactly), typed
    bare or with any unit of ``unit``'s dimension (UNITS: "4096 MiB" for a key in " GiB")."""
    answer = float(answer)
    if decimals is None:
        decimals = 0 if answer.is_integer() else 1
    text = f"{answer:,.{decimals}f}"
    key = _base(qid, "number", question, explained_by, source)
    key.update(answer=answer, tolerance=float(tolerance), unit=unit, units=units_of(unit), hedges=list(HEDGES),
               answerText=f"{text}{unit}",
               toleranceText=(f"right within ±{tolerance:.0%}" if tolerance else "right only if exact"))
    return key


def choice_key(qid: str, question: str, options: Sequence[str], answer: str,
               answer_text: str | None = None, explained_by: tuple[str, str] = ("", ""),
               source: str = "the trace", accepted: Sequence[str] | None = None) -> dict:
    """One of ``options``: ``answer`` is right, and so is every option in ``accepted`` (a tie the
    page names: every stage that ran out of memory at the same seq)."""
    options = [str(o) for o in options]
    accepted = list(dict.fromkeys([str(answer), *(str(a) for a in accepted or ())]))
    for a in accepted:
        if a not in options:
            raise ValueError(f"the answer {a!r} is not one of the options {options}")
    key = _base(qid, "choice", question, explained_by, source)
    key.update(options=options, answer=str(answer), accepted=accepted, answerText=answer_text or str(answer))
    return key


def speed_key(prof: Profile, previous: Profile, qid: str | None = None,
              explained_by: tuple[str, str] = ("#gpu-and-cpu-time", "the GPU and CPU time chart")) -> dict:
    """Faster, slower or about the same on the GPU as the stage before, from the two traces' GPU
    time, in the book's one definition (`helpers.core.bound.speed_words`: within 10% is the same).
    Where the two were measured on different GPUs (live, one this GPU cannot run is another GPU's
    recording) the question and its answer say so, with measured_on's mark: the gap is partly the
    GPUs' own, and the reader is told before guessing."""
    from ..core.bound import SPEED_WORDS, speed_words
    from ..core.measured_on import marks
    now, before = prof.summary()["gpu_time_us"], previous.summary()["gpu_time_us"]
    answer = speed_words(now, before)
    pair = {prof.stage: prof, previous.stage: previous}
    marked = marks(pair)
    question = (f"Will one forward of {prof.stage} be faster, slower or about the same on the GPU as "
                f"{previous.stage}?")
    text = f"{answer}: {now:,.1f} µs of GPU time against {before:,.1f} µs for {previous.stage}"
    if marked:
        # live, one of the two is another GPU's recording: say it in the question and the answer
        (name, mark), = marked.items()
        other = prof if name == previous.stage else previous
        two = (f"Two GPUs: {name} is {mark}, {other.stage} {where(other)}; the gap is partly the GPUs' "
               f"own, not only the stages'.")
        question += f" ({two})"
        text += f". {two}"
    return choice_key(qid or f"{prof.stage}-speed", question, list(SPEED_WORDS), answer, text, explained_by)


# ------------------------------------------------------------------------------------ HTML

@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return (HERE / name).read_text()



def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _input_html(key: dict, uid: str) -> str:
    if key["type"] == "kernels":
        kinds = ", ".join(f"<code>{k}</code>" for k in key["kinds"])
        others = ", ".join(f"<code>{w}</code>" for w in key["words"] if w not in key["kinds"])
        return (f'<label class="apq-label" for="{uid}-input">GPU events in launch order, one kind each, '
                f'separated by commas</label>'
                f'<input type="text" class="apq-input" id="{uid}-input" autocomplete="off" spellcheck="false" '
                f'aria-describedby="{uid}-hint {uid}-message" placeholder="e.g. kind, kind, kind">'
                f'<p class="apq-hint" id="{uid}-hint">Kinds: {kinds}. Or the library or family: {others}.</p>')
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
