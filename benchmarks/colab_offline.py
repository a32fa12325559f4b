"""Colab, played offline: a notebook opened alone installs the book's helpers and replays.

    python benchmarks/colab_offline.py [--notebook notebooks/02_inplace.ipynb] [--keep]

Colab's launch button opens one notebook, without the repository, in a kernel that has its own
torch, pandas and numpy. Here that kernel is a fresh virtual environment whose only packages are
this machine's (the project's virtual environment, as a read-only layer on its path) minus the
book's helpers, and minus plotly where a wheel of it lies on this machine (so that the `colab`
extra has something to install). Nothing is fetched from the network: pip runs with --no-index on
the local wheels (PIP_FIND_LINKS, /opt/pypi/files), git's `url.<origin>.insteadOf` points the
book's GitHub URL at a local git repository of the working tree, and a dead proxy catches any
other attempt. Two ways in:

- wheel:      `pip wheel --no-deps` builds the wheel from that repository; it is installed into
              the fresh environment with `pip install --no-index` (and its `colab` extra); the
              notebook's first cell then finds helpers and installs nothing;
- first cell: the fresh environment has no helpers; the notebook's own first cell runs its
              `%pip install "attention-profiled-helpers[colab] @ git+https://github.com/..."`,
              which clones (the local repository), builds and installs the package. Then the
              same notebook again, as a second session of the same machine would.

Each run executes the notebook alone in an empty folder with nbclient (ATTN_PROFILED_MODE=replay)
and compares every glued value with the same notebook executed in the repository. Writes
benchmarks/results/colab_offline.md and .json.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import yaml
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
LOCAL_WHEELS = [Path(p) for p in os.environ.get("PIP_FIND_LINKS", "").split() if Path(p).is_dir()] + \
    [p for p in (Path("/opt/pypi/files"),) if p.is_dir()]
PROBE = ("import json, sys, helpers\nfrom helpers.core import config\n"
         "print(json.dumps({'helpers': helpers.__file__, 'replay_root': str(config.replay_root()),"
         " 'prefix': sys.prefix}))")


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True, **kw)


def timed(fn, *args, **kw):
    start = time.perf_counter()
    out = fn(*args, **kw)
    return out, round(time.perf_counter() - start, 1)


# ------------------------------------------------------------------------------ the environment

def working_tree_repository(dest: Path) -> Path:
    """A git repository of the working tree as it is (tracked files and new ones not ignored), on
    branch main: what the book's GitHub repository would serve."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT).stdout.split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    run(["git", "init", "-q", "-b", "main"], cwd=dest)
    run(git + ["add", "-A"], cwd=dest)
    run(git + ["commit", "-q", "-m", "working tree"], cwd=dest)
    return dest


def top_level_names(site: Path, distribution: str) -> set[str]:
    """What a distribution installed at the top of site-packages (from its RECORD)."""
    names = set()
    for info in site.glob("*.dist-info"):
        if info.name.split("-")[0].lower().replace("_", "-") == distribution.lower().replace("_", "-"):
            names.add(info.name)
            for line in (info / "RECORD").read_text().splitlines():
                first = line.split(",")[0].split("/")[0]
                if first and not first.startswith(".."):
                    names.add(first)
    return names


def colab_layer(dest: Path, hide: list[str]) -> Path:
    """The packages Colab's image has: this machine's, as links, less the book's helpers, pip (the
    fresh environment has its own) and the distributions in `hide`."""
    site = Path(next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()))
    left_out = {n for d in ["attention-profiled-helpers", "pip", *hide] for n in top_level_names(site, d)}
    dest.mkdir()
    for entry in site.iterdir():
        if entry.name in left_out or entry.suffix in (".pth", ".egg-link") or entry.name.startswith("__editable__"):
            continue
        (dest / entry.name).symlink_to(entry)
    return dest


def isolated_builds() -> bool:
    """Whether pip can build the package in its isolated environment offline: a setuptools wheel
    lies among the local wheels. Elsewhere pip builds with the image's own setuptools."""
    return any(any(d.glob("setuptools-*.whl")) for d in LOCAL_WHEELS)


def fresh_venv(dest: Path, layer: Path) -> Path:
    run([sys.executable, "-m", "venv", dest])
    python = dest / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    if not isolated_builds():   # the venv's own old setuptools would hide the image's
        run([python, "-m", "pip", "uninstall", "-q", "-y", "setuptools"])
    (site / "colab_image.pth").write_text(f"{layer}\n")
    return python


def kernel(venv_python: Path, kernels: Path, name: str) -> KernelManager:
    spec = kernels / name
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv_python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": name, "language": "python"}))
    return KernelManager(kernel_name=name, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernels)]))


