"""The README's stage recipe, followed on a temporary copy of the repository, and the guard that
keeps every stage list a query of the registry.

The recipe test copies helpers/, tools/ and the H200 replay set to a temporary folder, makes exactly
the edits the README's "Recipe: add a stage" names (one register() call in helpers/core/stages.py,
one @verdict function in helpers/chapters/claims.py), stands in for the recording command by copying
sdpa_flash's recordings under the new name, and checks, in a fresh Python process of the copy, that
the new stage is wherever the registry's facts put it: the queries, the recorders' plan, the sweep,
the verdict registry, the closing table and the replay. The expected values come from the copied
files themselves (their names, their raw events), not from the helpers under test.

The guard reads helpers/ and tools/ as text (an AST walk): a list, tuple or set literal naming two
or more registered stages is a hand-kept stage list, which must be a registry query instead
(`stages_where(fused=True)`). The only exception is what a verdict compares against: the `needs`
and `optional` of `@verdict(...)`, which name the stages a claim is about."""
from __future__ import annotations

import ast
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
H200 = ROOT / "notebooks" / "traces" / "h200"
NEW, LIKE = "sdpa_flash_again", "sdpa_flash"
SCANNED = ("helpers", "tools")


def registered_names(root: Path) -> set[str]:
    """The stage names registered in `root`'s helpers/core/stages.py, read from its source: the
    first argument of every Stage(...) call."""
    tree = ast.parse((root / "helpers" / "core" / "stages.py").read_text())
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Stage"
            and node.args and isinstance(node.args[0], ast.Constant)}


def literal_stage_lists(root: Path, names: set[str]) -> list[str]:
    """Every list, tuple or set literal under root/helpers and root/tools that names two or more
    stages, as 'path:line: names', but the stages a @verdict(...) compares against."""
    found = []
    for folder in SCANNED:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            exempt = {id(kw.value) for node in ast.walk(tree) if isinstance(node, ast.Call)
                      and getattr(node.func, "id", getattr(node.func, "attr", "")) == "verdict"
                      for kw in node.keywords if kw.arg in ("needs", "optional")}
            for node in ast.walk(tree):
                if isinstance(node, (ast.List, ast.Tuple, ast.Set)) and id(node) not in exempt:
                    hits = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in names]
                    if len(hits) >= 2:
                        found.append(f"{path.relative_to(root)}:{node.lineno}: {', '.join(hits)}")
    return found


def test_no_hand_kept_stage_list():
    names = registered_names(ROOT)
    assert {"naive", "sdpa_flash", "flex"} <= names   # the scan reads the registry it guards
    assert literal_stage_lists(ROOT, names) == []


def test_the_guard_catches_a_planted_list(tmp_path):
    names = registered_names(ROOT)
    for folder in SCANNED:
        (tmp_path / folder).mkdir()
    planted = tmp_path / "helpers" / "planted.py"
    planted.write_text('FUSED = ("sdpa_efficient", "sdpa_flash")\n'
                       'ONE = ["naive"]\n'                      # one name is a reference, not a list
                       '@verdict("inplace", needs=("naive", "sdpa_math"))\n'
                       'def f(a, b, c): return [("flex", "flex_sliding")]\n')
    assert literal_stage_lists(tmp_path, names) == ["helpers/planted.py:1: sdpa_efficient, sdpa_flash",
                                                    "helpers/planted.py:4: flex, flex_sliding"]


def dry_run_plan(root: Path, env: dict | None = None) -> dict[tuple[str, str], list[str]]:
    """tools/record_all.py --dry-run, read back: (step, "stages" or a fact) -> its stages."""
    out = subprocess.run([sys.executable, "tools/record_all.py", "--dry-run"], cwd=root, env=env,
                         capture_output=True, text=True, check=True, timeout=300).stdout
    lines, step = {}, None
    for line in out.splitlines():
        if line.startswith("== "):
            step = line[3:].split(":")[0]
            lines[(step, "command")] = line.split(": ", 1)[1].split()
        elif step and ": " in line:
            fact, stages = line.strip().split(": ", 1)
            lines[(step, fact.split(" ")[0])] = stages.split(", ")
    return lines


