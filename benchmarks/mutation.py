"""Mutation testing of what tells the reader something: the verdicts (claims, compiled, flex,
hub_flash), the kernel-name decoders, the GPU breakdown and the occupancy calculator, with mutmut
run against the fast tests only.

    python benchmarks/mutation.py                 # this checkout
    python benchmarks/mutation.py --commit b586de6 # another commit (its own paths and tests)

It copies the commit's tree to a scratch folder (mutmut writes mutants/ beside the code), writes
mutmut's configuration there, runs `mutmut run`, and prints the score per module: killed /
(killed + survived + timeout + suspicious), over the mutants of the functions that decide what the
reader is told (every function of the decoders, the breakdown and the calculator; the verdict
functions of the four chapter modules). The survivors are listed for reading (`mutmut show NAME` in
the scratch folder shows each diff). Results: benchmarks/results/mutation.md.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# module (as the layout names it) -> (file at the commit, functions that are mutated; None: all)
VERDICTS = {"claims": None,  # claims.py is verdicts throughout (and their tables)
            "compiled": ["verdict_list", "_between_gemms", "_kernels"],
            "flex": ["verdict_list", "sliding_verdict_list", "gap_closes", "template_kernel"],
            "hub_flash": ["verdict_list", "_kernel", "transposes"]}
LAYOUTS = {  # the paths before and after issue 19's layout
    "layout": {"claims": "helpers/chapters/claims.py", "compiled": "helpers/chapters/compiled.py",
               "flex": "helpers/chapters/flex.py", "hub_flash": "helpers/chapters/hub_flash.py",
               "names": "helpers/core/names/*", "flash decoder": "helpers/core/names/flash.py",
               "breakdown": "helpers/breakdown/core.py",
               "breakdown views": "helpers/breakdown/views.py", "calculator": "helpers/occupancy/calculator.py"},
    "before": {"claims": "helpers/pages/claims.py", "compiled": "helpers/pages/compiled.py",
               "flex": "helpers/pages/flex.py", "hub_flash": "helpers/pages/hub_flash.py",
               "names": "helpers/profiling/names/*", "flash decoder": "helpers/profiling/names/flash.py",
               "breakdown": "helpers/profiling/breakdown.py",
               "breakdown views": "helpers/pages/breakdown.py", "calculator": "helpers/occupancy/calculator.py"},
}
# the fast tests: no book build, no browser, no notebook executed, no server started, no sweep of
# every recording (those run in the suite; here each mutant reruns the tests that reach it)
FAST = ["tests/test_claims_raw.py", "tests/test_page_verdicts_raw.py", "tests/test_page_verdicts_text.py",
        "tests/test_lessons.py",
        "tests/test_compiled_flex.py", "tests/test_hub.py", "tests/test_kernel_names.py",
        "tests/test_occupancy.py", "tests/test_own_traces.py"]
DESELECT = ("not glues and not notebook_runs and not live and not profile_code and not progress_bar"
            " and not recorded_trace and not kineto_occupancy_in_recorded and not sweep_matches_driver"
            " and not chapters_guess and not experiment and not own_model and not load_the_same"
            " and not through_load_trace and not local_kernel and not LOCAL_KERNELS and not hub_unreachable")
ALSO_COPY = ["notebooks/traces", "benchmarks/results", "tools", "requirements.txt"]


def tree(commit: str | None, into: Path) -> None:
    if commit is None:
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                               capture_output=True, check=True).stdout.decode().split("\0")
        for f in filter(None, files):
            if (ROOT / f).is_file():
                (into / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / f, into / f)
    else:
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def configure(work: Path, modules: list[str], tests: list[str], deselect: str) -> dict:
    layout = LAYOUTS["layout" if (work / "helpers" / "chapters").is_dir() else "before"]
    layout = {m: p for m, p in layout.items() if m in modules}
    tests = [t for t in tests if (work / t).exists()]
    config = "\n".join([
        "", "[tool.mutmut]",
        'source_paths = ["helpers"]',
        f"only_mutate = {json.dumps(list(layout.values()))}",
        f"also_copy = {json.dumps(ALSO_COPY)}",
        f'pytest_add_cli_args = {json.dumps(["-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-x", "-m", "not gpu and not browser", "-k", deselect])}',
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        'process_isolation = "fork"', ""])
    with open(work / "pyproject.toml", "a") as f:
        f.write(config)
    return layout


def module_of(layout: dict, source: str) -> str | None:
    # a file named on its own (the flash decoder) before a folder's pattern (names/*) that holds it
    exact = [m for m, pattern in layout.items() if source == pattern]
    if exact:
        return exact[0]
    for module, pattern in layout.items():
        if Path(source).match(pattern):
            return module
    return None


def counted(module: str, mutant: str) -> bool:
    functions = VERDICTS.get(module)
    if functions is None:
        return True
    # mutmut names a mutant <module path>.x_<function>__mutmut_<n> (methods: xǁClassǁmethod)
    m = re.search(r"\.x_(\w+?)__mutmut_\d+$", mutant)
    return bool(m) and m.group(1) in functions


def dotted(pattern: str) -> str:
    """helpers/chapters/compiled.py -> helpers.chapters.compiled; helpers/core/names/* -> helpers.core.names.*"""
    return pattern.removesuffix(".py").replace("/", ".")


def globs(layout: dict) -> list[str]:
    """mutmut's mutant-name patterns for the counted functions alone (compiled, flex and hub_flash are
    mostly tables: mutating their every function would spend hours on mutants that are not counted)"""
    out = []
    for module, pattern in layout.items():
        functions = VERDICTS.get(module)
        whole = dotted(pattern) if pattern.endswith("*") else f"{dotted(pattern)}.*"  # names/*: __init__'s too
        out += [f"{dotted(pattern)}.x_{f}__mutmut_*" for f in functions] if functions else [whole]
    return out


def unrun(work: Path, layout: dict) -> list[str]:
    """the counted mutants of an earlier, stopped run that have no result yet (mutmut reruns every
    mutant named on its command line, so a resumed run names only these)"""
    names = []
    for meta in (work / "mutants").rglob("*.py.meta"):
        source = str(meta.relative_to(work / "mutants")).removesuffix(".meta")
        module = module_of(layout, source)
        if module is None:
            continue
        names += [m for m, code in json.loads(meta.read_text())["exit_code_by_key"].items()
                  if code is None and counted(module, m)]
    return names


def codes(work: Path, layout: dict) -> dict[str, tuple[str, int | None]]:
    """mutant -> (module, mutmut's exit code or None) for the counted mutants of a run's folder."""
    out = {}
    for meta in (work / "mutants").rglob("*.py.meta"):
        source = str(meta.relative_to(work / "mutants")).removesuffix(".meta")
        module = module_of(layout, source)
        if module is None:
            continue
        for mutant, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            if counted(module, mutant):
                out[mutant] = (module, code)
    return out


def function_of(mutant: str) -> str:
    return mutant.rsplit("__mutmut_", 1)[0]


def over(older: dict, newer: dict) -> dict:
    """`newer`'s results over `older`'s: mutant by mutant, or for a whole function where `newer` judged
    all of its mutants (its code changed since, so mutmut numbered its mutants afresh)."""
    judged_whole = {function_of(m) for m in newer} - {function_of(m) for m, (_, c) in newer.items() if c is None}
    merged = {m: r for m, r in older.items() if function_of(m) not in judged_whole}
    merged |= {m: r for m, r in newer.items() if r[1] is not None or m not in merged}
    return merged


def scores(work: Path, layout: dict, base: list[Path] | None = None) -> tuple[dict, dict]:
    """Counts per module and the survivors; with `base` (earlier runs' folders, oldest first), each
    later run's results stand over the earlier ones' and this folder's over them all."""
    results = {}
    for folder in [*(base or []), work]:
        results = over(results, codes(folder, layout))
    by_module: dict[str, Counter] = defaultdict(Counter)
    survivors: dict[str, list[str]] = defaultdict(list)
    status = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
              36: "timeout", 24: "timeout", -24: "timeout", 152: "timeout", 255: "timeout", None: "not checked"}
    for mutant, (module, code) in sorted(results.items()):
        s = status.get(code, "suspicious")
        by_module[module][s] += 1
        if s == "survived":
            survivors[module].append(mutant)
    return by_module, survivors


def _functions(text: str) -> dict[str, str]:
    """Each function of a mutmut-mutated file by name (mutmut writes every mutant as its own function)."""
    return {m.group(2): m.group(0) for m in re.finditer(
        r"^( *)def (\w+)\(.*?(?=^\1?(?:def |class |@|\S)|\Z)", text, re.S | re.M)}


def diff(work: Path, mutant: str, cache: dict = {}) -> list[str]:
    """The lines a mutant changes: '- original' then '+ mutated'."""
    module, fn = mutant.rsplit(".", 1)
    path = work / "mutants" / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = work / "mutants" / module.replace(".", "/") / "__init__.py"
    if path not in cache:
        cache[path] = _functions(path.read_text())
    fn = fn.split("ǁ")[-1]
    orig, mut = cache[path].get(fn.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"), cache[path].get(fn)
    if orig is None or mut is None:
        return []
    import difflib
    return [line.strip() for line in difflib.unified_diff(orig.splitlines()[1:], mut.splitlines()[1:], lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def wording(lines: list[str]) -> bool:
    """A mutant that only re-cases a string or wraps it in XX (mutmut's string operators): the words
    a reader reads change, no number, name or verdict does."""
    old = " ".join(line[1:] for line in lines if line.startswith("-"))
    new = " ".join(line[1:] for line in lines if line.startswith("+"))
    return bool(old) and old != new and new.replace("XX", "").lower() == old.lower()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commit", help="a commit to test instead of this checkout")
    parser.add_argument("--keep", help="run in this folder and keep it (default: a scratch folder)")
    parser.add_argument("--json", help="write the scores and survivors here")
    parser.add_argument("--tests", default=",".join(FAST), help="test files, comma-separated")
    parser.add_argument("--deselect", default=DESELECT, help="a -k expression the tests run under")
    parser.add_argument("--report", action="store_true", help="only report on the run kept in --keep")
    parser.add_argument("--base", help="earlier runs' kept folders, comma-separated, oldest first: report them with each later run's results over them")
    parser.add_argument("--rerun", help="a --json file of an earlier run: run only its survivors (with today's tests)")
    parser.add_argument("--survivors", action="store_true",
                        help="print each survivor's diff, marked W where it only rewords a string")
    parser.add_argument("--counted-only", action="store_true",
                        help="mutate only the counted functions (compiled, flex, hub_flash: their verdict functions; elsewhere every function); "
                             "in a kept folder, run only the counted mutants that have no result yet")
    parser.add_argument("--modules", default=",".join(LAYOUTS["layout"]),
                        help="the modules to mutate, comma-separated (default: all of them)")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="mutation-"))
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "helpers").exists():
        tree(args.commit, work)
    modules = args.modules.split(",")
    layout = configure(work, modules, args.tests.split(","), args.deselect) if "[tool.mutmut]" not in (work / "pyproject.toml").read_text() else \
        {m: p for m, p in LAYOUTS["layout" if (work / "helpers" / "chapters").is_dir() else "before"].items()
         if m in modules}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CI")} | {"ATTN_PROFILED_MODE": "replay"}
    mutmut = Path(sys.executable).parent / "mutmut"
    if not args.report:
        names = []
        if args.rerun:
            names = [n for module in layout for n in json.loads(Path(args.rerun).read_text())["survivors"].get(module, [])]
        elif args.counted_only:
            names = unrun(work, layout) if (work / "mutants").is_dir() else globs(layout)
            if not names:
                print("every counted mutant has a result")
        if names or not (args.counted_only or args.rerun):
            subprocess.run([str(mutmut), "run", "--max-children", os.environ.get("MUTATION_CHILDREN", "2"), *names],
                           cwd=work, env=env)
    by_module, survivors = scores(work, layout, [Path(b) for b in args.base.split(",")] if args.base else None)
    print(f"\nmutation scores in {work} ({args.commit or 'this checkout'})")
    print(f"{'module':<16} {'killed':>7} {'survived':>9} {'timeout':>8} {'no tests':>9} {'not run':>8} {'score':>7}")
    for module in layout:
        c = by_module.get(module, Counter())
        judged = c["killed"] + c["survived"] + c["timeout"] + c["suspicious"]
        score = f"{100 * c['killed'] / judged:.1f}%" if judged else "-"
        print(f"{module:<16} {c['killed']:>7} {c['survived']:>9} {c['timeout']:>8} {c['no tests']:>9} "
              f"{c['not checked']:>8} {score:>7}")
    if args.survivors:
        for module, names in survivors.items():
            print(f"\n# {module}: {len(names)} survivors, {sum(wording(diff(work, n)) for n in names)} rewording a string")
            for name in names:
                lines = diff(work, name)
                print(f"{'W' if wording(lines) else ' '} {name.rsplit('.', 1)[1]}: " + " | ".join(x[:160] for x in lines))
    if args.json:
        Path(args.json).write_text(json.dumps({"commit": args.commit, "work": str(work),
                                               "scores": {m: dict(c) for m, c in by_module.items()},
                                               "survivors": survivors}, indent=1))


if __name__ == "__main__":
    main()
