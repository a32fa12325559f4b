"""Copy one GPU's replay set under a new GPU name, every provenance marked SYNTHETIC:

    python tools/synthetic_replay_set.py [--source h200] [--name synthetic_h200copy] [--root DIR]

The copy is no measurement: it checks that a GPU is chosen by configuration alone. Select it with
ATTN_PROFILED_REPLAY_GPU=<name> (and ATTN_PROFILED_REPLAY_DIR=<root> where it is not under
notebooks/traces); every page then reads it, and its banners name "SYNTHETIC copy of <GPU>".
Every device name the recordings hold (the provenance of each trace, of ncu, of the ceilings, of
the training chapter's memory.json, Kineto's deviceProperties, ncu's CSV device column) is
replaced; binary files (ncu's reports, memory snapshots) are copied as they are. A SYNTHETIC.md
in the folder says what it is. notebooks/traces/synthetic*/ is git-ignored: it never reaches the
repository or the published book's replay set.
"""
from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from helpers.core.replay_set import ReplaySet  # noqa: E402

PREFIX = "SYNTHETIC copy of "


def _mark(value, device: str, marked: str):
    if isinstance(value, dict):
        return {k: _mark(v, device, marked) for k, v in value.items()}
    if isinstance(value, list):
        return [_mark(v, device, marked) for v in value]
    if isinstance(value, str) and value == device:
        return marked
    return value


def make_synthetic(source: ReplaySet, name: str, root: Path | None = None) -> ReplaySet:
    """Copy `source` to `name` under `root` (default: the source's root), every device name
    marked as `PREFIX + device`. Returns the new set."""
    device = source.identity.device_name
    marked = PREFIX + device
    target = ReplaySet(name, root if root is not None else source.root)
    if target.folder.exists():
        shutil.rmtree(target.folder)
    for path in sorted(source.folder.rglob("*")):
        out = target.folder / path.relative_to(source.folder)
        if path.is_dir():
            continue
        out.parent.mkdir(parents=True, exist_ok=True)
        if path.name.endswith(".json.gz"):
            with gzip.open(path, "rt") as f:
                data = _mark(json.load(f), device, marked)
            with gzip.open(out, "wt", compresslevel=1) as f:
                json.dump(data, f)
        elif path.suffix == ".json":
            out.write_text(json.dumps(_mark(json.loads(path.read_text()), device, marked), indent=1))
        elif path.suffix == ".csv":
            out.write_text(path.read_text().replace(f'"{device}"', f'"{marked}"'))
        else:
            shutil.copyfile(path, out)
    (target.folder / "SYNTHETIC.md").write_text(
        f"# {name}: a synthetic replay set\n\nA copy of {source.folder.name}'s recordings ({device}), every "
        f"device name marked \"{marked}\", made by tools/synthetic_replay_set.py to check that a GPU is "
        f"chosen by configuration alone. It measures nothing; never publish it.\n")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", default="h200", help="the replay set to copy (a GPU slug)")
    parser.add_argument("--name", default="synthetic_h200copy", help="the new set's GPU name")
    parser.add_argument("--root", type=Path, default=None, help="where to write it (default: notebooks/traces)")
    args = parser.parse_args(argv)
    target = make_synthetic(ReplaySet(args.source), args.name, args.root)
    print(f"wrote {target.folder} ({target.identity.device_name}); read it with "
          f"ATTN_PROFILED_REPLAY_GPU={target.gpu}" + (f" ATTN_PROFILED_REPLAY_DIR={args.root}" if args.root else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
