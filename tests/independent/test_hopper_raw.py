"""Chapter 7b's figures, recomputed from the Hopper recording's raw files in plain code: ncu's raw
page (every opcode instance spelled out by `--print-metric-instances details`), the report
interface's opcode table, the SASS listing, the NVTX-renamed export and the backward's marker
kernels. Nothing on the expected side imports `helpers`; the helper's table is what is checked.

The book's definitions, in words:
* a kernel's stage: its NVTX range (forward parts: the `.ranges` export names each row by it) or,
  in the backward part, the stage whose marker kernel (`spin_kernel`) came last before it;
* a family's executed count: the sum of the opcode instances whose opcode is the family's
  (`MUFU.EX2`: the with-modifier instances starting with it);
* a family's static count: the SASS lines whose opcode (after any `@P` predicate) is the family's;
* setmaxnreg: each `USETMAXREG` line's register count; the consumer's is the largest that is no
  DEALLOC, the producer's the smallest DEALLOC;
* the tensor path: wgmma with any HGMMA executed, else mma.sync with any HMMA, else none; the loads:
  TMA with any UTMALDG, else cp.async with any LDGSTS, else plain loads;
* a stage's main kernel: the most HGMMA + HMMA, else the most FFMA, else the longest.

Runs on every replay set with a hopper/ folder, and on a FAKE one made in the recorder's format
(tests/hopper_fakes.py) so that it runs before and whatever the recordings hold.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
import hopper_fakes  # noqa: E402  (plain code: it imports no helpers either)

FAMILIES = ("HMMA", "HGMMA", "LDGSTS", "UTMALDG", "UTMASTG", "USETMAXREG", "FFMA", "FADD", "FMUL")
TRACES = ROOT / "notebooks" / "traces"
REAL = sorted(p.parent.parent.name for p in TRACES.glob("*/hopper/provenance.json") if "synthetic" not in str(p))


def rows(path: Path) -> list[list[str]]:
    csv.field_size_limit(2**31 - 1)   # a details page's per-PC cells pass csv's default 128 KiB
    with gzip.open(path, "rt") as f:
        return list(csv.reader(io.StringIO(f.read())))


def scalar(cell: str) -> float:
    """A raw cell's number: printed with `--print-metric-instances details`, ncu writes the
    aggregate and then its instances, '1,234 (0: 1,234)'."""
    return float(cell.split(" (", 1)[0].replace(",", ""))


def raw_table(path: Path) -> tuple[list[str], list[str], list[list[str]]]:
    r = rows(path)
    start = next(i for i, x in enumerate(r) if x and x[0] == "ID")
    return r[start], r[start + 1], [x for x in r[start + 2:] if len(x) == len(r[start])]


def instances(cell: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in re.findall(r"([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*[:=]\s*([0-9][0-9,]*(?:\.[0-9]+)?)", cell):
        out[name] = out.get(name, 0) + float(value.replace(",", ""))
    return out


def opcode_of(line: str) -> str:
    text = re.sub(r"^@!?U?P[T0-9]+\s+", "", line.strip())
    return text.split()[0] if text else ""


def function(name: str) -> str:
    """'void at::native::elementwise_kernel<(int)128, ...>(...)' -> 'elementwise_kernel'."""
    name = name.strip()
    name = name[5:] if name.startswith("void ") else name
    cut = min([i for i in (name.find("<"), name.find("(")) if i >= 0], default=len(name))
    return name[:cut].rsplit("::", 1)[-1]


def by_kernel(kernels: list[str], listed_as: dict[int, str], listing: dict[int, list[str]]) -> dict[int, list[str]]:
    """The raw page's kernel i -> its SASS lines. ncu's source page may print a kernel's listing twice
    in a row (the repeat identical): find the one way of giving each kernel, in order, one listing of
    its function's name or two identical ones that uses every listing. Without names, or with as many
    listings as kernels, the report's order."""
    seqs = sorted(listing)
    if len(seqs) == len(kernels) or not listed_as:
        return {i: listing[q] for i, q in enumerate(seqs)}
    found = []

    def walk(i, j, taken):
        if len(found) > 1:
            return
        if i == len(kernels):
            if j == len(seqs):
                found.append(list(taken))
            return
        for k in (1, 2):
            group = seqs[j:j + k]
            if len(group) == k and all(function(listed_as[q]) == function(kernels[i]) and listing[q] == listing[group[0]]
                                       for q in group):
                walk(i + 1, j + k, taken + [group[0]])

    walk(0, 0, [])
    assert len(found) == 1, f"{len(found)} ways to give {len(kernels)} kernels their {len(seqs)} listings"
    return {i: listing[q] for i, q in enumerate(found[0])}