def offline_env(venv: Path, origin: Path, cache: Path) -> dict:
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ATTN_PROFILED_", "PYTHONPATH", "VIRTUAL_ENV", "PIP_", "GIT_CONFIG"))}
    dead = "http://127.0.0.1:9"   # nothing listens: any network access fails
    return env | {
        "PATH": f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": " ".join(map(str, LOCAL_WHEELS)),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_CACHE_DIR": str(cache / "pip"),
        **({} if isolated_builds() else {"PIP_NO_BUILD_ISOLATION": "0"}),
        "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.{origin.as_uri()}.insteadOf", "GIT_CONFIG_VALUE_0": url,
        "GIT_TERMINAL_PROMPT": "0",
        "http_proxy": dead, "https_proxy": dead, "HTTP_PROXY": dead, "HTTPS_PROXY": dead, "no_proxy": "", "NO_PROXY": "",
        "ATTN_PROFILED_MODE": "replay", "ATTN_PROFILED_CACHE": str(cache / "attention_profiled"),
    }


# ------------------------------------------------------------------------------ the notebook

def execute(notebook: Path, cwd: Path, env: dict, km: KernelManager | None = None) -> tuple[nbformat.NotebookNode, float]:
    nb = nbformat.read(notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(nb, timeout=900, kernel_name="python3", km=km,
                            resources={"metadata": {"path": str(cwd)}})
    start = time.perf_counter()
    try:
        client.execute(env=env)
    finally:
        if km is not None and km.has_kernel:   # nbclient shuts down only the kernels it started
            km.shutdown_kernel(now=True)
    return nb, round(time.perf_counter() - start, 1)


def glued(nb) -> dict:
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            name = o.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                out[name] = dict(o["data"])
    return out


def errors(nb) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for c in nb.cells if c.cell_type == "code"
            for o in c.get("outputs", []) if o["output_type"] == "error"]


def cell_seconds(cell) -> float | None:
    t = cell.metadata.get("execution", {})
    if "iopub.execute_input" in t and "shell.execute_reply" in t:
        parse = lambda s: dt.datetime.fromisoformat(s.replace("Z", "+00:00"))
        return round((parse(t["shell.execute_reply"]) - parse(t["iopub.execute_input"])).total_seconds(), 1)
    return None


def summary(nb, seconds: float, reference: dict) -> dict:
    probe = json.loads("".join(o.get("text", "") for o in nb.cells[-1].outputs).strip().splitlines()[-1])
    values = glued(nb)
    first = nb.cells[0]
    return {"seconds": seconds, "first_cell_seconds": cell_seconds(first),
            "first_cell_printed": "".join(o.get("text", "") for o in first.outputs).strip(),
            "errors": errors(nb), "glued": len(values), "same_glue": values == reference,
            "differing": sorted(k for k in set(values) | set(reference) if values.get(k) != reference.get(k)),
            **probe}


# ------------------------------------------------------------------------------ the runs

def reference_run(notebook: Path, tmp: Path) -> tuple[dict, dict]:
    """The notebook executed in the repository, in replay: its glued values and its summary."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTN_PROFILED_")} | {
        "ATTN_PROFILED_MODE": "replay", "ATTN_PROFILED_CACHE": str(tmp / "cache-repo")}
    nb, seconds = execute(notebook, ROOT / "notebooks", env)
    reference = glued(nb)
    assert reference and not errors(nb), errors(nb)
    return reference, summary(nb, seconds, reference)


def image(tmp: Path, report: dict) -> tuple[Path, Path]:
    """The local git repository the GitHub URL points at, and Colab's packages."""
    origin, report["origin_seconds"] = timed(working_tree_repository, tmp / "origin")
    hide = ["plotly"] if any(any(d.glob("plotly-7.1.0-*.whl")) for d in LOCAL_WHEELS) else []
    report["hidden_from_the_image"] = hide
    report["isolated_build"] = isolated_builds()
    return origin, colab_layer(tmp / "colab-image", hide)


def alone(notebook: Path, tmp: Path, name: str) -> Path:
    content = tmp / f"content-{name}"
    content.mkdir()
    shutil.copy2(notebook, content / notebook.name)
    return content / notebook.name


