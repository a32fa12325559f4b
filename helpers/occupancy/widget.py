"""The live occupancy calculator: ipywidgets over ``helpers.occupancy.occupancy``.

    from helpers.occupancy import widget
    occupancy_widget.calculator()          # presets: every kernel of the recorded stage traces

Controls: GPU, threads per block, registers per thread, shared memory per block, the carveout
preference and the shared-memory limit (opted in, as the kernels launch, or the 48 KiB default,
as Kineto computes it). Every control is bounded by the selected GPU's limits and re-clamped when
the GPU changes, so the calculator cannot reach a configuration ``occupancy()`` refuses.
Readouts: active blocks and warps, occupancy, limiter, the utilization bars, the three impact
curves (a plotly FigureWidget where anywidget is installed, else re-rendered into an Output) and
the drawn SM. The static book shows ``occupancy_charts.explorer()`` instead: a widget needs a kernel.
"""
from __future__ import annotations

import html
from typing import Sequence

import ipywidgets as w
import pandas as pd

from ..pages.charts import NOTEBOOK_RENDERER
from ..profiling.profile import Profile
from .calculator import UNLIMITED, Occupancy, occupancy
from .charts import (RESOURCE_LABELS, impact_curves, limiter_label, traced_kernels,
                               utilization_bars)
from .drawing import draw_result, to_image
from .gpus import PRODUCTS, GPUSpec, gpu_spec


def _figure_widget_class():
    """plotly's FigureWidget, or None where it cannot work (plotly 6+ needs anywidget)."""
    try:
        import anywidget  # noqa: F401
        import plotly.graph_objects as go
        go.FigureWidget()
        return go.FigureWidget
    except Exception:  # noqa: BLE001 - any failure means: re-render into an Output instead
        return None


def _local_gpu() -> str | None:
    """The product key of this machine's GPU, if it has one the table knows."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        from .gpus import product_for_device_name
        product = product_for_device_name(torch.cuda.get_device_name())
        return product.name if product else None
    except Exception:  # noqa: BLE001 - no torch, no driver: no local GPU
        return None


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


def _preset_gpu_key(gpu_name: str, capability: str) -> str:
    """The dropdown key of a trace's GPU: its product when known, else its compute capability."""
    try:
        spec = gpu_spec(gpu_name)
        if spec.product:
            return spec.product
    except ValueError:
        pass
    return capability


