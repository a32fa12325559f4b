"""Issue 40's report, per GPU: for every stage and every kernel of the Hopper recording, the
instruction families it executed (warp instructions, ncu) and holds (its SASS), its launch and
setmaxnreg's registers. Writes benchmarks/results/hopper_report_<gpu>.md.

    python benchmarks/hopper_report.py h200 h100-80gb-hbm3
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.core.names import decode  # noqa: E402
from helpers.hopper import core, sources  # noqa: E402

OUT = Path(__file__).resolve().parent / "results"
SHOWN = ("HGMMA", "HMMA", "UTMALDG", "UTMASTG", "LDGSTS", "USETMAXREG", "MUFU.EX2", "FFMA")


def fmt(v) -> str:
    return "—" if v is None or v != v else f"{v:,.0f}"


def report(gpu: str) -> str:
    rec = sources.load(gpu)
    t = rec.table
    p = rec.provenance
    lines = [f"# Hopper instruction families: {gpu}", "",
             f"Recorded on {p.get('gpu')} on {str(p.get('date'))[:10]} with {p.get('ncu')}, torch {p.get('torch')} "
             f"(`{p.get('command')}`). {rec.missing or 'Every part recorded.'}", "",
             "Executed: warp instructions (ncu's sass__inst_executed_per_opcode; MUFU.EX2 from the with-modifier "
             "metric). Static: instructions the kernel's SASS holds. setmaxnreg: the USETMAXREG counts in its SASS.", ""]
    if t.empty:
        return "\n".join(lines + ["No kernel recorded."]) + "\n"
    main = core.main_kernels(t)
    for direction in ("forward", "backward"):
        d = t[t["direction"] == direction]
        if d.empty:
            continue
        lines += [f"## {direction}", "",
                  "| stage | kernel | main | threads | regs | setmaxnreg | path | loads | "
                  + " | ".join(SHOWN) + " | static " + " / ".join(SHOWN[:6]) + " |",
                  "|" + "---|" * (8 + len(SHOWN) + 1)]
        for r in d.to_dict("records"):
            is_main = ((main["part"] == r["part"]) & (main["kernel_id"] == r["kernel_id"])).any()
            label = decode(r["kernel"]).summary[:70].replace("|", "/")
            lines.append(f"| {r['stage']} | {label} | {'yes' if is_main else ''} | {r['threads']} | {r['registers']} | "
                         f"{r['setmaxnreg'] if isinstance(r['setmaxnreg'], str) else ''} | {core.tensor_path(r)} | {core.load_path(r)} | "
                         + " | ".join(fmt(r.get(f)) for f in SHOWN) + " | "
                         + " / ".join(fmt(r.get(f"static {f}")) for f in SHOWN[:6]) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    for gpu in argv or ["h200", "h100-80gb-hbm3"]:
        path = OUT / f"hopper_report_{gpu}.md"
        path.write_text(report(gpu))
        print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
