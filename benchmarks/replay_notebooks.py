"""Execute notebooks with nbclient, one fresh kernel each, and report wall and CPU time per
notebook (the CPU time of the kernel process, so a busy shared machine does not inflate it).

    python benchmarks/replay_notebooks.py OUT_DIR notebooks/01_naive.ipynb ...

Writes the executed notebooks to OUT_DIR and OUT_DIR/times.tsv (notebook, wall s, kernel CPU s,
status). Used to compare two commits: run it with PYTHONPATH at each, then compare the outputs
with tools/compare_notebooks.py."""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

RUN_ONE = r"""
import sys, nbformat, nbclient
src, dst = sys.argv[1], sys.argv[2]
nb = nbformat.read(src, 4)
status = "ok"
try:
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": "notebooks"}}).execute()
except Exception as err:
    status = "FAILED: " + str(err)[-800:].replace("\n", " ")
nbformat.write(nb, dst)
print(status)
"""


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for path in sys.argv[2:]:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.time()
        done = subprocess.run([sys.executable, "-c", RUN_ONE, path, str(out / Path(path).name)],
                              capture_output=True, text=True)
        wall = time.time() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        status = (done.stdout.strip().splitlines() or [done.stderr.strip()[-300:]])[-1]
        rows.append((Path(path).name, round(wall, 1), round(cpu, 1), status))
        print(f"{Path(path).name:28s} wall {wall:6.1f} s  cpu {cpu:6.1f} s  {status[:200]}", flush=True)
    with open(out / "times.tsv", "w") as f:
        for row in rows:
            f.write("\t".join(map(str, row)) + "\n")
    print(json.dumps({"wall": round(sum(r[1] for r in rows), 1), "cpu": round(sum(r[2] for r in rows), 1)}))


if __name__ == "__main__":
    main()