class OccupancyCalculator(w.VBox):
    """GPU + launch configuration in, occupancy out; see the module docstring."""

    def __init__(self, presets: pd.DataFrame | None = None, gpu: str | None = None):
        self._busy = False
        self.presets = presets if presets is not None else pd.DataFrame()
        keys = list(PRODUCTS)
        for r in self.presets.itertuples():
            key = _preset_gpu_key(r.gpu, r.capability)
            if key not in keys:
                keys.append(key)
        first = self._initial_preset()
        # start on the GPU asked for, else this machine's (live), else the first preset's
        target = gpu or _local_gpu()
        start = target or (_preset_gpu_key(first.gpu, first.capability) if first is not None
                           else "H200")
        if start not in keys:
            keys.append(start)
        spec = gpu_spec(start)

        style = {"description_width": "190px"}
        wide = w.Layout(width="640px")
        self.gpu = w.Dropdown(options=[(self._gpu_label(k), k) for k in keys], value=start,
                              description="GPU", style=style, layout=w.Layout(width="420px"))
        self.threads = w.IntSlider(value=128, min=1, max=spec.max_threads_per_block, step=1,
                                   description="threads per block", continuous_update=False,
                                   style=style, layout=wide)
        self.registers = w.IntSlider(value=32, min=0, max=spec.max_registers_per_thread, step=1,
                                     description="registers per thread", continuous_update=False,
                                     style=style, layout=wide)
        self.shared_memory = w.IntSlider(value=0, min=0, max=spec.shared_memory_per_block_optin,
                                         step=1, description="shared memory per block (B)",
                                         continuous_update=False, style=style, layout=wide)
        self.carveout_auto = w.Checkbox(value=True, description="no carveout preference",
                                        indent=False)
        self.carveout = w.IntSlider(value=100, min=0, max=100, step=1, disabled=True,
                                    description="carveout (% of max smem)",
                                    continuous_update=False, style=style,
                                    layout=w.Layout(width="460px"))
        self.shared_memory_limit = w.ToggleButtons(
            options=[("opted in (as the kernel launches)", "opt-in"),
                     ("48 KiB default (as Kineto computes it)", "default")],
            value="opt-in", description="smem limit", style={"description_width": "80px"})
        self.readout = w.HTML()
        self.bars_out, self.curves_out, self.sm_out = w.Output(), w.Output(), w.Output()
        self._figure_widget = _figure_widget_class()
        self._bars_fw = self._curves_fw = None
        self.result: Occupancy | None = None
        self.bars_figure = self.curves_figure = self.sm_figure = None

        self.preset_buttons = []
        for r in self.presets.itertuples():
            button = w.Button(
                description=f"{r.label} ({r.threads} × {r.registers} regs, {r.shared_memory} B)",
                tooltip=f"{r.name} · stages: {r.stages} · traced on {r.gpu}",
                layout=w.Layout(width="auto"))
            button.on_click(lambda _b, row=r._asdict(): self.load_preset(row))
            self.preset_buttons.append(button)

        for control in (self.threads, self.registers, self.shared_memory, self.carveout,
                        self.shared_memory_limit):
            control.observe(self._changed, names="value")
        self.carveout_auto.observe(self._carveout_toggled, names="value")
        self.gpu.observe(self._gpu_changed, names="value")

        presets_box = w.VBox([
            w.HTML("<b>Presets:</b> each kernel of the recorded stage traces, at its traced "
                   "values (it also selects the GPU it was traced on)"),
            w.Box(self.preset_buttons, layout=w.Layout(display="flex", flex_flow="row wrap"))],
            layout=w.Layout(display="flex" if self.preset_buttons else "none"))
        controls = w.VBox([self.gpu, self.threads, self.registers, self.shared_memory,
                           w.HBox([self.carveout_auto, self.carveout]), self.shared_memory_limit])
        super().__init__([controls, presets_box, self.readout, self.bars_out, self.curves_out,
                          self.sm_out])
        if first is not None:
            self.load_preset(first._asdict())
        else:
            self.update()
        # the first preset's values, on the GPU asked for (clamped to it)
        if target is not None and target != self.gpu.value:
            self.gpu.value = target

    # --- state ----------------------------------------------------------------------------------
    def _initial_preset(self):
        if not len(self.presets):
            return None
        rows = list(self.presets.itertuples())
        flash = [r for r in rows if "sdpa_flash" in r.stages.split(", ")]
        return flash[0] if flash else rows[0]

    @staticmethod
    def _gpu_label(key: str) -> str:
        spec = gpu_spec(key)
        return f"{spec.name} (sm {spec.capability_str})" if spec.product else f"sm {spec.capability_str}"

    @property
    def spec(self) -> GPUSpec:
        return gpu_spec(self.gpu.value)

    @property
    def values(self) -> dict:
        """The current configuration, as ``occupancy()`` takes it."""
        return {"gpu": self.gpu.value, "threads_per_block": self.threads.value,
                "registers_per_thread": self.registers.value,
                "shared_memory_per_block": self.shared_memory.value,
                "carveout": None if self.carveout_auto.value else self.carveout.value,
                "shared_memory_limit": self.shared_memory_limit.value}

    def _apply_limits(self) -> None:
        """Bound every control by the selected GPU; values above a new maximum are clamped."""
        spec = self.spec
        for slider, top in ((self.threads, spec.max_threads_per_block),
                            (self.registers, spec.max_registers_per_thread),
                            (self.shared_memory, spec.shared_memory_per_block_optin)):
            if slider.value > top:
                slider.value = top
            slider.max = top

    def _gpu_changed(self, _change=None) -> None:
        busy, self._busy = self._busy, True
        try:
            self._apply_limits()
        finally:
            self._busy = busy
        self._changed()

    def _carveout_toggled(self, _change=None) -> None:
        self.carveout.disabled = self.carveout_auto.value
        self._changed()

    def _changed(self, _change=None) -> None:
        if not self._busy:
            self.update()

    def load_preset(self, row: dict) -> None:
        """Set the GPU and the launch values of one traced kernel, exactly as traced."""
        self._busy = True
        try:
            self.gpu.value = _preset_gpu_key(row["gpu"], row["capability"])
            self._apply_limits()
            spec = self.spec
            self.carveout_auto.value = True
            self.shared_memory_limit.value = "opt-in"
            self.threads.value = min(int(row["threads"]), spec.max_threads_per_block)
            self.registers.value = min(int(row["registers"]), spec.max_registers_per_thread)
            self.shared_memory.value = min(int(row["shared_memory"]),
                                           spec.shared_memory_per_block_optin)
        finally:
            self._busy = False
        self.update()

    # --- readouts -------------------------------------------------------------------------------
    def update(self) -> None:
        v = self.values
        self.result = r = occupancy(v["gpu"], v["threads_per_block"], v["registers_per_thread"],
                                    v["shared_memory_per_block"], carveout=v["carveout"],
                                    shared_memory_limit=v["shared_memory_limit"])
        self.readout.value = self.readout_html(r)
        self.bars_figure = utilization_bars(r)
        self.curves_figure = impact_curves(v["gpu"], v["threads_per_block"],
                                           v["registers_per_thread"], v["shared_memory_per_block"],
                                           v["carveout"], v["shared_memory_limit"])
        self.sm_figure = draw_result(r)
        self._show()

    @staticmethod
    def readout_html(r: Occupancy) -> str:
        limits = " · ".join(
            f"{RESOURCE_LABELS[k]} {'no limit' if n == UNLIMITED else n}"
            for k, n in r.block_limits.items())
        return (f"<div style='font-size:1.05em;line-height:1.6'>"
                f"<b>{r.active_blocks}</b> active blocks · <b>{r.active_warps}</b> of "
                f"{r.max_warps} warps · occupancy <b>{r.occupancy_pct:.1f}%</b> · limited by "
                f"<b>{html.escape(limiter_label(r))}</b><br>"
                f"<small>blocks each resource allows: {limits} · shared memory per SM for this "
                f"kernel: {r.shared_memory_per_sm:,} B · per block: "
                f"{r.shared_memory_allocated_per_block:,} B allocated, "
                f"{r.registers_per_block:,} registers</small></div>")

    def _show(self) -> None:
        if not _in_kernel():
            return
        from IPython.display import clear_output, display
        if self._figure_widget is not None:
            for attr, out, fig in (("_bars_fw", self.bars_out, self.bars_figure),
                                   ("_curves_fw", self.curves_out, self.curves_figure)):
                fw = getattr(self, attr)
                if fw is None:
                    fw = self._figure_widget(fig)
                    setattr(self, attr, fw)
                    with out:
                        display(fw)
                else:
                    with fw.batch_update():
                        for old, new in zip(fw.data, fig.data):
                            props = new.to_plotly_json()
                            props.pop("type", None)
                            props.pop("uid", None)
                            old.update(props)
                        fw.layout.update(fig.layout.to_plotly_json())
        else:
            # JupyterLab, Notebook 7 and VS Code draw plotly's own mimetype; Colab draws HTML only.
            # One form each keeps the saved widget state small.
            import plotly.io as pio

            renderer = "colab" if NOTEBOOK_RENDERER == "colab" else "plotly_mimetype"
            for out, fig in ((self.bars_out, self.bars_figure),
                             (self.curves_out, self.curves_figure)):
                with out:
                    clear_output(wait=True)
                    pio.show(fig, renderer=renderer)
        with self.sm_out:
            clear_output(wait=True)
            display(to_image(self.sm_figure, dpi=80))


def calculator(presets_from: Sequence[Profile] | pd.DataFrame | None = None,
               gpu: str | None = None) -> OccupancyCalculator:
    """The live calculator. ``presets_from``: profiles whose kernels become preset buttons, or a
    ``traced_kernels()`` table; default: every stage of the replay set at the default shape.
    ``gpu``: the GPU to start on (default: this machine's, when the table knows it; else the
    GPU the first preset was traced on)."""
    if isinstance(presets_from, pd.DataFrame):
        presets = presets_from
    else:
        presets = traced_kernels(presets_from)
    return OccupancyCalculator(presets, gpu=gpu)
