"""What Hopper adds, in instruction families: the model, read from Nsight Compute's recordings.

A kernel's SASS opcodes fall into the families the Hopper chapter teaches:

    HMMA        warp-level matrix multiply (`mma.sync`), Ampere's tensor-core path
    HGMMA       warpgroup matrix multiply (`wgmma`), Hopper's: four warps issue one MMA together
    LDGSTS      `cp.async`: each thread copies global memory to shared memory (Ampere)
    UTMALDG     a TMA load: the tensor memory accelerator copies a whole tile (Hopper)
    UTMASTG     a TMA store
    USETMAXREG  `setmaxnreg`: a warpgroup gives registers back or takes more, at run time
    FFMA, FADD, FMUL   fp32 arithmetic on the CUDA cores
    MUFU.EX2    the special-function unit's 2^x (the softmax's exponent)

Two counts per family and kernel: executed (warp instructions, ncu's `sass__inst_executed_per_opcode`
and its with-modifier twin) and static (the instructions the binary holds, ncu's SASS listing).
Everything here is plain parsing of text a recording holds; nothing is fetched.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

import pandas as pd

from ..core.ncu_tables import _number, in_base_units

# the four warps a warpgroup holds, and a warp's threads
WARP = 32
WARPGROUP_WARPS = 4


@dataclass(frozen=True)
class Family:
    key: str          # the column and the SASS opcode it counts ("MUFU.EX2": opcode and modifier)
    words: str        # what it is, for a reader
    hopper: bool      # new with Hopper (sm_90)


FAMILIES = (
    Family("HMMA", "warp-level MMA (mma.sync)", False),
    Family("HGMMA", "warpgroup MMA (wgmma)", True),
    Family("LDGSTS", "cp.async: a thread's copy, global to shared", False),
    Family("UTMALDG", "TMA load: a tile, global to shared", True),
    Family("UTMASTG", "TMA store: a tile, shared to global", True),
    Family("USETMAXREG", "setmaxnreg: registers reallocated at run time", True),
    Family("FFMA", "fp32 fused multiply-add", False),
    Family("FADD", "fp32 add", False),
    Family("FMUL", "fp32 multiply", False),
    Family("MUFU.EX2", "the special-function unit's 2^x", False),
)
FAMILY_KEYS = tuple(f.key for f in FAMILIES)
BY_MODIFIER = ("MUFU.EX2",)   # counted from the with-modifier metric: the plain one says only MUFU

OPCODE_METRIC = "sass__inst_executed_per_opcode"
MODIFIER_METRIC = "sass__inst_executed_per_opcode_with_modifier_all"
PIPE_HMMA = "sm__inst_executed_pipe_tensor_op_hmma.sum"
PIPE_GMMA = "sm__inst_executed_pipe_tensor_op_gmma.sum"

_PREDICATE = re.compile(r"^@!?U?P[T0-9]+\s+")
# real listings (an H100's cuDNN fprop, 2026-12-07): 'USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8' (a
# modifier with an underscore, a uniform predicate first) and 'USETMAXREG.DEALLOC.CTAPOOL 0x28'
_SETMAXNREG = re.compile(r"USETMAXREG(?P<mods>(?:\.[A-Z_]+)*)\s+(?:U?[RP][TZ0-9]+,\s*)?(?P<n>0x[0-9a-fA-F]+|\d+)\b")
_INSTANCE = re.compile(r"([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*[:=]\s*([0-9][0-9,]*(?:\.[0-9]+)?)")


# --- one instruction, one opcode -------------------------------------------------------------

def mnemonic(instruction: str) -> str:
    """The opcode with its modifiers, as SASS spells it: '@P0 HGMMA.64x128x16.F32.BF16 gdesc[UR4], ...'
    -> 'HGMMA.64x128x16.F32.BF16'. An empty or unreadable line gives ''."""
    text = _PREDICATE.sub("", instruction.strip())
    return text.split(None, 1)[0].rstrip(";") if text else ""


def opcode(instruction_or_mnemonic: str) -> str:
    """The bare opcode: 'HGMMA.64x128x16.F32.BF16 ...' -> 'HGMMA'."""
    return mnemonic(instruction_or_mnemonic).split(".", 1)[0]


def family(name: str) -> str | None:
    """The family an opcode (bare or with modifiers) belongs to, or None: 'MUFU.EX2' -> 'MUFU.EX2',
    'MUFU.RCP' -> None, 'HGMMA.64x128x16.F32.BF16' -> 'HGMMA'."""
    m = mnemonic(name)
    bare = m.split(".", 1)[0]
    if bare == "MUFU":
        return "MUFU.EX2" if m.startswith("MUFU.EX2") else None
    return bare if bare in FAMILY_KEYS else None


def setmaxnreg(instructions) -> list[tuple[str, int]]:
    """Every `USETMAXREG` of a listing as (its modifiers, the register count it asks for), in order:
    ('.DEALLOC.CTAPOOL', 24) gives registers back, ('.TRYALLOC.CTAPOOL', 240) takes more."""
    out = []
    for line in instructions:
        m = _SETMAXNREG.search(str(line))
        if m:
            out.append((m.group("mods"), int(m.group("n"), 0)))
    return out


# --- counts per family ----------------------------------------------------------------------

def family_counts(per_opcode: dict[str, float], per_modifier: dict[str, float] | None = None) -> dict[str, float]:
    """Executed warp instructions per family, from the two instanced counters (opcode -> count):
    every family from the bare opcodes, MUFU.EX2 from the with-modifier one (absent: None)."""
    out: dict[str, float] = {k: 0 for k in FAMILY_KEYS}
    for name, value in per_opcode.items():
        f = family(name)
        if f is not None and f not in BY_MODIFIER:
            out[f] += value
    if per_modifier is None:
        for k in BY_MODIFIER:
            out[k] = None
    else:
        for name, value in per_modifier.items():
            f = family(name)
            if f in BY_MODIFIER:
                out[f] += value
    return out


def static_counts(instructions) -> dict[str, int]:
    """How many instructions of each family a listing holds (the binary, not the run)."""
    out = {k: 0 for k in FAMILY_KEYS}
    for line in instructions:
        f = family(str(line))
        if f is not None:
            out[f] += 1
    return out


_AGGREGATE = re.compile(r"^\s*(-?[0-9][0-9,]*(?:\.[0-9]+)?)\s+\(.*\)\s*$", re.S)
_ONE_INSTANCE = re.compile(r"^\s*\(\s*[^:()]+:\s*(.*)\)\s*$", re.S)


def aggregate_cells(raw: pd.DataFrame) -> pd.DataFrame:
    """ncu's raw page printed with `--print-metric-instances details` writes every metric as its
    aggregate followed by its instances: '168 (0: 168)', '92,848,870 (FMUL: 11,327,282; ...)', or
    only the instance where a metric has no aggregate ('(0: fmha_cutlassF_...)'). Every cell to its
    aggregate (a number where it is one), but the per-opcode columns, whose instances are read by
    `parse_instances`."""
    keep = {OPCODE_METRIC, MODIFIER_METRIC}

    def one(value):
        if not isinstance(value, str):
            return value
        m = _AGGREGATE.match(value)
        if m:
            return _number(m.group(1))
        m = _ONE_INSTANCE.match(value)
        return m.group(1).strip() if m else value

    out = raw.copy()
    # pandas deep-copies a frame's attrs (every column's unit) into each column read: set them
    # aside while the columns are read (a raw page has hundreds; 40 s of the test suite)
    attrs, out.attrs = dict(raw.attrs), {}
    for column in out.columns:
        if column not in keep and not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(one)
    out.attrs = attrs
    return out


def parse_instances(cell) -> dict[str, float]:
    """ncu's raw page cell of an instanced metric printed with `--print-metric-instances details`
    ('12345 (HGMMA: 600; UTMALDG: 10)' and the like): opcode -> value. A cell with no named
    instances (a plain aggregate) gives {}."""
    if cell is None or (isinstance(cell, float) and pd.isna(cell)):
        return {}
    out: dict[str, float] = {}
    for name, value in _INSTANCE.findall(str(cell)):
        number = float(value.replace(",", ""))
        out[name] = out.get(name, 0) + (int(number) if number.is_integer() else number)
    return out


# --- the recorder's files, parsed ---------------------------------------------------------------

def read_rows(text: str) -> list[dict]:
    """A CSV's text as dicts (the recorder's opcodes and SASS tables)."""
    return list(csv.DictReader(io.StringIO(text)))


def opcodes_by_kernel(rows: list[dict]) -> dict[int, dict[str, dict[str, float]]]:
    """The report interface's rows (kernel_id, kernel, metric, opcode, value) as
    kernel_id -> metric -> opcode -> value."""
    out: dict[int, dict[str, dict[str, float]]] = {}
    for r in rows:
        per = out.setdefault(int(r["kernel_id"]), {}).setdefault(r["metric"], {})
        per[r["opcode"]] = per.get(r["opcode"], 0) + float(r["value"])
    return out


def listing_by_kernel(rows: list[dict]) -> dict[int, list[str]]:
    """The recorder's SASS rows (kernel_seq, address, instruction) as kernel_seq -> instructions,
    marker rows (address '#') left out."""
    out: dict[int, list[str]] = {}
    for r in rows:
        if r["address"] != "#" and int(r["kernel_seq"]) >= 0:
            out.setdefault(int(r["kernel_seq"]), []).append(r["instruction"])
    return out


def listing_names(rows: list[dict]) -> dict[int, str]:
    """kernel_seq -> the kernel's name, from the "Kernel Name" marker rows ncu's source page prints
    before each kernel's listing (`"Kernel Name","<name>"`)."""
    out = {}
    for r in rows:
        if r["address"] == "#" and r["instruction"].lstrip('"').startswith("Kernel Name"):
            cells = next(csv.reader([r["instruction"]]), [])
            name = cells[1] if len(cells) > 1 else r["instruction"].split(":", 1)[-1]
            out[int(r["kernel_seq"])] = name.strip().strip('"')
    return out


