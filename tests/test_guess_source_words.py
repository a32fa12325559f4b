"""A guess's `source` is the subject of "<source> says: ..." under the reader's guess (guess.js),
so it must be singular: issue 38 found "the counters says". Read from every notebook's code."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = re.compile(r"""source\s*=\s*["']([^"']+)["']""")


def test_every_guess_source_reads_as_a_singular_subject():
    found = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                for source in SOURCE.findall("".join(cell["source"])):
                    found.setdefault(source, []).append(path.name)
    assert found, "no guess names its source"
    plural = {s: p for s, p in found.items()
              if re.search(r"[a-z]s$", s.split()[-1]) and not s.split()[-1].endswith("ss")}
    assert not plural, f"'<source> says' would read wrong for: {plural}"
