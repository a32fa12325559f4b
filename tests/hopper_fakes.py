"""A FAKE Hopper recording, in tools/record_hopper.py's format, for tests (and for building the
chapter before the GPU's recording exists): made from a real set's ncu tables (the kernels, their
launches and tensor-pipe counters are real), its opcode counts and SASS listings invented from
them: HGMMA where the gmma pipe counted, HMMA for the rest of the hmma pipe, TMA loads and
setmaxnreg where there is HGMMA, cp.async where there is HMMA, FFMA from the fp32 counter.
Never written under notebooks/traces. Plain code: nothing here imports `helpers`."""
from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "notebooks" / "traces"
SHAPE = "b8_h16_s1024_d64_bfloat16_causal"
GROUPS = {"fused": ["sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_auto"],
          "unfused": ["naive", "inplace", "sdpa_math"],
          "compiled": ["naive_compiled", "flex", "flex_sliding"]}
BACKWARD = ["naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "sdpa_auto"]
OPCODE = "sass__inst_executed_per_opcode"
MODIFIER = "sass__inst_executed_per_opcode_with_modifier_all"


def table(path: Path) -> tuple[list[str], list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    return rows[start], rows[start + 1], [r for r in rows[start + 2:] if len(r) == len(rows[start])]


def num(x: str) -> float:
    try:
        return float(x.replace(",", ""))
    except ValueError:
        return 0.0


def invented(row: dict) -> tuple[dict[str, int], dict[str, int], list[str]]:
    """(per opcode, per opcode with modifier, the static listing) of one kernel, from its counters."""
    hmma_pipe = num(row.get("sm__inst_executed_pipe_tensor_op_hmma.sum", "0"))
    gmma = int(num(row.get("sm__inst_executed_pipe_tensor_op_gmma.sum", "0")))
    # the hmma pipe counts the gmma instructions too, and reads non-zero in kernels with no matrix
    # work (masked_fill, softmax): warp MMAs only where the pipe did warp-level MMA operations
    ops = sum(num(v) for k, v in row.items() if k.startswith("sm__ops_path_tensor_op_hmma_src_") and "sparsity" not in k)
    hmma = int(hmma_pipe - gmma) if ops else 0
    ffma = int(num(row.get("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", "0")) // 32)
    blocks = int(num(row.get("launch__grid_size", "1")))
    ops = {"MOV": 1000 + blocks, "EXIT": blocks * int(num(row.get("launch__block_size", "32"))) // 32}
    listing = ["MOV R1, c[0x0][0x28]", "EXIT"]
    if gmma:
        ops |= {"HGMMA": gmma, "UTMALDG": blocks * 40, "USETMAXREG": blocks * 3, "MUFU": gmma // 2, "FFMA": ffma or gmma}
        listing += ["USETMAXREG.DEALLOC.CTAPOOL 0x18", "USETMAXREG.TRYALLOC.CTAPOOL 0xe8", "USETMAXREG.TRYALLOC.CTAPOOL 0xf0",
                    "MUFU.RCP R7, R7",
                    "@P0 UTMALDG.2D [UR8], [UR4]", "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], RZ, !UPT",
                    "MUFU.EX2 R5, R5"]
    if hmma:
        ops |= {"HMMA": hmma, "LDGSTS": blocks * 64, "MUFU": hmma // 4, "FFMA": ffma or hmma // 2}
        listing += ["LDGSTS.E.BYPASS.LTC128B.128 [R3], desc[UR4][R4.64]", "HMMA.16816.F32.BF16 R4, R8, R12, R4",
                    "MUFU.EX2 R6, R6"]
    if not (gmma or hmma):
        ops |= {"FFMA": ffma, "FADD": ffma // 3, "FMUL": ffma // 5}
        listing += ["FFMA R0, R1, R2, R3", "FADD R0, R0, R1"]
    mods = {("MUFU.EX2" if k == "MUFU" else k): v for k, v in ops.items()}
    if "MUFU" in ops:   # a reciprocal beside the exponents: MUFU is more than 2^x
        mods["MUFU.RCP"] = blocks
    return ops, mods, listing


def write_part(out: Path, part: str, header: list[str], units: list[str], rows: list[list[str]],
               jobs: list[str] | None, opcodes_file: bool = True) -> None:
    header = [*header, "smsp__inst_executed.sum", OPCODE, MODIFIER]
    units = [*units, "inst", "inst", "inst"]
    raw, ranges, opcode_rows, sass_rows = [], [], [], []
    for i, r in enumerate(rows):
        d = dict(zip(header, r))
        ops, mods, listing = invented(d)
        total = sum(ops.values())
        cell = lambda m: f"{sum(m.values())} (" + "; ".join(f"{k}: {v}" for k, v in m.items()) + ")"  # noqa: E731
        raw.append([str(i), *r[1:], str(total), cell(ops), cell(mods)])
        if jobs is not None:
            named = list(raw[-1])
            named[header.index("Kernel Name")] = jobs[i]
            ranges.append(named)
        for k, v in ops.items():
            opcode_rows.append([i, d["Kernel Name"], OPCODE, k, v])
        for k, v in mods.items():
            opcode_rows.append([i, d["Kernel Name"], MODIFIER, k, v])
        sass_rows += [[i, f"0x{j * 16:x}", line] for j, line in enumerate(listing)]

    def dump(name: str, head: list[str], body: list[list], quote=csv.QUOTE_ALL) -> None:
        buf = io.StringIO()
        w = csv.writer(buf, quoting=quote, lineterminator="\n")
        w.writerow(head)
        w.writerows(body)
        with gzip.open(out / name, "wt") as f:
            f.write(buf.getvalue())

    dump(f"{part}.raw.csv.gz", header, [units, *raw])
    if jobs is not None:
        dump(f"{part}.ranges.csv.gz", header, [units, *ranges])
    if opcodes_file:
        dump(f"{part}.opcodes.csv.gz", ["kernel_id", "kernel", "metric", "opcode", "value"], opcode_rows, csv.QUOTE_MINIMAL)
    dump(f"{part}.sass.csv.gz", ["kernel_seq", "address", "instruction"], sass_rows, csv.QUOTE_MINIMAL)


def write_fake(source: Path, out: Path, backward: bool = True, opcodes_file: bool = True,
               drop_stages: tuple[str, ...] = ()) -> Path:
    """A fake hopper/ folder at `out`, from the ncu tables of the set at `source`."""
    out.mkdir(parents=True, exist_ok=True)
    parts = {}
    for group, stages in GROUPS.items():
        header = units = None
        rows, jobs = [], []
        for stage in stages:
            if stage in drop_stages:
                continue
            path = source / "ncu" / f"{stage}__{SHAPE}.csv"
            if not path.exists():
                continue
            header, units, body = table(path)
            rows += body
            jobs += [f"{stage}__{SHAPE}"] * len(body)
        if rows:
            part = f"forward_{group}__{SHAPE}"
            write_part(out, part, header, units, rows, jobs, opcodes_file)
            parts[part] = {"jobs": sorted(set(jobs)), "kernels": len(rows)}
    back = source / "training" / "ncu" / f"backward__{SHAPE}.csv"
    if backward and back.exists():
        header, units, body = table(back)
        part = f"backward__{SHAPE}"
        write_part(out, part, header, units, body, None, opcodes_file)
        order = json.loads(back.with_suffix(".json").read_text())
        (out / f"{part}.stages.json").write_text(json.dumps(order))
        parts[part] = {"kernels": len(body)}
    prov = json.loads((source / "ncu" / "provenance.json").read_text())
    (out / "provenance.json").write_text(json.dumps({
        "gpu": prov["gpu"], "gpu_slug": source.name, "ncu": prov.get("ncu"), "torch": prov.get("torch"),
        "date": "2026-12-07T00:00:00+00:00", "command": "FAKE: tests/hopper_fakes.py", "synthetic": True,
        "parts": parts, "failed": {}}, indent=1))
    return out


def linked_set(source: Path, root: Path, **kw) -> Path:
    """`source`'s files linked into root/<source.name>/, with a fake hopper/ folder beside them."""
    target = root / source.name
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name != "hopper":
            (target / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    write_fake(source, target / "hopper", **kw)
    return target