def expected(folder: Path) -> dict[tuple[str, int], dict]:
    """(part, kernel id) -> stage, executed and static counts, setmaxnreg, ncu µs, threads."""
    out = {}
    for raw_path in sorted(folder.glob("*.raw.csv.gz")):
        part = raw_path.name.removesuffix(".raw.csv.gz")
        header, units, body = raw_table(raw_path)
        col = {c: i for i, c in enumerate(header)}
        direction = "backward" if part.startswith("backward") else "forward"
        ranges = folder / f"{part}.ranges.csv.gz"
        if ranges.exists():
            h2, _, b2 = raw_table(ranges)
            label = {r[h2.index("ID")]: r[h2.index("Kernel Name")] for r in b2}
            stages = [label[r[col["ID"]]].split("/")[0].split("__")[0] for r in body]
        else:
            order = json.loads((folder / f"{part}.stages.json").read_text())
            stages, k = [], -1
            for r in body:
                if "spin_kernel" in r[col["Kernel Name"]]:
                    k += 1
                    stages.append(None)
                else:
                    stages.append(order[k] if 0 <= k < len(order) else None)
        # the report interface's table where there is one, else the raw page's instance cells
        pri: dict[int, dict[str, dict[str, float]]] = {}
        opcodes = folder / f"{part}.opcodes.csv.gz"
        if opcodes.exists():
            r = rows(opcodes)
            for kid, _, metric, op, value in r[1:]:
                pri.setdefault(int(kid), {}).setdefault(metric, {})
                pri[int(kid)][metric][op] = pri[int(kid)][metric].get(op, 0) + float(value)
        listing: dict[int, list[str]] = {}
        listed_as: dict[int, str] = {}
        sass = folder / f"{part}.sass.csv.gz"
        if sass.exists():
            for seq, addr, text in rows(sass)[1:]:
                if addr != "#":
                    listing.setdefault(int(seq), []).append(text)
                elif text.lstrip('"').startswith("Kernel Name"):
                    listed_as[int(seq)] = next(csv.reader([text]))[1]
        listing = by_kernel([r[col["Kernel Name"]] for r in body], listed_as, listing)
        time_scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1, "usecond": 1, "ms": 1e3, "msecond": 1e3}[
            units[col["gpu__time_duration.sum"]]]
        for i, (r, stage) in enumerate(zip(body, stages)):
            if stage is None:
                continue
            per = pri.get(i) or {m: instances(r[col[m]]) for m in
                                 ("sass__inst_executed_per_opcode", "sass__inst_executed_per_opcode_with_modifier_all")
                                 if m in col}
            plain = per.get("sass__inst_executed_per_opcode", {})
            mods = per.get("sass__inst_executed_per_opcode_with_modifier_all", {})
            ex = {f: sum(v for k, v in plain.items() if k.split(".")[0] == f) for f in FAMILIES}
            ex["MUFU.EX2"] = sum(v for k, v in mods.items() if k.startswith("MUFU.EX2"))
            lines = listing.get(i, [])
            st = {f: sum(1 for x in lines if opcode_of(x).split(".")[0] == f) for f in FAMILIES}
            st["MUFU.EX2"] = sum(1 for x in lines if opcode_of(x).startswith("MUFU.EX2"))
            regs = []
            for x in lines:
                m = re.search(r"USETMAXREG((?:\.\w+)*)\s+(?:\w+,\s*)?(0x[0-9a-fA-F]+|\d+)\b", x)
                if m:
                    regs.append((m.group(1), int(m.group(2), 0)))
            up = [n for mods_, n in regs if "DEALLOC" not in mods_ and "DEC" not in mods_]
            down = [n for mods_, n in regs if "DEALLOC" in mods_ or "DEC" in mods_]
            out[(part, i)] = {"direction": direction, "stage": stage, "kernel": r[col["Kernel Name"]], "executed": ex, "static": st,
                                   "consumer": max(up) if up else None, "producer": min(down) if down else None,
                                   "us": scalar(r[col["gpu__time_duration.sum"]]) * time_scale,
                                   "threads": int(scalar(r[col["launch__block_size"]]))}
    return out


def main_of(want: dict, direction: str, stage: str) -> dict:
    mine = [v for v in want.values() if v["direction"] == direction and v["stage"] == stage]
    for score in (lambda v: v["executed"]["HGMMA"] + v["executed"]["HMMA"], lambda v: v["executed"]["FFMA"],
                  lambda v: v["us"]):
        best = max(mine, key=score)
        if score(best) > 0:
            return best
    return mine[0]


