"""Every code cell's time, errors and stderr outputs, from the notebooks a live pass executed.

    python benchmarks/cell_times.py OUT.csv CALL DIR...     # DIR: <executed>/<pass>, e.g. cold-pooled

Reads what nbclient wrote into each executed notebook (`metadata.execution`, the times of
run_notebooks.py) and appends one row per code cell: call, pass_, notebook, cell (index among the
notebook's cells), seconds, errors, stderr_outputs, first_line. A pass's notebooks are its DIR's
*.ipynb; the pass is named by DIR's last part.
"""
from __future__ import annotations

import csv
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_notebooks import cell_seconds  # noqa: E402  (one reading of nbclient's times)

COLUMNS = ["call", "pass_", "notebook", "cell", "seconds", "errors", "stderr_outputs", "first_line"]


def rows(call: str, folder: Path) -> list[dict]:
    out = []
    for path in sorted(folder.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            seconds = cell_seconds(cell)
            outputs = cell.get("outputs", [])
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            out.append({"call": call, "pass_": folder.name, "notebook": path.name, "cell": i,
                        "seconds": None if seconds is None else round(seconds, 2),
                        "errors": sum(o.get("output_type") == "error" for o in outputs),
                        "stderr_outputs": sum(o.get("name") == "stderr" for o in outputs),
                        "first_line": first})
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print(__doc__)
        return 2
    target, call, folders = Path(argv[0]), argv[1], [Path(f) for f in argv[2:]]
    new = not target.exists()
    with target.open("a", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        if new:
            writer.writeheader()
        for folder in folders:
            writer.writerows(rows(call, folder))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
