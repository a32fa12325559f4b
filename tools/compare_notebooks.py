"""Compare the outputs of two sets of executed notebooks (benchmarks/replay_notebooks.py writes
them): every output of every code cell, glued values included, with what changes per run (widget
model ids, plotly div ids, uuids, hashes, temp folders, timings of this machine) normalised.

    python tools/compare_notebooks.py /tmp/exec_before /tmp/exec_after

Prints the cells that differ and exits 1 if any does. Used to check that a refactoring changes
nothing a reader sees in replay."""
from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

NORM = [(re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
        (re.compile(r"[0-9a-f]{64}"), "<hash>"), (re.compile(r"[0-9a-f]{32}"), "<id>"),
        (re.compile(r"/tmp/[\w./-]+"), "<tmp>"),
        (re.compile(r"(?:[\w/.-]*)/(?:before19|w19)/"), "<repo>/")]


def outputs(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts = []
        for out in cell.get("outputs", []):
            out = {k: v for k, v in out.items() if k not in ("execution_count",)}
            text = json.dumps(out, sort_keys=True, indent=0)
            for rx, sub in NORM:
                text = rx.sub(sub, text)
            parts.append(text)
        cells.append("".join(cell["source"]) + "\n----\n" + "\n".join(parts))
    return cells


def main() -> int:
    a_root, b_root = Path(sys.argv[1]), Path(sys.argv[2])
    differ = 0
    names = sorted(p.name for p in a_root.glob("*.ipynb") if (b_root / p.name).exists())
    for name in names:
        a, b = outputs(a_root / name), outputs(b_root / name)
        bad = [i for i, (x, y) in enumerate(zip(a, b)) if x.split("\n----\n")[1] != y.split("\n----\n")[1]]
        if len(a) != len(b):
            print(f"== {name}: {len(a)} code cells before, {len(b)} after")
        for i in bad:
            x, y = a[i].split("\n----\n")[1], b[i].split("\n----\n")[1]
            diff = list(difflib.unified_diff(x.splitlines(), y.splitlines(), lineterm="", n=0))
            print(f"== {name} cell {i}: {len(diff)} diff lines")
            print("\n".join(line[:300] for line in diff[:12]))
        differ += bool(bad) or len(a) != len(b)
    print(f"{len(names)} notebooks compared, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