def by_the_first_cell(notebook: Path, tmp: Path, origin: Path, layer: Path, reference: dict,
                      again: bool = True) -> dict:
    """A fresh environment without helpers; the notebook's own first cell installs them from the
    (redirected) GitHub URL. Then, with `again`, the same notebook once more."""
    python, _ = timed(fresh_venv, tmp / "venv-cell", layer)
    env = offline_env(tmp / "venv-cell", origin, tmp / "cache-cell")
    probe = subprocess.run([python, "-c", "import helpers"], env=env, cwd=tmp, capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'helpers'" in probe.stderr, "the image must lack helpers"
    copy = alone(notebook, tmp, "cell")
    nb, seconds = execute(copy, copy.parent, env, kernel(python, tmp / "kernels", "colab-cell"))
    out = {"first_cell": summary(nb, seconds, reference)}
    site = Path(out["first_cell"]["helpers"]).parents[1]
    out["first_cell"]["installed"] = run([python, "-m", "pip", "list", "--path", site], env=env).stdout
    if again:
        nb, seconds = execute(copy, copy.parent, env, kernel(python, tmp / "kernels", "colab-again"))
        out["first_cell_again"] = summary(nb, seconds, reference)
    return out


def by_the_wheel(notebook: Path, tmp: Path, origin: Path, layer: Path, reference: dict, report: dict) -> dict:
    """`pip wheel --no-deps` from the repository, installed offline into a fresh environment; the
    notebook's first cell then finds helpers."""
    _, report["wheel_build_seconds"] = timed(run, [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                                                   "--no-build-isolation", "--no-index", origin, "-w", tmp / "dist"])
    [wheel] = (tmp / "dist").glob("*.whl")
    report["wheel_mib"] = round(wheel.stat().st_size / 2**20, 2)
    python, report["venv_seconds"] = timed(fresh_venv, tmp / "venv-wheel", layer)
    env = offline_env(tmp / "venv-wheel", origin, tmp / "cache-wheel")
    _, report["wheel_install_seconds"] = timed(
        run, [python, "-m", "pip", "install", "-q", "--no-index", f"attention-profiled-helpers[colab] @ {wheel.as_uri()}"],
        env=env)
    copy = alone(notebook, tmp, "wheel")
    nb, seconds = execute(copy, copy.parent, env, kernel(python, tmp / "kernels", "colab-wheel"))
    return summary(nb, seconds, reference)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebook", default="notebooks/02_inplace.ipynb")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    notebook = (ROOT / args.notebook).resolve()
    tmp = Path(tempfile.mkdtemp(prefix="colab_offline_"))
    report = {"notebook": notebook.name, "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "cpus": os.cpu_count(), "local_wheels": [str(p) for p in LOCAL_WHEELS],
              "load_average_before": round(os.getloadavg()[0], 1)}
    started = time.perf_counter()
    try:
        reference, report["repository"] = reference_run(notebook, tmp)
        origin, layer = image(tmp, report)
        report["wheel"] = by_the_wheel(notebook, tmp, origin, layer, reference, report)
        report |= by_the_first_cell(notebook, tmp, origin, layer, reference)
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    report["total_seconds"] = round(time.perf_counter() - started, 1)
    report["load_average_after"] = round(os.getloadavg()[0], 1)
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    report["cpu_seconds"] = round(sum(u.ru_utime + u.ru_stime for u in usage), 1)   # this process, kernels, pip

    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "colab_offline.json").write_text(json.dumps(report, indent=1) + "\n")
    (RESULTS / "colab_offline.md").write_text(markdown(report))
    print(markdown(report))
    runs = [report[k] for k in ("wheel", "first_cell", "first_cell_again")]
    return 0 if all(r["same_glue"] and not r["errors"] for r in runs) else 1


def markdown(r: dict) -> str:
    def row(name, s):
        return (f"| {name} | {s['seconds']} | {s['first_cell_seconds']} | {s['glued']} | "
                f"{'yes' if s['same_glue'] else 'NO: ' + ', '.join(s['differing'])} | {len(s['errors'])} | "
                f"`{s['replay_root']}` |")
    tmp = lambda s: s.replace(str(Path(tempfile.gettempdir())), "<tmp>").replace(str(ROOT), "<repository>")
    lines = [
        "# Colab, played offline (benchmarks/colab_offline.py)", "",
        f"{r['date']}, {r['cpus']} CPU cores (shared), notebook `{r['notebook']}` executed alone with nbclient, "
        "in replay. Nothing fetched from the network: pip with `--no-index` on this machine's wheels "
        f"({', '.join(r['local_wheels']) or 'none'}), the book's GitHub URL redirected to a local git "
        "repository of the working tree, a dead proxy for anything else. The fresh environment's packages: "
        f"this machine's, less helpers{' and ' + ', '.join(r['hidden_from_the_image']) if r['hidden_from_the_image'] else ''} "
        "(the `colab` extra installs what is missing).", "",
        f"- wheel: {r['wheel_mib']} MiB, built in {r['wheel_build_seconds']} s; installed offline in "
        f"{r['wheel_install_seconds']} s (fresh environment: {r['venv_seconds']} s)",
        f"- the working tree as a git repository: {r['origin_seconds']} s; pip's build of the git URL "
        f"{'isolated (setuptools from the local wheels)' if r['isolated_build'] else 'with the image setuptools'}",
        f"- all of it, the reference run included: {r['total_seconds']} s wall, {r['cpu_seconds']} s of CPU "
        f"(the machine's load average {r['load_average_before']} before, {r['load_average_after']} after: "
        "wall times on a loaded machine are inflated)", "",
        "| run | notebook (s) | first cell (s) | glued values | same as the repository's | errors | replay sets read from |",
        "|---|---|---|---|---|---|---|",
        row("repository (reference)", r["repository"]),
        row("wheel installed, then the notebook", r["wheel"]),
        row("first cell installs from the URL", r["first_cell"]),
        row("the same notebook again", r["first_cell_again"]), "",
        f"The first cell's install printed: `{r['first_cell']['first_cell_printed'] or '(nothing)'}`. "
        "In the repository it prints nothing.", "",
        "Installed by the first cell into the fresh environment:", "", "```",
        r["first_cell"]["installed"].strip(), "```", ""]
    return tmp("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
