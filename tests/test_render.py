"""The table renderer, on the tables the pages show (the replay set) and on made-up frames."""
import html
import re

import pandas as pd
import pytest

from helpers import claims, profile_stage, tables
from helpers.views.render import SHORT_NAME, html_table, install, meaningful_index, short_name
from helpers.views.verdicts import Verdict

ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
CELL = re.compile(r"<(td|th)[^>]*data-label=\"([^\"]*)\"[^>]*>(.*?)</\1>", re.S)
HEADER = re.compile(r"<th scope='col'[^>]*>(.*?)</th>")


def rendered(frame) -> str:
    """html_table's output without its line-break hints (<wbr>), which a reader never sees."""
    return html_table(frame).replace("<wbr>", "")


@pytest.fixture(scope="module")
def profiles():
    return {s: profile_stage(s, mode="replay", quiet=True)
            for s in ("naive", "inplace", "sdpa_math", "sdpa_efficient", "sdpa_flash", "sdpa_cudnn")}


def names_of(profiles) -> list[str]:
    return sorted({n for p in profiles.values() for n in p.kernels()["name"]})


def test_a_short_name_is_the_head_of_the_name(profiles):
    for name in names_of(profiles):
        short = short_name(name)
        literal = re.sub(r"^void\s+", "", name)
        if len(literal) <= SHORT_NAME:
            assert short == literal
            continue
        head = short.split("…")[0]
        assert literal.startswith(head) and len(head) <= SHORT_NAME, (name, short)
        closers = short.split("…")[1]
        # the brackets the cut left open are closed, innermost first
        opened = [c for c in head if c in "<(" ]
        assert len(closers) <= len(opened) and set(closers) <= {">", ")"}


def test_a_decoded_summary_in_a_kernel_column_stays_whole(profiles):
    from helpers.views.render import looks_like_a_name
    from helpers.core.names import decode
    for name in names_of(profiles):
        assert looks_like_a_name(name), name
        summary = decode(name).summary
        if ", " in summary.split("(")[0]:
            assert not looks_like_a_name(summary), summary
    long = [decode(n).summary for n in names_of(profiles) if len(decode(n).summary) > SHORT_NAME]
    frame = pd.DataFrame({"kernel": long})
    assert long and "ap-name" not in rendered(frame)


def test_no_meaningless_index_column():
    plain = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert not meaningful_index(plain)
    assert HEADER.findall(rendered(plain)) == ["a", "b"]
    named = plain.set_index("b")
    assert meaningful_index(named) and HEADER.findall(rendered(named)) == ["b", "a"]
    # labels that are not 0..n-1 mean something even without a name
    assert meaningful_index(plain.set_axis(["p", "q"]))


def test_every_cell_is_labelled_with_its_column(profiles):
    frame = tables.kernel_table(profiles["naive"])
    out = rendered(frame)
    headers = HEADER.findall(out)
    assert headers == ["#", *frame.columns]
    rows = ROW.findall(out.split("<tbody>")[1])
    assert len(rows) == len(frame)
    for row in rows:
        assert [label for _, label, _ in CELL.findall(row)] == headers


def test_long_kernel_names_are_short_in_the_cell_and_whole_behind_it(profiles):
    frame = tables.kernel_table(profiles["sdpa_flash"])
    out = rendered(frame)
    for name in frame["kernel"]:
        escaped = html.escape(name)
        if len(name) > SHORT_NAME:
            assert f"title=\"{escaped}\"" in out, "hover: the title holds the whole name"
            assert f"<code class='ap-full-name'>{escaped}</code>" in out, "tap: the disclosure holds it"
            assert html.escape(short_name(name)) in out
        else:
            assert escaped in out


def test_the_closing_table_opens_each_lesson_onto_every_verdict(profiles):
    frame = tables.at_a_glance(profiles, claims.revealed(profiles))
    out = rendered(frame)
    assert "every verdict" not in HEADER.findall(out)
    for stage, row in frame.iterrows():
        for v in row["every verdict"]:
            assert html.escape(v.evidence) in out and html.escape(v.claim) in out
    assert out.count("<details class='ap-expand'>") == sum(bool(v) for v in frame["every verdict"])
    assert frame.attrs["caption"].split(":")[0] in out


def test_a_multiindex_groups_its_rows(profiles):
    frame = tables.decoded_fields(profiles["sdpa_cudnn"])
    out = rendered(frame)
    groups = re.findall(r"<tr class='ap-group'>", out)
    assert len(groups) == frame.index.get_level_values(0).nunique()
    assert HEADER.findall(out) == ["field", "value"]


def test_wide_tables_become_cards_on_a_phone_narrow_ones_stay_tables(profiles):
    assert "ap-cards" in rendered(tables.kernel_table(profiles["naive"]))
    assert "ap-cards" not in rendered(pd.DataFrame({"n": [1, 2, 3]}))


def test_a_float_keeps_its_decimals_in_a_column_of_mixed_types():
    frame = pd.DataFrame({"value": ["flash", 91.263, 128, None]})
    cells = [c for _, _, c in CELL.findall(rendered(frame))]
    assert cells == ["flash", "91.263", "128", ""]


def test_verdict_lists_render_with_their_verdicts():
    verdicts = [Verdict("a claim", "some evidence", True), Verdict("another", "more", False, "not here")]
    out = rendered(pd.DataFrame({"claims": [verdicts]}))
    assert "holds" in out and "differs: not here" in out and "some evidence" in out


def test_the_renderer_is_what_ipython_shows():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    try:
        install()
        frame = pd.DataFrame({"a": [1.5, 2.25]})
        shown = shell.display_formatter.format(frame)[0]["text/html"]
        assert shown == html_table(frame)
        assert "1.50" in shown and "2.25" in shown  # a column reads alike: the decimals it needs
    finally:
        InteractiveShell.clear_instance()