def test_the_recording_plan_is_the_registry():
    """record_all's plan: each recorder is handed the stages whose facts mark them, read from the
    registry's source (the Stage(...) calls and their keywords, the dataclass defaults)."""
    tree = ast.parse((ROOT / "helpers" / "core" / "stages.py").read_text())
    defaults = {n.target.id: ast.literal_eval(n.value) for c in tree.body if isinstance(c, ast.ClassDef)
                and c.name == "Stage" for n in c.body if isinstance(n, ast.AnnAssign) and n.value is not None
                and isinstance(n.value, ast.Constant)}
    facts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Stage" and node.args:
            given = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
            facts[node.args[0].value] = defaults | given
    having = lambda fact: [s for s, f in facts.items() if f[fact]]  # noqa: E731
    plan = dry_run_plan(ROOT)
    assert plan[("record", "stages")] == list(facts) and plan[("record", "swept")] == having("swept")
    assert plan[("record", "command")] == ["record.py", "--sweep", "--stages", *facts]
    assert plan[("timers", "stages")] == list(facts) and plan[("timers", "swept")] == having("swept")
    assert plan[("timers", "has_training")] == having("has_training")
    assert plan[("ncu", "stages")] == having("has_ncu") and plan[("ncu", "ncu_swept")] == having("ncu_swept")
    assert plan[("training", "stages")] == having("has_training")
    assert plan[("training", "training_ncu")] == having("training_ncu")
    assert plan[("training", "snapshot")] == having("snapshot")
    assert plan[("decode", "stages")] == having("decodes")
    assert [step for step, what in plan if what == "command"] == [
        "record", "timers", "ncu", "ceilings", "training", "hopper", "own_model", "smem_cliff", "decode"]
    assert plan[("hopper", "stages")] == having("has_ncu") and plan[("hopper", "training_ncu")] == having("training_ncu")


# --- the stage recipe, on a copy ------------------------------------------------------------------

REGISTER = f'''
register(Stage(
    "{NEW}", "SDPA, flash backend, again", "the flash backend once more, under another name",
    sdpa_forward, STAGES["{LIKE}"].requirement, sdpa_backend="FLASH_ATTENTION",
    guess_kinds=("attention",), has_training=False, training_ncu=False, fused=True,
    short="again", colour=KIND_COLORS["attention"], symbol="diamond-open",
    lesson="the same FlashAttention-2 kernel under another name",
    lesson_claim="one fused FlashAttention-2 kernel"))

'''
VERDICT = f'''

@verdict("{NEW}", needs=("{LIKE}",))
def flash_again_verdicts(again: Profile, flash: Profile) -> list[Verdict]:
    return [single_kernel(again, "FlashAttention-2")]
'''
# what the copy reports, from a fresh process that imports the copy's helpers
PROBE = textwrap.dedent(f'''
    import json, subprocess, sys
    import helpers
    from helpers import claims, closing_stages, profile_stage, profile_stages, recorded_shapes, tables
    from helpers.core import stages as registry
    from helpers.views.verdicts import VERDICTS
    sys.path.insert(0, "tools")
    import record, record_ncu, record_training
    NEW = {NEW!r}
    profiles = profile_stages(closing_stages())
    revealed = claims.revealed(profiles)
    glance = tables.at_a_glance(profiles, revealed)
    new, like = profiles[NEW].summary(), profiles[{LIKE!r}].summary()
    print(json.dumps({{
        "helpers": helpers.__file__,
        "queries": {{fact: NEW in registry.stages_where(**{{fact: True}})
                    for fact in ("swept", "has_ncu", "ncu_swept", "has_training", "training_ncu", "fused",
                                 "in_article", "snapshot", "dispatched")}},
        "pinned_fused": NEW in registry.PINNED_FUSED,
        "sweep_chart": NEW in registry.stages_where(swept=True, dispatched=False, repeats=None),
        "recorders": {{"record": NEW in record.SWEEP_STAGES, "ncu": NEW in record_ncu.STAGES_AT_ARTICLE_SHAPE,
                      "ncu_sweep": NEW in record_ncu.SWEEP_STAGES, "training": NEW in record_training.NCU_STAGES}},
        "judge": [VERDICTS[NEW].needs, VERDICTS[NEW].judge.__name__] if NEW in VERDICTS else None,
        "closing": NEW in closing_stages(),
        "shapes": sorted(s.key for s in recorded_shapes(NEW)),
        "claims": [[v.claim, v.holds] for v in revealed.get(NEW, [])],
        "check": claims.check(NEW, profiles)["verdict"].tolist(),
        "glance": {{c: str(glance.loc[NEW, c]) for c in ("the chapter's lesson", "verdict from the trace", "GPU µs")}},
        "numbers": [[new["gpu_time_us"], new["kernels"]], [like["gpu_time_us"], like["kernels"]]],
        "stage": profiles[NEW].stage,
    }}))
''')