def base_name(name: str) -> str:
    """A kernel's function name, as both of ncu's pages spell it: the raw page shortens namespaces and
    template arguments ('void native::elementwise_kernel<128, 4, ...>') where the SASS listing spells
    them out ('void at::native::elementwise_kernel<(int)128, (int)4, ...>'): 'elementwise_kernel'."""
    head = re.split(r"[<(]", re.sub(r"^void\s+", "", str(name).strip()), maxsplit=1)[0]
    return head.split("::")[-1]


def segments(kernels: list[str], named: dict[int, str], listing: dict[int, list[str]]) -> dict[int, int] | None:
    """Each kernel's place -> its listing's kernel_seq, where ncu's source page printed some kernels'
    listings twice in a row (an H100's unfused forwards and backwards, 2026-12-07: 53 listings for 30
    kernels, 91 for 55; each repeat identical to the one before): every kernel takes the next listing
    of its function name, and its identical repeat if it has one. Only where exactly one such reading
    uses every listing; else None."""
    seqs = sorted(named)
    n, m = len(kernels), len(seqs)
    if m < n or m > 2 * n:
        return None
    base = [base_name(k) for k in kernels]
    lbase = [base_name(named[q]) for q in seqs]

    def fits(a: int, b: int, k: int) -> bool:
        return b + k <= m and all(lbase[b + j] == base[a] for j in range(k)) and \
            all(listing.get(seqs[b + j]) == listing.get(seqs[b]) for j in range(k))

    # ways[a][b]: the readings of kernels a.. from listing b on (counted to see that one fits)
    ways = [[0] * (m + 2) for _ in range(n + 1)]
    ways[n][m] = 1
    for a in range(n - 1, -1, -1):
        for b in range(m - 1, -1, -1):
            ways[a][b] = sum(ways[a + 1][b + k] for k in (1, 2) if fits(a, b, k))
    if ways[0][0] != 1:
        return None
    out, b = {}, 0
    for a in range(n):
        out[a] = seqs[b]
        b += next(k for k in (1, 2) if fits(a, b, k) and ways[a + 1][b + k])
    return out


