"""Execute notebooks with nbclient, one kernel each, and time them (benchmarks/gpu_session.sh's
notebooks step).

    python benchmarks/run_notebooks.py OUT_DIR PASS notebooks/*.ipynb            # a fresh kernel each
    python benchmarks/run_notebooks.py --pool 1 OUT_DIR PASS notebooks/*.ipynb   # the next kernel started ahead
    python benchmarks/run_notebooks.py --pool 3 OUT_DIR PASS notebooks/*.ipynb   # the next three

Fresh (the default, as the book's build runs them): each notebook starts its own kernel, runs,
and stops it; its time includes the kernel's start and stop.

Pooled (--pool N): the next notebook's kernel (the next N's) is started while the current notebook runs, and it
runs space/kernel_startup.py as it starts (import torch, the CUDA context, the helpers), as a
GPU Space's JupyterLab does when the reader opens a notebook. A notebook's pooled time runs from
the moment it asks for its kernel (waiting, if the kernel is not ready yet, counts) to its last
cell; the kernel's start and warm-up, done meanwhile, is reported beside it, so that each line
gives both: pooled, and what a fresh kernel would have added (start + warm-up).

Every notebook prints one line, then each cell over SLOW_CELL seconds (default 3); the executed
notebooks are written to OUT_DIR."""
from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import os
import sys
import time
from pathlib import Path

import nbclient
import nbformat
from jupyter_client.manager import AsyncKernelManager

ROOT = Path(__file__).resolve().parents[1]
STARTUP = ROOT / "space" / "kernel_startup.py"


def cell_seconds(cell) -> float | None:
    t = cell.get("metadata", {}).get("execution", {})
    a, b = t.get("iopub.execute_input"), t.get("shell.execute_reply")
    if not (a and b):
        return None
    parse = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(b) - parse(a)).total_seconds()


def slow_cells(nb, name: str, slow: float) -> list[str]:
    lines = []
    code = [c for c in nb.cells if c.cell_type == "code"]
    for i, cell in enumerate(code):
        s = cell_seconds(cell)
        if s is not None and s >= slow:
            first = next((line for line in cell.source.splitlines() if line.strip() and not line.startswith("#")), "")
            lines.append(f"[{name}]     cell {i:2d} {s:6.1f} s  {first[:90]}")
    return lines


async def start_kernel(cwd: Path, warm: bool) -> tuple[AsyncKernelManager, float]:
    """A started kernel, ready to run (its startup file run, where `warm`), and the seconds it took."""
    started = time.monotonic()
    km = AsyncKernelManager(kernel_name="python3")
    env = dict(os.environ)
    if warm:
        env["PYTHONSTARTUP"] = str(STARTUP)
    await km.start_kernel(cwd=str(cwd), env=env)
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=300)   # the kernel answers once its startup file has run
    finally:
        kc.stop_channels()
    return km, time.monotonic() - started


async def execute(nb, km: AsyncKernelManager | None, cwd: Path) -> str:
    client = nbclient.NotebookClient(nb, km=km, timeout=600, kernel_name="python3", record_timing=True,
                                     resources={"metadata": {"path": str(cwd)}})
    try:
        await client.async_execute()
        return "ok"
    except Exception as err:  # noqa: BLE001 - keep going: one broken notebook must not hide the others
        return f"FAILED: {str(err)[-1500:]}"
    finally:
        if km is not None and client.kc is not None:   # a kernel handed in: its channels are ours to close
            client.kc.stop_channels()


async def run(out: Path, name: str, paths: list[str], pool: int, cwd: Path, slow: float) -> list[dict]:
    out.mkdir(parents=True, exist_ok=True)
    total = time.monotonic()
    rows = []
    # pooled: the next `pool` notebooks' kernels start ahead (a reader opening several pages at once)
    ahead: collections.deque = collections.deque()

    def fill(after: int) -> None:
        while len(ahead) < pool and after + len(ahead) < len(paths):
            ahead.append(asyncio.ensure_future(start_kernel(cwd, warm=True)))
    stopping = []
    fill(0)
    for i, path in enumerate(paths):
        nb = nbformat.read(path, 4)
        t = time.monotonic()
        if pool:
            km, start_s = await ahead.popleft()         # waiting for it, if it is not ready, counts
            fill(i + 1)
            status = await execute(nb, km, cwd)
            seconds = time.monotonic() - t
            stopping.append(asyncio.ensure_future(km.shutdown_kernel(now=False)))
            line = (f"[{name}] {path:40s} {seconds:6.1f} s pooled  (kernel start + warm-up {start_s:4.1f} s, "
                    f"overlapped; fresh would add it)  {status}")
        else:
            status = await execute(nb, None, cwd)
            seconds, start_s = time.monotonic() - t, None
            line = f"[{name}] {path:40s} {seconds:6.1f} s fresh kernel  {status}"
        nbformat.write(nb, str(out / Path(path).name))
        print(line, flush=True)
        for cell_line in slow_cells(nb, name, slow):
            print(cell_line, flush=True)
        rows.append({"notebook": Path(path).name, "seconds": seconds, "kernel_start_s": start_s, "status": status})
    for left in ahead:
        km, _ = await left
        stopping.append(asyncio.ensure_future(km.shutdown_kernel(now=True)))
    if stopping:
        await asyncio.gather(*stopping, return_exceptions=True)
    how = f"pooled kernels, {pool} ahead" if pool else "a fresh kernel each"
    print(f"[{name}] all notebooks: {time.monotonic() - total:.1f} s ({how})", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pool", type=int, default=0, metavar="N",
                        help="start the next N notebooks' kernels ahead, warmed up (0: a fresh kernel each)")
    parser.add_argument("--cwd", type=Path, default=ROOT / "notebooks", help="the kernels' working folder")
    parser.add_argument("out", type=Path)
    parser.add_argument("name")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args(argv)
    slow = float(os.environ.get("SLOW_CELL", "3"))
    rows = asyncio.run(run(args.out, args.name, sorted(args.paths), args.pool, args.cwd, slow))
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