def recipe_files() -> list[str]:
    """The repository files the README's stage recipe says to edit, in its order."""
    text = README.read_text()
    recipe = text[text.index("## Recipe: add a stage"):]
    recipe = recipe[:recipe.index("\n## ", 3)]
    return list(dict.fromkeys(re.findall(r"`((?:helpers|tools|notebooks|benchmarks)/[\w/.-]+\.(?:py|ipynb|sh))`",
                                         recipe))), recipe


def raw_forward(path: Path) -> tuple[float, int]:
    """GPU time and kernels of the last profiler step, read from the raw trace (conftest's plain
    loops: the GPU events whose launch lies in the step)."""
    from conftest import raw_last_step, raw_per_step
    gpu_events, _, events = raw_last_step(path)
    return raw_per_step(events)[-1][0], sum(e["cat"] == "kernel" for e, _ in gpu_events)


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """The repository's code and the H200 replay set, copied; the recipe's edits made on it."""
    root = tmp_path_factory.mktemp("repo")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in SCANNED:
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    shutil.copytree(H200, root / "notebooks" / "traces" / "h200")
    shutil.copy(README, root / "README.md")
    # 1. helpers/core/stages.py: one register() call, above the queries at the end of the file
    stages = root / "helpers" / "core" / "stages.py"
    text = stages.read_text()
    marker = text.index("# --- the stage lists")
    stages.write_text(text[:marker] + REGISTER.lstrip("\n") + text[marker:])
    # 2. helpers/chapters/claims.py: its verdicts, one decorated function
    claims = root / "helpers" / "chapters" / "claims.py"
    claims.write_text(claims.read_text() + VERDICT)
    # 3. the recording command, stood in for: sdpa_flash's recordings under the new name (its
    # traces at every recorded shape, its counters at the article's shape)
    made = []
    replay = root / "notebooks" / "traces" / "h200"
    for path in sorted(replay.glob(f"{LIKE}__*.json.gz")):
        with gzip.open(path, "rt") as f:
            document = json.load(f)
        document["provenance"]["stage"] = NEW
        target = path.with_name(path.name.replace(f"{LIKE}__", f"{NEW}__", 1))
        with gzip.open(target, "wt") as f:
            json.dump(document, f)
        made.append(target)
    for path in sorted((replay / "ncu").glob(f"{LIKE}__*.csv")):
        shutil.copy(path, path.with_name(path.name.replace(f"{LIKE}__", f"{NEW}__", 1)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTN_PROFILED_")}
    env |= {"PYTHONPATH": str(root), "ATTN_PROFILED_MODE": "replay",
            "ATTN_PROFILED_CACHE": str(root / "cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return root, made, json.loads(done.stdout.strip().splitlines()[-1])


def test_the_recipe_names_at_most_three_files_and_one_command():
    files, recipe = recipe_files()
    assert files[:2] == ["helpers/core/stages.py", "helpers/chapters/claims.py"]
    assert len(files) <= 3 and all((ROOT / f).exists() for f in files)
    assert "python tools/record_all.py" in recipe


def test_the_copy_edits_only_the_files_the_recipe_names(copy):
    root, made, report = copy
    assert Path(report["helpers"]).resolve().is_relative_to(root.resolve())   # the copy's helpers ran
    changed = sorted(str(p.relative_to(root)) for folder in SCANNED for p in (root / folder).rglob("*.py")
                     if (ROOT / p.relative_to(root)).read_bytes() != p.read_bytes())
    assert changed == sorted(recipe_files()[0][:2])


def test_the_new_stage_is_in_each_query_its_facts_name(copy):
    _, _, report = copy
    assert report["queries"] == {"swept": True, "has_ncu": True, "ncu_swept": False, "has_training": False,
                                 "training_ncu": False, "fused": True, "in_article": False, "snapshot": False,
                                 "dispatched": False}
    assert report["pinned_fused"] and report["sweep_chart"]
    assert report["recorders"] == {"record": True, "ncu": True, "ncu_sweep": False, "training": False}


def test_the_recording_plan_gives_it_to_the_recorders_its_facts_name(copy):
    root, _, _ = copy
    lines = dry_run_plan(root, {**os.environ, "PYTHONPATH": str(root)})
    assert NEW in lines[("record", "stages")] and NEW in lines[("record", "swept")]
    assert NEW in lines[("ncu", "stages")] and NEW not in lines[("ncu", "ncu_swept")]
    assert NEW not in lines[("training", "stages")] and NEW not in lines[("training", "snapshot")]


def test_its_recordings_replay_and_its_verdicts_reach_the_closing_table(copy):
    _, made, report = copy
    keys = sorted(p.name.split("__")[1].removesuffix(".json.gz") for p in made)
    assert report["shapes"] == keys and report["closing"] and report["stage"] == NEW
    assert report["judge"] == [[LIKE], "flash_again_verdicts"]
    # its one claim, judged from its own trace: one kernel, FlashAttention-2's
    gpu_us, kernels = raw_forward(next(p for p in made if "_s1024_d64_" in p.name))
    assert report["claims"] == [["one fused FlashAttention-2 kernel does the whole forward", kernels == 1]]
    assert report["check"] == (["holds"] if kernels == 1 else [f"differs: {kernels} kernels from FlashAttention-2"])
    assert report["numbers"][0] == report["numbers"][1] and report["numbers"][0][1] == kernels
    assert report["numbers"][0][0] == pytest.approx(gpu_us, rel=1e-6)
    glance = report["glance"]
    assert glance["the chapter's lesson"] == "the same FlashAttention-2 kernel under another name"
    assert glance["verdict from the trace"].startswith("holds: " if kernels == 1 else "differs: ")
    assert float(glance["GPU µs"]) == round(gpu_us, 1)


def test_the_copy_keeps_no_hand_kept_stage_list(copy):
    root, _, _ = copy
    names = registered_names(root)
    assert NEW in names and literal_stage_lists(root, names) == []


# --- the chapter recipe: a notebook, a toc line and one module found by itself ---------------------

CHAPTER = '''"""A chapter of its own (the README's chapter recipe, followed by tests/test_recipes.py)."""


def busiest(table):
    """The row with the most GPU time."""
    return table.sort_values("GPU µs").iloc[-1]
'''


def test_a_new_chapter_module_is_public_and_on_the_api_page_with_no_other_edit(tmp_path):
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "helpers", tmp_path / "helpers", ignore=ignore)
    (tmp_path / "book").mkdir()
    shutil.copytree(ROOT / "book" / "_ext", tmp_path / "book" / "_ext", ignore=ignore)
    shutil.copy(ROOT / "book" / "api.md", tmp_path / "book" / "api.md")
    # the recipe's module: the one file under helpers/ it adds
    (tmp_path / "helpers" / "chapters" / "my_chapter.py").write_text(CHAPTER)
    probe = ("import json, helpers; m = helpers.my_chapter; "
             "print(json.dumps([m.__name__, 'my_chapter' in helpers.__all__, m.busiest.__doc__]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTN_PROFILED_")}
    env |= {"PYTHONPATH": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == ["helpers.chapters.my_chapter", True, "The row with the most GPU time."]
    # the API page's source as Sphinx reads it (book/_ext/api_docs.py's source-read), in the copy
    probe = ("import sys; sys.path.insert(0, 'book/_ext'); import api_docs, pathlib; "
             "print(api_docs.expand(pathlib.Path('book/api.md').read_text(), pathlib.Path('.')))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ".. automodule:: helpers.chapters.my_chapter\n   :members:" in done.stdout
    assert ".. automodules::" not in done.stdout
