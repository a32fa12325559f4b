"""What tests/test_calculator_js.py and tests/test_browser.py share to hold the browser calculator
(helpers/occupancy/js/) to helpers.occupancy: the sweep, run in a page in both languages, and a
page that serves the calculator's output with nothing else reachable.

The sweep is built here from each GPU's own limits and run in the same order on both sides; the
page returns one packed code per configuration (active warps, active blocks, limiters) or the
index of the message it threw, so a million configurations cross the wire as integers.
"""
from __future__ import annotations

import itertools
import re

from helpers.occupancy.browser import carveout_percentages
from helpers.occupancy.calculator import LIMITERS, occupancy
from helpers.occupancy.gpus import ARCHITECTURES, PRODUCTS, gpu_spec

GPUS = [f"{a}.{b}" for a, b in ARCHITECTURES] + list(PRODUCTS)
LIMITS = ["opt-in", "default"]
# the field text a reader types, read as the page reads it: a number when it reads as one
NUMBER = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")
MAX_FIELD = 32


def as_typed(text: str):
    """The value the calculator is handed for a field's text (the same rule as calculator.js):
    a decimal number when the text reads as one, else the text itself; a text longer than
    MAX_FIELD characters is never a number, and is shortened."""
    if len(text) > MAX_FIELD:
        return text[:MAX_FIELD] + "…"
    return float(text) if NUMBER.match(text) else text


def _edges(limit: int, inside: list[int]) -> list[int]:
    """Values up to a limit: the ones given, the limit, one over it, and a negative one."""
    return sorted({v for v in inside if 0 <= v <= limit} | {limit, limit + 1, -1})