def path_of(v: dict) -> str:
    e = v["executed"]
    return "wgmma" if e["HGMMA"] > 0 else "mma.sync" if e["HMMA"] > 0 else "none"


def loads_of(v: dict) -> str:
    e = v["executed"]
    return "TMA" if e["UTMALDG"] > 0 else "cp.async" if e["LDGSTS"] > 0 else "plain loads"


@pytest.fixture(scope="module", params=["fake-h200", "fake-h100-80gb-hbm3", "fake-h200-no-interface", *REAL])
def recording(request, tmp_path_factory, monkeypatch_module):
    """(the set's hopper/ folder, the gpu name to load) with the replay root pointed at it."""
    name = request.param
    if name.startswith("fake-"):
        gpu = name.removeprefix("fake-").removesuffix("-no-interface")
        root = tmp_path_factory.mktemp("hopper_sets")
        hopper_fakes.linked_set(TRACES / gpu, root, opcodes_file="no-interface" not in name)
        monkeypatch_module.setenv("ATTN_PROFILED_REPLAY_DIR", str(root))
        return root / gpu / "hopper", gpu
    monkeypatch_module.setenv("ATTN_PROFILED_REPLAY_DIR", str(TRACES))
    return TRACES / name / "hopper", name


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_every_kernel_family_count_is_the_raw_recording(recording):
    from helpers.hopper import sources
    folder, gpu = recording
    want = expected(folder)
    table = sources.load(gpu).table
    assert len(table) == len(want) and len(want) > 20
    for r in table.to_dict("records"):
        w = want[(r["part"], r["kernel_id"])]
        assert (r["stage"], r["kernel"], r["threads"]) == (w["stage"], w["kernel"], w["threads"])
        for f in (*FAMILIES, "MUFU.EX2"):
            assert r[f] == pytest.approx(w["executed"][f]), (gpu, r["stage"], r["kernel"][:60], f)
            assert r[f"static {f}"] == w["static"][f], (gpu, r["stage"], r["kernel"][:60], f)
        assert (r["consumer_registers"] if r["consumer_registers"] == r["consumer_registers"] else None) == w["consumer"]
        assert (r["producer_registers"] if r["producer_registers"] == r["producer_registers"] else None) == w["producer"]
        assert r["time_us"] == pytest.approx(w["us"], rel=1e-6)


def test_the_page_table_names_each_stage_s_main_kernel_and_its_paths(recording):
    from helpers import hopper
    from helpers.hopper import sources
    folder, gpu = recording
    want = expected(folder)
    main = hopper.main_kernels(sources.load(gpu).table)
    shown = hopper.families_table(main)
    forwards = sorted({v["stage"] for v in want.values() if v["direction"] == "forward"})
    for stage in shown.index:
        assert stage in forwards
        w = main_of(want, "forward", stage)
        assert shown.loc[stage, "kernel"] == w["kernel"], stage
        assert shown.loc[stage, "tensor path"] == {"none": "neither"}.get(path_of(w), path_of(w)), stage
        assert shown.loc[stage, "loads"] == loads_of(w), stage
        consumer = w["consumer"]
        cell = str(shown.loc[stage, "registers (launch → consumer)"])
        assert cell.endswith(f"→ {consumer}") if consumer is not None else "→" not in cell, (stage, cell)


def test_the_register_split_sums_the_block(recording):
    """setmaxnreg redistributes within a block: the table's block totals recomputed from the raw
    launch (registers × threads) and the listing's counts (one producer warpgroup, the rest consumers)."""
    from helpers import hopper
    from helpers.hopper import sources
    folder, gpu = recording
    want = expected(folder)
    launch = {}
    for path in folder.glob("forward_*.raw.csv.gz"):
        header, _, body = raw_table(path)
        for x in body:
            launch[x[header.index("Kernel Name")]] = int(scalar(x[header.index("launch__registers_per_thread")]))
    split = hopper.register_split(hopper.main_kernels(sources.load(gpu).table))
    for stage, r in split.iterrows():
        w = main_of(want, "forward", stage)
        assert r["registers at launch"] == launch[w["kernel"]]
        assert r["block's registers at launch"] == launch[w["kernel"]] * w["threads"]
        groups = w["threads"] // 128
        assert r["block's registers after"] == w["producer"] * 128 + w["consumer"] * 128 * (groups - 1)


