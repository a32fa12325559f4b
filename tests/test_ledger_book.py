"""One value per quantity (issue 29's ledger), read from the BUILT book: every page's tables are
crawled, and each cell whose column names a quantity of the ledger (helpers/core/quantities.py,
the glossary's "ledger of quantities") is collected as (stage, shape, quantity) -> value shown. A
quantity shown with two values anywhere in the book fails.

Columns are mapped to the ledger's quantities here, by hand, with the factor that turns the shown
unit into the quantity's base unit: a new column that shows a ledger quantity under a known name is
crawled without more code. Two values are the same when they agree to the coarser of the two shown
precisions (36.8 and 36.78 GFLOP agree). Rows of another shape (a sweep's other seq, a kernel table's
rows grouped under their stage) are left out: the shape is the book's default shape. Glued prose
figures are checked against their tables by test_built_pages; this test is across pages.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

import test_built_pages as built
from conftest import BOOK_GROUP
from helpers import DEFAULT_SHAPE
from helpers.core.stages import STAGES as REGISTERED  # the stage lists: queries of the registry

pytestmark = BOOK_GROUP

STAGE_NAMES = tuple(REGISTERED)   # every registered stage
# column shown -> (the ledger's quantity of one forward at the default shape, factor to its base unit)
COLUMNS = {
    "GFLOP": ("executed FLOPs", 1e9), "executed GFLOP": ("executed FLOPs", 1e9),
    "forward GFLOP (ncu)": ("executed FLOPs", 1e9),
    "model GFLOP (4·B·H·S²·D/2)": ("model FLOPs", 1e9),
    "DRAM MB": ("forward DRAM bytes", 1e6), "forward MB": ("forward DRAM bytes", 1e6),
    "forward GB (ncu)": ("kernel DRAM bytes", 1e9),
    "FLOP/B": ("arithmetic intensity (forward DRAM bytes)", 1.0),
    "forward FLOP per kernel byte": ("arithmetic intensity (kernel DRAM bytes)", 1.0),
    "TFLOP/s": ("executed TFLOP/s", 1.0), "model TFLOP/s": ("model TFLOP/s", 1.0),
    "ncu µs": ("ncu time", 1e-6),
    "GPU µs": ("profiler GPU time", 1e-6), "profiler GPU µs": ("profiler GPU time", 1e-6),
    "GPU µs per forward": ("profiler GPU time", 1e-6),
    "do_bench µs": ("do_bench time", 1e-6),
    "kernels": ("kernel count", 1.0), "forward kernels": ("kernel count", 1.0),
    "GPU events": ("GPU event count", 1.0),
}


def _pages(html: Path) -> list[Path]:
    """Every page of the built book (chapters, the book's own pages), not Sphinx's generated ones."""
    pages = sorted(p for p in html.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)
    assert len(pages) >= 20, f"{html}: {len(pages)} pages"
    return pages


def _precision(text: str) -> float:
    """Half a unit of the last digit shown: 36.8 -> 0.05, 1,063 -> 0.5."""
    digits = text.replace(",", "").split(".")
    return 0.5 * 10 ** -(len(digits[1]) if len(digits) == 2 else 0)


def shown_values(html_pages) -> dict[tuple, list[tuple[str, str, float, float]]]:
    """(stage, shape, quantity) -> [(page, column, value in the base unit, its precision)]."""
    out = defaultdict(list)
    for path in html_pages:
        markup = path.read_text(encoding="utf-8")
        for rows in built.tables(markup):
            # a table of one row per stage: a stage on several rows is a table of its kernels or nodes
            named = [row.get("stage") or row.get("", "") for row in rows]
            for row in rows:
                if row.get("__group") not in (None, str(DEFAULT_SHAPE.seq)):
                    continue
                # another shape, or a figure of one kernel or one autograd node, not of the forward
                if any(k in row for k in ("seq", "shape", "#", "autograd node", "kernel")):
                    continue
                stage = row.get("stage") or row.get("", "")
                if stage not in STAGE_NAMES or named.count(stage) > 1:
                    continue
                for column, (quantity, factor) in COLUMNS.items():
                    text = row.get(column, "")
                    value = built.number(text)
                    if value is None:
                        continue
                    out[(stage, DEFAULT_SHAPE.key, quantity)].append(
                        (path.name, column, value * factor, _precision(text.strip()) * factor))
    return out


def conflicts(values: dict) -> list[str]:
    bad = []
    for key, shown in values.items():
        for i, (p1, c1, v1, e1) in enumerate(shown):
            for p2, c2, v2, e2 in shown[i + 1:]:
                if abs(v1 - v2) > max(e1, e2) * 1.0001 + 1e-12 * max(abs(v1), abs(v2)):
                    bad.append(f"{key[0]} {key[2]}: {p1} '{c1}' shows {v1:g}, {p2} '{c2}' shows {v2:g}")
    return bad


@pytest.fixture(scope="module")
def values(book_build):
    return shown_values(_pages(book_build / "html"))


def test_the_crawl_finds_the_ledgers_quantities_on_several_pages(values):
    pages = {p for shown in values.values() for p, *_ in shown}
    quantities = {k[2] for k in values}
    assert {"09_roofline.html", "11_training.html"} <= pages, pages
    assert {"executed FLOPs", "forward DRAM bytes", "kernel DRAM bytes", "profiler GPU time", "kernel count",
            "executed TFLOP/s"} <= quantities, quantities


def test_one_value_per_stage_shape_and_quantity(values):
    bad = conflicts(values)
    assert not bad, "one quantity, two values:\n" + "\n".join(bad)


def test_the_check_fails_where_two_pages_disagree():
    """The comparison itself: a value shown as 36.8 and 36.78 agrees, 14.1 against 17.8 does not."""
    same = {("naive", "k", "q"): [("a", "GFLOP", 36.8, 0.05), ("b", "executed GFLOP", 36.78, 0.005)]}
    assert not conflicts(same)
    two = {("naive", "k", "q"): [("a", "FLOP/B", 14.1, 0.05), ("b", "FLOP/B", 17.8, 0.05)]}
    assert conflicts(two) and "14.1" in conflicts(two)[0]
    assert re.search(r"naive q", conflicts(two)[0])