def align(kernels: list[str], named: dict[int, str], listing: dict[int, list[str]] | None = None) -> dict[int, int]:
    """Each kernel's place in the report -> its listing's kernel_seq: the same place where the
    listing's names agree with the raw page's (or name nothing), else the next listing of that name."""
    if named and listing:
        # one reading by function name (the pages spell names differently; repeats are one kernel's)
        found = segments(kernels, named, listing)
        if found is not None:
            return found
    if not named or all(named.get(i, k) == k for i, k in enumerate(kernels)) or not set(named.values()) & set(kernels):
        # in order, or named otherwise (mangled, say): the report's order
        return {i: i for i in range(len(kernels))}
    out, used = {}, set()
    for i, name in enumerate(kernels):
        seq = next((q for q in sorted(named) if q not in used and named[q] == name), None)
        if seq is not None:
            out[i] = seq
            used.add(seq)
    return out


# --- the launch, and what a warp-specialised kernel does with it ------------------------------------

def launch_shape(threads: int) -> dict:
    """A block's warps and whole warpgroups: 384 threads -> 12 warps, 3 warpgroups."""
    warps = int(threads) // WARP
    return {"threads": int(threads), "warps": warps,
            "warpgroups": warps // WARPGROUP_WARPS if warps % WARPGROUP_WARPS == 0 else None}


def register_split(launch_registers: int, requests: list[tuple[str, int]]) -> dict | None:
    """What `setmaxnreg` does to a launch's registers per thread: the count the producer gives back
    to (the smallest DEALLOC) and the count the consumers take (the largest INC/ALLOC), or None
    where the kernel holds no USETMAXREG."""
    if not requests:
        return None
    down = [n for mods, n in requests if "DEALLOC" in mods or "DEC" in mods]
    up = [n for mods, n in requests if not ("DEALLOC" in mods or "DEC" in mods)]
    return {"launch": int(launch_registers), "producer": min(down) if down else None,
            "consumer": max(up) if up else None}


def path_of(warpgroup_mmas, warp_mmas) -> str:
    """The one definition of a kernel's tensor-core path, from the warpgroup (HGMMA) and warp-level
    (HMMA) MMA instructions it ran: 'wgmma' (any warpgroup one), else 'mma.sync' (any warp-level
    one), else 'none'. helpers.core.quantities.mma_family reads the tensor pipe's counters with it."""
    if (warpgroup_mmas or 0) > 0:
        return "wgmma"
    if (warp_mmas or 0) > 0:
        return "mma.sync"
    return "none"


def tensor_path(row) -> str:
    """A kernel's tensor-core path (`path_of`) from its executed HGMMA and HMMA instructions."""
    return path_of(row.get("HGMMA"), row.get("HMMA"))


def load_path(row) -> str:
    """The one definition of how a kernel brings tiles to shared memory, from its executed
    instructions: 'TMA' (any UTMALDG), else 'cp.async' (any LDGSTS), else 'plain loads'."""
    if (row.get("UTMALDG") or 0) > 0:
        return "TMA"
    if (row.get("LDGSTS") or 0) > 0:
        return "cp.async"
    return "plain loads"


def warp_specialised(row) -> bool:
    """Whether a kernel reallocates registers between its warpgroups at run time (executed USETMAXREG)."""
    return (row.get("USETMAXREG") or 0) > 0


def warp_mma_of_pipes(hmma_pipe, gmma_pipe, hmma_ops) -> float | None:
    """Warp-level MMA instructions from the tensor pipe's counters, where no per-opcode count was
    recorded: on Hopper ncu's hmma pipe counter counts the warpgroup (gmma) instructions too
    (cuDNN's kernel reads the same on both) and is not zero in kernels that do no matrix work at
    all (ATen's masked_fill, the softmax); so the difference counts only where the pipe did
    warp-level MMA operations (`sm__ops_path_tensor_op_hmma_src_*`), else 0."""
    if hmma_pipe is None or pd.isna(hmma_pipe):
        return None
    if not hmma_ops:
        return 0.0
    return float(hmma_pipe) - float(gmma_pipe or 0)


def main_kernels(table: pd.DataFrame) -> pd.DataFrame:
    """Each (direction, stage)'s main kernel: the one that executed the most tensor-core
    instructions (HGMMA + HMMA), else, in a stage with none, the most FFMA, else the longest by
    ncu's time: the kernel that does the stage's matrix multiplies."""
    if table.empty:
        return table
    t = table.copy()
    zero = pd.Series(0.0, index=t.index)
    tensor = (t["HGMMA"].fillna(0) if "HGMMA" in t else zero) + (t["HMMA"].fillna(0) if "HMMA" in t else zero)
    ffma = t["FFMA"].fillna(0) if "FFMA" in t else zero
    picked = []
    for _, rows in t.groupby(["direction", "stage"], sort=False):
        for score in (tensor[rows.index], ffma[rows.index], rows["time_us"]):
            if score.max() > 0:
                picked.append(score.idxmax())
                break
        else:
            picked.append(rows.index[0])
    return t.loc[picked].reset_index(drop=True)


# --- one recorded part (an ncu process), as a table ---------------------------------------------

MARKER_KERNEL = "spin_kernel"   # torch.cuda._sleep's kernel: the backward part's separator between stages


def jobs_of(raw: pd.DataFrame, ranges: pd.DataFrame | None, stages: list[str] | None) -> list[str | None]:
    """The job (stage) of each row of a part's raw table: forward parts name it by NVTX range (the
    `ranges` export, row for row: '<stage>__<shape>' or '<range>/<kernel>'); the backward part by
    the marker kernel launched before each stage's backward (`stages`, in order). Markers: None."""
    if ranges is not None:
        labels = dict(zip(ranges["ID"], ranges["Kernel Name"]))
        return [str(labels.get(i, "")).split("/", 1)[0].split("__", 1)[0] or None for i in raw["ID"]]
    out, k = [], -1
    for name in raw["Kernel Name"]:
        if MARKER_KERNEL in str(name):
            k += 1
            out.append(None)
        else:
            out.append(stages[k] if stages and 0 <= k < len(stages) else None)
    return out


def part_table(part: str, raw: pd.DataFrame, launch: pd.DataFrame, jobs: list[str | None],
               opcodes: dict[int, dict[str, dict[str, float]]] | None,
               listing: dict[int, list[str]] | None, names: dict[int, str] | None = None) -> pd.DataFrame:
    """One row per kernel of a part (markers and kernels of no stage dropped): the stage, the
    kernel, its launch, `setmaxnreg`'s register counts, and per family the executed warp
    instructions (from `opcodes`, the report interface's, else the raw page's instance cells)
    and the static count (from the SASS `listing`, by the kernel's place in the report)."""
    rows = []
    seq_of = align([str(n) for n in raw["Kernel Name"]], names or {}, listing)
    direction = "backward" if part.startswith("backward") else "forward"
    raw = in_base_units(raw)   # ncu prints counts in its own units (Kinst, Minst)
    for i, (job, (_, r), (_, k)) in enumerate(zip(jobs, raw.iterrows(), launch.iterrows())):
        if job is None:
            continue
        per = (opcodes or {}).get(i)
        if not per or not per.get(OPCODE_METRIC):
            # the report interface gave this kernel no opcode rows (an H100's elementwise kernels,
            # 2026-12-07): its raw page's instance cells hold them
            per = {m: parse_instances(r.get(m)) for m in (OPCODE_METRIC, MODIFIER_METRIC) if m in raw.columns}
        executed = family_counts(per.get(OPCODE_METRIC, {}), per.get(MODIFIER_METRIC)) if per.get(OPCODE_METRIC) else \
            {f: None for f in FAMILY_KEYS}
        lines = (listing or {}).get(seq_of.get(i, -1))
        static = static_counts(lines) if lines else {f: None for f in FAMILY_KEYS}
        split = register_split(k["registers"], setmaxnreg(lines or []))
        shape = launch_shape(k["threads"])
        total = r.get("smsp__inst_executed.sum")
        rows.append({
            "part": part, "direction": direction, "stage": job, "kernel_id": i, "kernel": str(r["Kernel Name"]),
            **shape, "registers": int(k["registers"]), "time_us": float(k["time_us"]),
            "setmaxnreg": " / ".join(str(n) for _, n in setmaxnreg(lines or [])) or None,
            "producer_registers": split["producer"] if split else None,
            "consumer_registers": split["consumer"] if split else None,
            "executed": float(total) if isinstance(total, (int, float)) else
            (float(sum(per.get(OPCODE_METRIC, {}).values())) if per.get(OPCODE_METRIC) else None),
            **executed, **{f"static {f}": v for f, v in static.items()},
            "pipe hmma": _num(k.get(PIPE_HMMA)), "pipe gmma": _num(k.get(PIPE_GMMA)),
        })
    return pd.DataFrame(rows)


def _num(value):
    return float(value) if isinstance(value, (int, float)) and not pd.isna(value) else None
