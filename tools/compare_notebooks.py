"""Compare the outputs of two sets of executed notebooks (benchmarks/replay_notebooks.py writes
them): every output of every code cell, glued values included, with what changes per run (widget
model ids, plotly div ids, uuids, hashes, temp folders, timings of this machine) normalised.

    python tools/compare_notebooks.py /tmp/exec_before /tmp/exec_after [--shown]

With --shown an output's text/plain is left out where it has a richer form (HTML, an image, a
widget): the page shows that one, and a DataFrame's text/plain depends on pandas' options.

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


SHOWN_ONLY = "--shown" in sys.argv   # compare what a reader sees: text/plain only where nothing richer exists


def outputs(path: Path) -> list[str]:
    nb = json.loads(path.read_text())
    cells = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        parts = []
        merged = []
        for out in cell.get("outputs", []):
            # one stream written in two flushes is the same output
            if merged and out.get("output_type") == "stream" and merged[-1].get("output_type") == "stream" \
                    and merged[-1].get("name") == out.get("name"):
                text = lambda o: o["text"] if isinstance(o["text"], str) else "".join(o["text"])  # noqa: E731
                merged[-1] = {**merged[-1], "text": text(merged[-1]) + text(out)}
            else:
                merged.append(dict(out))
        for out in merged:
            if out.get("output_type") == "stream" and not isinstance(out.get("text"), str):
                out["text"] = "".join(out["text"])
            out = {k: v for k, v in out.items() if k not in ("execution_count",)}
            data = out.get("data")
            if SHOWN_ONLY and isinstance(data, dict) and len(data) > 1:
                out["data"] = {k: v for k, v in data.items() if k != "text/plain"}
            text = json.dumps(out, sort_keys=True, indent=0)
            for rx, sub in NORM:
                text = rx.sub(sub, text)
            parts.append(text)
        cells.append("".join(cell["source"]) + "\n----\n" + "\n".join(parts))
    return cells


def main() -> int:
    a_root, b_root = [Path(a) for a in sys.argv[1:] if not a.startswith("--")][:2]
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
