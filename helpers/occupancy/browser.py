"""The occupancy calculator that calculates in the reader's browser: in the static book (no
kernel, no network), in JupyterLab and in Colab, from one HTML output.

    from helpers import Session, occupancy_calculator
    occupancy_calculator.calculator(Session().recorded())   # presets: every kernel of the recorded stage traces

The output is self-contained: a stylesheet, the data below, and two scripts next to this module,
inlined (``js/occupancy.js``, the arithmetic; ``js/calculator.js``, the page: fields, results,
impact curves and the SM, drawn as SVG). It loads nothing from anywhere, so it needs neither the
ipywidgets manager nor a kernel once shown, and it works the same where scripts in outputs run
(the book's pages, JupyterLab and Notebook 7 for the outputs of a session, Colab, VS Code).

Python stays the reference. ``calculator_data()`` hands the JavaScript every table it needs
(architectures, products, carveouts, the patterns that read a GPU's name, the impact curves'
axes, the presets from the traces) and the very templates of ``occupancy()``'s ValueErrors; the
JavaScript holds only the arithmetic, and tests/test_calculator_js.py checks it against
``helpers.occupancy`` in Chromium.

In the book the configuration lives in the page's query string (``calculator.html?gpu=H200&
threads=128&registers=255&smem=49152``), so a link reproduces it; ``calculator_url()`` writes
such links, and ``kernel_links()`` one per kernel of a set of traces (chapter 07).
"""
from __future__ import annotations

import html
from functools import lru_cache
from pathlib import Path
from typing import Sequence
from urllib.parse import urlencode

import pandas as pd
from matplotlib.colors import to_hex

from ..views.render import breakable, script_json as _script_json
from ..core.profile import Profile
from . import calculator as calc
from . import gpus
from .charts import (CURRENT_COLOR, CURVE_COLOR, MUTED, RESOURCE_LABELS, impact_axes,
                     limiter_label, traced_kernels)
from .drawing import LIMIT, RESOURCES, TITLES, block_colors

HERE = Path(__file__).resolve().parent / "js"
SCRIPTS = ("occupancy.js", "calculator.js")
STYLESHEET = "calculator.css"
PAGE = "calculator.html"        # the calculator's page in the built book (notebooks/calculator.ipynb)
NOTEBOOK = "calculator.ipynb"
# the query-string keys of a configuration, in the order a link writes them
URL_KEYS = ("gpu", "threads", "registers", "smem", "carveout", "limit")


# --------------------------------------------------------------------------------------- data

def carveout_percentages(spec: gpus.GPUSpec) -> list[dict]:
    """For each per-SM shared memory size the carveout can pick: the largest percentage that
    picks it (what ``occupancy(carveout=...)`` takes), worked out with the calculator's own rule."""
    chosen: dict[int, int] = {}
    for percent in range(0, 101):
        chosen[calc._preferred_shared_memory(spec, percent)] = percent
    return [{"bytes": size, "percent": chosen[size]} for size in spec.shared_memory_carveouts
            if size in chosen]


def _architecture(spec: gpus.GPUSpec) -> dict:
    return {
        "capability": spec.capability_str, "sm": spec.sm, "architecture": spec.architecture,
        "maxWarpsPerSm": spec.max_warps_per_sm, "maxBlocksPerSm": spec.max_blocks_per_sm,
        "maxThreadsPerBlock": spec.max_threads_per_block, "warpSize": spec.warp_size,
        "registersPerSm": spec.registers_per_sm, "maxRegistersPerBlock": spec.max_registers_per_block,
        "maxRegistersPerThread": spec.max_registers_per_thread,
        "registerAllocationUnit": spec.register_allocation_unit,
        "smSubpartitions": spec.sm_subpartitions,
        "sharedMemoryPerSm": spec.shared_memory_per_sm,
        "sharedMemoryPerBlockOptin": spec.shared_memory_per_block_optin,
        "sharedMemoryPerBlockDefault": spec.shared_memory_per_block_default,
        "reservedSharedMemoryPerBlock": spec.reserved_shared_memory_per_block,
        "sharedMemoryAllocationUnit": spec.shared_memory_allocation_unit,
        "sharedMemoryCarveouts": list(spec.shared_memory_carveouts),
        "carveouts": carveout_percentages(spec),
        "impact": {k: {"range": list(v["range"]), "extra": list(v["extra"])}
                   for k, v in impact_axes(spec).items()},
    }


def _preset_gpu(gpu_name: str, capability: str) -> str:
    """A trace's GPU as the calculator lists it: its product when the table knows it, else its
    compute capability."""
    try:
        spec = gpus.gpu_spec(gpu_name)
        if spec.product:
            return spec.product
    except ValueError:
        pass
    return gpus.gpu_spec(capability).capability_str


