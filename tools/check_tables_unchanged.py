"""The spine's tables are unchanged by a change to helpers/profiling: compare them with a git ref's code.

    python tools/check_tables_unchanged.py            # against main
    python tools/check_tables_unchanged.py --ref HEAD~3

For every recorded stage trace (notebooks/traces/<gpu>/<stage>__<shape>.json.gz) it builds
`per_step`, `gpu_events("all")`, `cpu_ops("all")`, `launches("all")` and `kernels()` twice: with
the `helpers` package of the ref (extracted with `git archive` into a temporary folder and run in a
subprocess, so that the two never share a module) and with this checkout's. The tables must be
identical: same columns, dtypes, index and values (pandas.testing.assert_frame_equal, exact).
Exit status 1 and the first difference per trace if any differs.
"""
from __future__ import annotations

import argparse
import io
import pickle
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLES = ("per_step", "gpu_events", "cpu_ops", "launches", "kernels")

# run by both sides: the tables of every trace, pickled to stdout
SNIPPET = r"""
import pickle, sys, time
sys.path.insert(0, sys.argv[1])
from helpers.core.profile import Profile
out = {}
for path in sys.argv[2:]:
    start = time.perf_counter()
    prof = Profile.load(path)
    out[path] = {"per_step": prof.per_step, "gpu_events": prof.gpu_events("all"),
                 "cpu_ops": prof.cpu_ops("all"), "launches": prof.launches("all"),
                 "kernels": prof.kernels(), "seconds": time.perf_counter() - start}
sys.stdout.buffer.write(pickle.dumps(out))
"""


def tables_with(package_root: Path, traces: list[Path]) -> dict:
    result = subprocess.run([sys.executable, "-c", SNIPPET, str(package_root), *map(str, traces)],
                            capture_output=True, check=False)
    if result.returncode != 0:
        sys.exit(f"building the tables with {package_root} failed:\n{result.stderr.decode()[-3000:]}")
    return pickle.loads(result.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="the git ref whose helpers/ is the reference")
    args = parser.parse_args()
    import pandas as pd

    traces = sorted((ROOT / "notebooks" / "traces").glob("*/*__*.json.gz"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", args.ref, "helpers"],
                             capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        before = tables_with(Path(tmp), traces)
    after = tables_with(ROOT, traces)
    failures = 0
    for path in map(str, traces):
        diffs = []
        for name in TABLES:
            try:
                pd.testing.assert_frame_equal(before[path][name], after[path][name], check_exact=True)
            except AssertionError as err:
                diffs.append(f"{name}: {str(err).splitlines()[0:6]}")
        rows = {name: len(after[path][name]) for name in TABLES}
        status = "identical" if not diffs else "DIFFERS"
        print(f"{status:9} {Path(path).name}  rows {rows}  "
              f"{before[path]['seconds'] * 1e3:.0f} ms -> {after[path]['seconds'] * 1e3:.0f} ms")
        for d in diffs:
            print("    ", d)
        failures += bool(diffs)
    print(f"{len(traces) - failures} of {len(traces)} traces: all five tables identical to {args.ref}'s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