def test_cudnn_layout_field_is_one_warpgroup_of_the_launch():
    """Every cuDNN sm90 attention kernel of the traces: the layout field's product is 4, one
    warpgroup, while its block (the trace event's `block` arg) is 384 threads: 12 warps."""
    from helpers.core.names import layout_against_launch
    seen = 0
    for path in sorted(TRACES.glob("*/**/*.json.gz")):
        with gzip.open(path, "rt") as f:
            evs = json.load(f).get("traceEvents", [])
        for e in evs:
            name = e.get("name", "")
            if e.get("cat") != "kernel" or not name.startswith("cudnn_generated") or "_sm90_" not in name:
                continue
            layout = re.search(r"_(\d+x\d+x\d+)_(\d+x\d+x\d+)_", name).group(2)
            product = 1
            for x in layout.split("x"):
                product *= int(x)
            threads = e["args"]["block"][0] * e["args"]["block"][1] * e["args"]["block"][2]
            check = layout_against_launch(name, threads)
            assert (check["product"], check["block_warps"], check["warpgroups"]) == (product, threads // 32, threads // 128)
            assert check["one_warpgroup"] == (product == 4 and threads % 128 == 0 and threads // 32 > 4)
            assert product * 32 != threads   # the field is not the block's warps
            seen += 1
        if seen > 40:
            break
    assert seen


def test_the_page_sentences_say_the_raw_numbers(recording, monkeypatch):
    """The registers sentence: per warp-specialised main kernel, the launch's registers, what the
    producer gives back to and what a consumer takes, as the raw launch and listing give them; the
    flash/cuDNN sentence names each one's tensor path."""
    from helpers import hopper
    from helpers.hopper import chapter, sources
    folder, gpu = recording
    want = expected(folder)
    got = {}
    monkeypatch.setattr(chapter, "glue", lambda k, v: got.__setitem__(k, getattr(v, "data", v)))
    hopper.glue_hopper(hopper.main_kernels(sources.load(gpu).table), sources.load(gpu))
    text = got["hop_registers_sentence"]
    split = hopper.register_split(hopper.main_kernels(sources.load(gpu).table))
    found = 0
    for m in re.finditer(r"(?:(\w+)'s kernel launches|The kernels of ([\w, ]+?) each launch) (\d+) warpgroups with "
                         r"(\d+) registers a thread, [\d,]+ for the block; its producer warpgroup then gives back to "
                         r"(\d+) and each consumer warpgroup takes (\d+)", text):
        stages = [m.group(1)] if m.group(1) else re.split(r", | and ", m.group(2))
        for stage in stages:
            w = main_of(want, "forward", stage)
            assert (int(m.group(3)), int(m.group(5)), int(m.group(6))) == (w["threads"] // 128, w["producer"], w["consumer"])
            found += 1
    assert found == len(split), text
    words = {"wgmma": "warpgroup MMAs (wgmma)", "mma.sync": "per-warp `mma.sync`", "none": "no tensor-core instruction"}
    fl, cu = main_of(want, "forward", "sdpa_flash"), main_of(want, "forward", "sdpa_cudnn")
    assert got["hop_flash_cudnn_sentence"].startswith(
        f"FlashAttention-2's kernel issues {words[path_of(fl)]}, cuDNN's {words[path_of(cu)]}.")


@pytest.mark.parametrize("gpu", sorted(p.name for p in TRACES.iterdir() if (p / "ncu").is_dir() and "synthetic" not in p.name))
def test_the_hmma_counter_claim_of_the_page(gpu):
    """7b's fold says: on Hopper ncu's hmma pipe counter counts the warpgroup instructions as well
    (a kernel's hmma reads at least its gmma), and reads above zero in kernels that do no matrix
    work (no warp-level MMA operation counted): both, in the set's own ncu tables."""
    with_gmma = counted_without_work = 0
    for path in sorted((TRACES / gpu / "ncu").glob("*__b8_h16_s1024_d64_bfloat16_causal.csv")):
        r = list(csv.reader(io.StringIO(path.read_text())))
        start = next(i for i, x in enumerate(r) if x and x[0] == "ID")
        h = r[start]
        for x in r[start + 2:]:
            d = dict(zip(h, x))
            num = lambda v: float(str(v).replace(",", "") or 0)  # noqa: E731
            hmma = num(d["sm__inst_executed_pipe_tensor_op_hmma.sum"])
            gmma = num(d["sm__inst_executed_pipe_tensor_op_gmma.sum"])
            ops = sum(num(v) for k, v in d.items() if k.startswith("sm__ops_path_tensor_op_hmma_src_")
                      and k.endswith(".sum") and "sparsity" not in k)
            if gmma > 0:
                assert hmma >= gmma, (path.name, d["Kernel Name"][:60])
                with_gmma += 1
            if hmma > 0 and gmma == 0 and ops == 0:
                counted_without_work += 1
    assert with_gmma and counted_without_work