def presets_from_kernels(kernels: pd.DataFrame) -> list[dict]:
    """One preset per row of a ``traced_kernels()`` table, with its launch values as traced."""
    out = []
    for i, r in enumerate(kernels.itertuples()):
        out.append({"id": f"k{i}", "label": r.label, "name": r.name, "stages": r.stages,
                    "gpu": _preset_gpu(r.gpu, r.capability), "tracedOn": r.gpu,
                    "threads": int(r.threads), "registers": int(r.registers),
                    "sharedMemory": int(r.shared_memory)})
    return out


def _initial(presets: list[dict], gpu: str | None) -> dict:
    """Where the calculator starts: FlashAttention-2's kernel (sdpa_flash) as traced, else the
    first preset, on ``gpu`` when one is asked for (its shared memory capped at that GPU's)."""
    flash = [p for p in presets if "sdpa_flash" in p["stages"].split(", ")]
    first = (flash or presets or [None])[0]
    start = ({"gpu": first["gpu"], "threads": first["threads"], "registers": first["registers"],
              "smem": first["sharedMemory"]} if first else
             {"gpu": "H200", "threads": 128, "registers": 32, "smem": 0})
    if gpu is not None:
        spec = gpus.gpu_spec(gpu)
        start.update(gpu=spec.product or spec.capability_str,
                     smem=min(start["smem"], spec.shared_memory_per_block_optin))
    start.update(carveout=None, limit="opt-in")
    return start


def calculator_data(presets: pd.DataFrame, gpu: str | None = None,
                    source: str | None = None) -> dict:
    """Everything the browser calculator reads, computed here: see the module docstring.
    ``presets``: a ``traced_kernels()`` table (the kernels the preset buttons load)."""
    kernels = presets
    preset_rows = presets_from_kernels(kernels)
    return {
        "version": 1,
        "limiters": list(calc.LIMITERS),
        "unlimited": calc.UNLIMITED,
        "sharedMemoryLimits": list(calc.SHARED_MEMORY_LIMITS),
        "messages": {**calc.MESSAGES, **gpus.MESSAGES},
        "knownGpus": gpus.known_gpus(),
        "names": {"capabilityPatterns": list(gpus.CAPABILITY_PATTERNS),
                  "vendorWords": gpus.VENDOR_WORDS, "excludedVariants": gpus.EXCLUDED_VARIANTS,
                  "allVariantsShareSmCount": list(gpus.ALL_VARIANTS_SHARE_SM_COUNT)},
        "architectures": [_architecture(s) for s in gpus.ARCHITECTURES.values()],
        "products": [{"name": p.name, "capability": f"{p.capability[0]}.{p.capability[1]}",
                      "smCount": p.sm_count, "patterns": list(p.patterns), "note": p.note}
                     for p in gpus.PRODUCTS.values()],
        "presets": preset_rows,
        "presetSource": source if source is not None else kernels.attrs.get("source", ""),
        "initial": _initial(preset_rows, gpu),
        "urlKeys": list(URL_KEYS),
        "labels": {"resources": RESOURCE_LABELS, "panels": TITLES, "panelOrder": list(RESOURCES)},
        "style": {"curve": CURVE_COLOR, "current": CURRENT_COLOR, "muted": MUTED, "limit": LIMIT,
                  "blocks": [to_hex(c) for c in block_colors(64)]},
    }


# --------------------------------------------------------------------------------------- HTML

@lru_cache(maxsize=None)
def _asset(name: str) -> str:
    return (HERE / name).read_text()



class Calculator:
    """The calculator as a notebook shows it: one text/html output (see the module docstring)."""

    def __init__(self, data: dict):
        self.data = data

    def to_html(self) -> str:
        scripts = "".join(f"<script>{_asset(name)}</script>" for name in SCRIPTS)
        return (
            f'<div class="apo" data-apo-calculator>'
            f"<style>{_asset(STYLESHEET)}</style>"
            f'<script type="application/json" class="apo-data">{_script_json(self.data)}</script>'
            f'<p class="apo-fallback">The occupancy calculator is drawn by this output\'s '
            f"JavaScript, which has not run here. In JupyterLab, run the cell again: the scripts "
            f"of outputs saved in a notebook stay inactive until it is trusted.</p>"
            f"{scripts}</div>")

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None):
        first = self.data["initial"]
        text = (f"Occupancy calculator (drawn in the browser), starting on {first['gpu']}: "
                f"{first['threads']} threads, {first['registers']} registers per thread, "
                f"{first['smem']} B shared memory per block")
        return {"text/html": self.to_html(), "text/plain": text}


