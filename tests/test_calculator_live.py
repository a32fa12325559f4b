"""The occupancy calculator in JupyterLab, as a user of the GPU Space or a local install meets it:
space/start.sh's JupyterLab in headless Chromium opens notebooks/calculator.ipynb, runs all its
cells, and the calculator's output calculates in the page (no widget manager, no kernel round
trip), without touching JupyterLab's address. Colab shows the same self-contained HTML output
(tests/test_calculator_js.py checks that it fetches nothing)."""
from __future__ import annotations

import shutil
from urllib.parse import urlsplit

import pytest

from conftest import ROOT
from helpers.occupancy.calculator import LIMITERS, occupancy
from test_space import run_all_cells, server, started_with_a_token  # noqa: F401 - server is a fixture

pytestmark = pytest.mark.browser


@pytest.mark.browser
def test_the_calculator_runs_in_jupyterlab(server, browser, tmp_path):  # noqa: F811
    served = tmp_path / "notebooks"
    served.mkdir()
    shutil.copy(ROOT / "notebooks" / "calculator.ipynb", served / "calculator.ipynb")
    s, token = started_with_a_token(server, ATTN_PROFILED_NOTEBOOKS=str(served))
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
    page.goto(f"{s.base}/lab/tree/calculator.ipynb?token={token}")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
    run_all_cells(page)
    root = page.locator(".jp-OutputArea [data-apo-calculator][data-apo-mounted]")
    root.wait_for(timeout=120_000)
    address = page.url
    # the page's API answers as helpers.occupancy does
    got = page.evaluate("() => window.attentionProfiled.occupancy('H200', 384, 168, 134144)")
    want = occupancy("H200", 384, 168, 134144)
    assert got == {"activeBlocks": want.active_blocks, "activeWarps": want.active_warps,
                   "occupancy": want.occupancy, "limiters": [k for k in LIMITERS if k in want.limiters]}
    # typing into a field updates the numbers in the page
    root.scroll_into_view_if_needed()
    initial = page.evaluate("() => window.attentionProfiled.calculators[0].state().config")
    root.locator('.apo-field[data-field="threads"] input[type="text"]').fill("64")
    expected = occupancy(initial["gpu"], 64, initial["registers"], initial["smem"])
    shown = root.locator('.apo-headline [data-out="activeWarps"]')
    assert shown.inner_text() == str(expected.active_warps)
    assert root.locator('.apo-headline [data-out="occupancy"]').inner_text() == f"{expected.occupancy_pct:.1f}%"
    # a refused value: JupyterLab shows the message too
    root.locator('.apo-field[data-field="threads"] input[type="text"]').fill("0")
    assert "threads_per_block" in root.locator('.apo-field[data-field="threads"] .apo-error').inner_text()
    root.locator('.apo-field[data-field="threads"] input[type="text"]').fill("64")
    # JupyterLab's address is JupyterLab's: the calculator leaves it alone
    page.wait_for_timeout(400)
    assert urlsplit(page.url).path == urlsplit(address).path and "threads=" not in page.url
    assert not root.locator(".apo-share").is_visible()
    root.screenshot(path=str(tmp_path / "jupyterlab-calculator.png"))
    assert not errors, errors
    page.close()
