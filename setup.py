"""The wheel carries the replay sets: notebooks/traces/ is copied into the package as
helpers/replay_sets/, so a notebook opened alone (Colab) replays from the installed package
(helpers/core/config.py falls back to it where the repository's folder is absent).

Everything else about the package is declared in pyproject.toml; MANIFEST.in puts the recordings
in an sdist, so a wheel built from the sdist carries them too."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
TRACES = HERE / "notebooks" / "traces"   # the replay sets, one folder per GPU
PACKAGED = Path("helpers") / "replay_sets"


def replay_files() -> list[Path]:
    """Every file of every GPU's replay set, as paths below notebooks/traces; a test's synthetic
    set (tools/synthetic_replay_set.py, git-ignored) never ships."""
    return sorted(p.relative_to(TRACES) for p in TRACES.rglob("*")
                  if p.is_file() and not p.relative_to(TRACES).parts[0].startswith("synthetic")
                  and "__pycache__" not in p.parts)


class build_py_with_replay_sets(build_py):
    """build_py, plus notebooks/traces/ copied to helpers/replay_sets/ in the build. An editable
    install reads the repository's own folder and gets no copy."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or not TRACES.is_dir():
            return
        for rel in replay_files():
            target = Path(self.build_lib) / PACKAGED / rel
            self.mkpath(str(target.parent))
            self.copy_file(str(TRACES / rel), str(target))

    def get_outputs(self, include_bytecode=True):
        outputs = super().get_outputs(include_bytecode)
        if getattr(self, "editable_mode", False) or not TRACES.is_dir():
            return outputs
        return outputs + [str(Path(self.build_lib) / PACKAGED / rel) for rel in replay_files()]


setup(cmdclass={"build_py": build_py_with_replay_sets})