def _local_gpu() -> str | None:
    """The product key of this machine's GPU, if it has one the table knows."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        product = gpus.product_for_device_name(torch.cuda.get_device_name())
        return product.name if product else None
    except Exception:  # noqa: BLE001 - no torch, no driver: no local GPU
        return None


def calculator(presets_from: Sequence[Profile] | pd.DataFrame, gpu: str | None = None) -> Calculator:
    """The calculator. ``presets_from``: profiles whose kernels become preset buttons (a
    Session's ``recorded()``: every stage of the replay set at the default shape), or a
    ``traced_kernels()`` table.
    ``gpu``: the GPU to start on (default: this machine's, when the table knows it; else the GPU
    the first preset was traced on). A link's configuration (in the book) takes precedence."""
    if isinstance(presets_from, pd.DataFrame):
        kernels = presets_from
    else:
        kernels = traced_kernels(presets_from)
    return Calculator(calculator_data(kernels, gpu=gpu or _local_gpu()))


# -------------------------------------------------------------------------------------- links

def calculator_query(gpu, threads: int, registers: int, shared_memory: int,
                     carveout: int | None = None, shared_memory_limit: str = "opt-in") -> str:
    """The query string of one configuration, as the calculator page reads and writes it.
    Checked with ``occupancy()`` first: a link never carries a configuration it would refuse."""
    result = calc.occupancy(gpu, threads, registers, shared_memory, carveout=carveout,
                            shared_memory_limit=shared_memory_limit)
    spec = result.gpu
    return urlencode({"gpu": spec.product or spec.capability_str,
                      "threads": result.threads_per_block,
                      "registers": result.registers_per_thread,
                      "smem": result.shared_memory_per_block,
                      "carveout": "default" if carveout is None else result.carveout,
                      "limit": shared_memory_limit})


def calculator_url(gpu, threads: int, registers: int, shared_memory: int,
                   carveout: int | None = None, shared_memory_limit: str = "opt-in",
                   page: str = PAGE) -> str:
    """A link to the calculator page with this configuration loaded (relative to a page of
    notebooks/ in the built book, by default)."""
    return f"{page}?{calculator_query(gpu, threads, registers, shared_memory, carveout, shared_memory_limit)}"


class KernelLinks:
    """A table of kernels, each with a link that opens it in the calculator.

    In the book a link loads the kernel's configuration from its query string. Where the book's
    pages are not (JupyterLab, Colab) the links open calculator.ipynb instead, whose preset
    buttons hold the same kernels (a notebook cannot read a link's query string)."""

    def __init__(self, rows: list[dict]):
        self.rows = rows

    def to_html(self) -> str:
        # the book's table conventions (helpers/views/render.py): each cell labelled with its
        # column (cards on a phone), long kernel labels breakable at their joints
        heads = ["stages", "kernel", "threads", "registers", "shared memory (B)", "GPU", "occupancy", ""]
        body = []
        for r in self.rows:
            cells = [html.escape(r["stages"]),
                     f"<span title=\"{html.escape(r['name'])}\">{breakable(html.escape(r['label']))}</span>",
                     r["threads"], r["registers"], f"{r['smem']:,}", html.escape(r["gpu"]),
                     html.escape(r["occupancy"]),
                     f"<a class=\"apo-kernel-link\" href=\"{html.escape(r['href'])}\" "
                     f"data-notebook-href=\"{NOTEBOOK}\">open in the calculator</a>"]
            body.append("<tr>" + "".join(f'<td data-label="{html.escape(h)}">{c}</td>'
                                         for h, c in zip(heads, cells)) + "</tr>")
        rewrite = ("<script>(function (s) { if (document.documentElement.hasAttribute('data-content_root')) return;"
                   " s.parentElement.querySelectorAll('a.apo-kernel-link').forEach(function (a) {"
                   " a.setAttribute('href', a.dataset.notebookHref); }); })(document.currentScript);</script>")
        return ('<div class="apo-kernel-links"><table class="dataframe ap-table ap-cards">'
                "<thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in heads) + "</tr></thead>"
                f"<tbody>{''.join(body)}</tbody></table>{rewrite}</div>")

    def _repr_html_(self) -> str:
        return self.to_html()

    def _repr_mimebundle_(self, include=None, exclude=None):
        text = "\n".join(f"{r['label']} ({r['stages']}): {r['href']}" for r in self.rows)
        return {"text/html": self.to_html(), "text/plain": text}


def kernel_links(kernels: Sequence[Profile] | pd.DataFrame) -> KernelLinks:
    """Every kernel of ``kernels`` (profiles, or a ``traced_kernels()`` table) with its
    theoretical occupancy and a link to the calculator with it loaded."""
    table = kernels if isinstance(kernels, pd.DataFrame) else traced_kernels(kernels)
    rows = []
    for p in presets_from_kernels(table):
        result = calc.occupancy(p["gpu"], p["threads"], p["registers"], p["sharedMemory"])
        rows.append({"stages": p["stages"], "label": p["label"], "name": p["name"],
                     "threads": p["threads"], "registers": p["registers"],
                     "smem": p["sharedMemory"], "gpu": p["gpu"],
                     "occupancy": f"{result.occupancy_pct:.1f}% ({limiter_label(result)})",
                     "href": calculator_url(p["gpu"], p["threads"], p["registers"],
                                            p["sharedMemory"])})
    return KernelLinks(rows)