def axes(gpu: str) -> list[dict]:
    """Two crosses for one GPU: every block size x every register count (with a few shared
    memory sizes and carveouts), and every shared-memory edge x every carveout x both limits
    (with a few block sizes and register counts). Each includes the limit and one over it."""
    spec = gpu_spec(gpu)
    threads = _edges(spec.max_threads_per_block,
                     [0, 1, 31, 32, 33, 64, 96, 128, 160, 192, 256, 384, 512, 640, 768, 992,
                      spec.max_threads_per_block - 1])
    registers = _edges(spec.max_registers_per_thread,
                       [0, 1, 16, 24, 31, 32, 33, 40, 48, 56, 64, 72, 80, 96, 128, 129, 168, 200,
                        232, spec.max_registers_per_thread - 1])
    reserve, unit = spec.reserved_shared_memory_per_block, spec.shared_memory_allocation_unit
    # the sizes where an allocation crosses a unit, the 48 KiB default cap and each carveout
    marks = [unit, spec.shared_memory_per_block_default + reserve,
             *spec.shared_memory_carveouts, spec.shared_memory_per_sm // 2]
    smem = _edges(spec.shared_memory_per_block_optin,
                  [0, 1, 2] + [m - reserve + d for m in marks for d in (-1, 0, 1)])
    percents = [c["percent"] for c in carveout_percentages(spec)]
    carveouts = [None] + sorted(set(percents) | {0, 1, 50, 99, 100, 101, -1})
    few_smem = [0, spec.shared_memory_per_block_default - reserve,
                spec.shared_memory_per_block_default + 1, spec.shared_memory_per_block_optin]
    return [
        {"threads": threads, "registers": registers, "smem": few_smem,
         "carveouts": [None, 0, 100], "limits": LIMITS},
        {"threads": [1, 32, 128, 256, 384, spec.max_threads_per_block],
         "registers": [0, 32, 128, spec.max_registers_per_thread], "smem": smem,
         "carveouts": carveouts, "limits": LIMITS},
    ]


def cases(gpus=GPUS) -> list[tuple[str, list[dict]]]:
    return [(g, axes(g)) for g in gpus]


def configurations(sweep):
    for gpu, parts in sweep:
        for part in parts:
            for t, r, s, c, m in itertools.product(part["threads"], part["registers"], part["smem"],
                                                   part["carveouts"], part["limits"]):
                yield gpu, t, r, s, c, m


def pack(active_warps: int, active_blocks: int, limiters) -> int:
    mask = sum(1 << LIMITERS.index(k) for k in limiters)
    return (active_warps * 64 + active_blocks) * 16 + mask


def python_codes(sweep) -> tuple[list[int], list[str]]:
    codes, messages, index = [], [], {}
    for gpu, t, r, s, c, m in configurations(sweep):
        try:
            res = occupancy(gpu, t, r, s, carveout=c, shared_memory_limit=m)
            codes.append(pack(res.active_warps, res.active_blocks, res.limiters))
        except ValueError as err:
            k = index.setdefault(str(err), len(messages))
            if k == len(messages):
                messages.append(str(err))
            codes.append(-(k + 1))
    return codes, messages


# the same loops in the page, through the page's fixed API
SWEEP_JS = """(sweep) => {
  const api = window.attentionProfiled.occupancy;
  const bit = {warps: 1, registers: 2, shared_memory: 4, blocks: 8};
  const codes = [], messages = [], index = new Map();
  for (const [gpu, parts] of sweep) for (const p of parts)
    for (const t of p.threads) for (const r of p.registers) for (const s of p.smem)
      for (const c of p.carveouts) for (const m of p.limits) {
        try {
          const res = api(gpu, t, r, s, {carveout: c, sharedMemoryLimit: m});
          let mask = 0;
          for (const l of res.limiters) mask |= bit[l];
          codes.push((res.activeWarps * 64 + res.activeBlocks) * 16 + mask);
        } catch (err) {
          if (!(err instanceof Error)) throw err;
          let k = index.get(err.message);
          if (k === undefined) { k = messages.length; messages.push(err.message); index.set(err.message, k); }
          codes.push(-(k + 1));
        }
      }
  return {codes: codes.join(","), messages};
}"""


def run_sweep(page, sweep) -> dict:
    """Run the sweep in the page and in Python; the configurations whose answers differ."""
    got = page.evaluate(SWEEP_JS, [[g, parts] for g, parts in sweep])
    got["codes"] = [int(c) for c in got["codes"].split(",")]
    want_codes, want_messages = python_codes(sweep)
    assert len(got["codes"]) == len(want_codes)

    def answer(code, messages):
        return messages[-code - 1] if code < 0 else code

    mismatches = []
    for config, a, b in zip(configurations(sweep), got["codes"], want_codes):
        if answer(a, got["messages"]) != answer(b, want_messages):
            mismatches.append((config, answer(a, got["messages"]), answer(b, want_messages)))
    return {"configurations": len(want_codes), "rejected": sum(c < 0 for c in want_codes),
            "mismatches": mismatches}


def random_configs(n: int, seed: int = 1) -> list[tuple]:
    """Valid and invalid configurations drawn at random over every GPU."""
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        gpu = rng.choice(GPUS)
        spec = gpu_spec(gpu)
        out.append((gpu, rng.randint(-2, spec.max_threads_per_block + 2),
                    rng.randint(-2, spec.max_registers_per_thread + 2),
                    rng.randint(-2, spec.shared_memory_per_block_optin + 2),
                    rng.choice([None, rng.randint(-1, 101)]), rng.choice(LIMITS)))
    return out


def python_answer(gpu, t, r, s, c, m) -> dict:
    try:
        res = occupancy(gpu, t, r, s, carveout=c, shared_memory_limit=m)
    except ValueError as err:
        return {"error": str(err)}
    return {"activeBlocks": res.active_blocks, "activeWarps": res.active_warps,
            "occupancy": res.occupancy, "limiters": [k for k in LIMITERS if k in res.limiters]}


ANSWERS_JS = """(configs) => configs.map(([g, t, r, s, c, m]) => {
  try { return window.attentionProfiled.occupancy(g, t, r, s, {carveout: c, sharedMemoryLimit: m}); }
  catch (err) { return {error: err instanceof Error ? err.message : 'not an Error: ' + String(err)}; }
})"""


def page_answers(page, configs) -> list[dict]:
    return page.evaluate(ANSWERS_JS, [list(c) for c in configs])
