"""One SM, drawn: its register file, shared memory, warp slots and block slots, filled by the
resident blocks of one launch configuration (each block its own colour), the unused part
shaded and the limiting resource marked.

Everything drawn comes from ``helpers.occupancy.occupancy``: a warp takes its registers (rounded
to the allocation unit) from one of the four sub-partitions, warps going round the
sub-partitions in turn; a block takes its shared memory plus the driver's reserve, rounded to
the allocation unit, out of the shared memory the SM is set up with for the kernel.

Each filled patch carries a gid ``fill:<resource>`` and each panel's capacity ``capacity:<resource>``
(resource: registers, shared_memory, warps, blocks), so the drawn fractions can be measured.
The figure has a transparent background and mid-grey text, legible on a light and a dark page.
"""
from __future__ import annotations

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from .calculator import Occupancy, occupancy

TEXT = "#8A8F98"       # helpers.charts.MUTED
LIMIT = "#E45756"
UNUSED = (0.54, 0.56, 0.60, 0.18)
RESOURCES = ("registers", "shared_memory", "warps", "blocks")
# where the SM's shared memory (the pool the blocks are stacked in) came from
POOL_WORDS = {"configured": "as configured for the launch", "preference": "the kernel's carveout",
              "driver": "the driver's pick, modelled"}
TITLES = {"registers": "register file", "shared_memory": "shared memory",
          "warps": "warp slots", "blocks": "block slots"}


def block_colors(n: int) -> list:
    """n distinct colours, one per resident block (tab20, then tab20b, cycled)."""
    cmaps = [colormaps["tab20"], colormaps["tab20b"]]
    return [cmaps[(i // 20) % 2](i % 20) for i in range(n)]


def _capacity(ax, x, y, w, h, resource):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=UNUSED, edgecolor=TEXT, linewidth=0.8,
                           hatch="///", gid=f"capacity:{resource}"))


def _fill(ax, x, y, w, h, color, resource, block):
    ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor="white", linewidth=0.4,
                           gid=f"fill:{resource}:{block}"))


def _style(ax, resource: str, result: Occupancy, subtitle: str):
    limiting = resource in result.limiters
    ax.set_axis_off()
    color = LIMIT if limiting else TEXT
    ax.set_title(TITLES[resource] + ("\n◀ the limiter" if limiting else "\n"), color=color,
                 fontsize=11, fontweight="bold" if limiting else "normal", loc="left")
    ax.text(0, -0.03, subtitle, transform=ax.transAxes, ha="left", va="top", color=TEXT,
            fontsize=8.5)
    if limiting:
        ax.add_patch(Rectangle((-0.02, -0.01), 1.04, 1.02, transform=ax.transAxes, fill=False,
                               edgecolor=LIMIT, linewidth=2, clip_on=False, gid="limiter"))


def draw_sm(gpu, threads: int, registers: int, shared_memory: int, title: str | None = None,
            carveout: int | None = None, shared_memory_limit: str = "opt-in") -> Figure:
    """Draw one SM of ``gpu`` holding as many blocks of this configuration as fit."""
    result = occupancy(gpu, threads, registers, shared_memory, carveout=carveout,
                       shared_memory_limit=shared_memory_limit)
    return draw_result(result, title=title)


def draw_result(result: Occupancy, title: str | None = None) -> Figure:
    """Draw the SM of one ``occupancy()`` result."""
    spec = result.gpu
    blocks, wpb = result.active_blocks, result.warps_per_block
    colors = block_colors(max(blocks, 1))
    fig = Figure(figsize=(11, 4.4))
    fig.patch.set_alpha(0)
    grid = fig.add_gridspec(1, 4, width_ratios=[4, 1.5, 4, 2.6], wspace=0.4,
                            left=0.02, right=0.98, top=0.76, bottom=0.16)
    axes = {r: fig.add_subplot(grid[0, i]) for i, r in enumerate(RESOURCES)}
    for ax in axes.values():
        ax.patch.set_alpha(0)

    _draw_panels(axes, result, colors)

    limiter = " + ".join(TITLES[r] for r in RESOURCES if r in result.limiters)
    head = title or (f"One SM of {spec.name}: {result.threads_per_block} threads × "
                     f"{result.registers_per_thread} registers, {result.shared_memory_per_block:,} B "
                     f"shared memory a block")
    fig.suptitle(f"{head}\n{_plural(blocks, 'block')} resident, {result.active_warps} of "
                 f"{result.max_warps} warps ({result.occupancy_pct:.1f}% occupancy), "
                 f"limited by {limiter}", color=TEXT, fontsize=11.5, x=0.02, ha="left", y=0.98)
    return fig


def _draw_panels(axes: dict, result: Occupancy, colors: list) -> None:
    """The four panels of one SM (register file, shared memory, warp slots, block slots), each on
    its own axes: the same drawing whether the panels share one figure or stand alone."""
    spec = result.gpu
    blocks, wpb = result.active_blocks, result.warps_per_block
    # register file: sub-partitions side by side, in allocation units of 256 registers
    ax = axes["registers"]
    subs = spec.sm_subpartitions
    unit = spec.register_allocation_unit
    units_per_sub = spec.registers_per_sm // subs // unit
    regs_per_warp = result.registers_per_block // wpb if wpb else 0
    for s in range(subs):
        _capacity(ax, s * 1.1, 0, 1, units_per_sub, "registers")
    for w in range(result.active_warps):
        s, level = w % subs, w // subs
        if regs_per_warp:
            _fill(ax, s * 1.1, level * regs_per_warp / unit, 1, regs_per_warp / unit,
                  colors[w // wpb], "registers", w // wpb)
    for s in range(subs):
        ax.text(s * 1.1 + 0.5, -1, f"SP {s}", ha="center", va="top", color=TEXT, fontsize=7.5)
    ax.set_xlim(-0.1, subs * 1.1)
    ax.set_ylim(-units_per_sub * 0.12, units_per_sub * 1.02)
    used = blocks * result.registers_per_block
    _style(ax, "registers", result,
           f"{used:,} of {spec.registers_per_sm:,} registers ({100 * result.utilization['registers']:.1f}%)"
           f"\nin {subs} sub-partitions (SP)\n"
           f"{regs_per_warp:,} per warp ({result.registers_per_thread} × {spec.warp_size}, "
           f"in units of {unit})")

    # shared memory: what the SM is set up with for this kernel, blocks stacked
    ax = axes["shared_memory"]
    total = result.shared_memory_per_sm
    per_block = result.shared_memory_allocated_per_block
    if total:
        _capacity(ax, 0, 0, 1, total, "shared_memory")
        for b in range(blocks):
            _fill(ax, 0, b * per_block, 1, per_block, colors[b], "shared_memory", b)
            reserve = spec.reserved_shared_memory_per_block
            if reserve:
                ax.add_patch(Rectangle((0, b * per_block), 1, reserve, facecolor="none",
                                       edgecolor="white", hatch="xx", linewidth=0, gid="reserve"))
    ax.set_xlim(-0.1, 1.1)
    ax.set_ylim(-max(total, 1) * 0.12, max(total, 1) * 1.02)
    _style(ax, "shared_memory", result,
           f"{blocks * per_block:,} of {total:,} B\n({100 * result.utilization['shared_memory']:.1f}%)\n"
           f"{per_block:,} B a block\n{POOL_WORDS[result.shared_memory_source]}")

    # warp slots: one column per sub-partition (the scheduler that runs the warp)
    ax = axes["warps"]
    rows = spec.max_warps_per_sm // subs
    for s in range(subs):
        for r in range(rows):
            _capacity(ax, s * 1.1, r, 1, 0.9, "warps")
    for w in range(result.active_warps):
        _fill(ax, (w % subs) * 1.1, w // subs, 1, 0.9, colors[w // wpb], "warps", w // wpb)
    ax.set_xlim(-0.1, subs * 1.1)
    ax.set_ylim(-rows * 0.12, rows * 1.02)
    _style(ax, "warps", result,
           f"{result.active_warps} of {spec.max_warps_per_sm} warps "
           f"({100 * result.utilization['warps']:.1f}%)\n{wpb} a block")

    # block slots
    ax = axes["blocks"]
    cols = 4
    brows = -(-spec.max_blocks_per_sm // cols)
    for i in range(spec.max_blocks_per_sm):
        _capacity(ax, (i % cols) * 1.1, i // cols, 1, 0.9, "blocks")
    for b in range(blocks):
        _fill(ax, (b % cols) * 1.1, b // cols, 1, 0.9, colors[b], "blocks", b)
    ax.set_xlim(-0.1, cols * 1.1)
    ax.set_ylim(-brows * 0.12, brows * 1.02)
    _style(ax, "blocks", result,
           f"{blocks} of {spec.max_blocks_per_sm} block slots ({100 * result.utilization['blocks']:.1f}%)")



def caption(result: Occupancy, title: str | None = None) -> str:
    """The drawing's heading in words: the launch configuration, what fits and the limiter."""
    spec = result.gpu
    limiter = " + ".join(TITLES[r] for r in RESOURCES if r in result.limiters)
    head = title or (f"One SM of {spec.name}: {result.threads_per_block} threads × "
                     f"{result.registers_per_thread} registers, {result.shared_memory_per_block:,} B "
                     f"shared memory a block")
    return (f"{head}. {_plural(result.active_blocks, 'block')} resident, {result.active_warps} of "
            f"{result.max_warps} warps ({result.occupancy_pct:.1f}% occupancy), limited by {limiter}.")


def panel_svgs(result: Occupancy) -> dict[str, str]:
    """Each panel as its own SVG (text kept as text, in the page's colour: readable at a phone's
    width and in dark mode), keyed by resource."""
    import io

    from matplotlib import rc_context
    colors = block_colors(max(result.active_blocks, 1))
    out = {}
    with rc_context({"svg.fonttype": "none", "font.family": "sans-serif"}):
        for resource in RESOURCES:
            fig = Figure(figsize=(3.4, 3.3))
            fig.patch.set_alpha(0)
            ax = fig.add_axes([0.03, 0.2, 0.94, 0.62])
            ax.patch.set_alpha(0)
            # the other panels are drawn on throwaway axes: only this one is kept
            scratch = Figure()
            axes = {r: (ax if r == resource else scratch.add_subplot()) for r in RESOURCES}
            _draw_panels(axes, result, colors)
            buffer = io.StringIO()
            fig.savefig(buffer, format="svg", transparent=True)
            svg = buffer.getvalue()
            svg = svg[svg.index("<svg"):]
            # mid-grey text and outlines follow the page's text colour (light and dark themes)
            svg = svg.replace(f"fill: {TEXT.lower()}", "fill: currentColor").replace(
                f"stroke: {TEXT.lower()}", "stroke: currentColor")
            out[resource] = svg
    return out


def to_html(result: Occupancy, title: str | None = None):
    """One SM, drawn as vector panels under a caption in words: ``IPython.display.HTML``. The
    panels sit four in a row where there is room and one under another on a phone."""
    import html as _html

    from IPython.display import HTML
    panels = "".join(f'<div class="ap-sm-panel" data-resource="{r}">{svg}</div>'
                     for r, svg in panel_svgs(result).items())
    return HTML(f'<figure class="ap-sm"><figcaption>{_html.escape(caption(result, title))}</figcaption>'
                f'<div class="ap-sm-panels">{panels}</div></figure>')


def to_image(fig: Figure, dpi: int = 100):
    """The drawing as a PNG ``IPython.display.Image`` (transparent), whatever the backend."""
    import io

    from IPython.display import Image
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, transparent=True)
    return Image(data=buffer.getvalue(), format="png")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def filled_fractions(fig: Figure) -> dict[str, float]:
    """The fraction of each panel's capacity that the drawing fills, measured from its patches."""
    filled = {r: 0.0 for r in RESOURCES}
    capacity = {r: 0.0 for r in RESOURCES}
    for ax in fig.axes:
        for patch in ax.patches:
            gid = patch.get_gid() or ""
            kind, _, rest = gid.partition(":")
            resource = rest.split(":")[0]
            if resource not in filled:
                continue
            area = patch.get_width() * patch.get_height()
            if kind == "fill":
                filled[resource] += area
            elif kind == "capacity":
                capacity[resource] += area
    return {r: (filled[r] / capacity[r] if capacity[r] else 0.0) for r in RESOURCES}


def limiter_panels(fig: Figure) -> set[str]:
    """The resources whose panel the drawing marks as the limiter."""
    marked = set()
    for resource, ax in zip(RESOURCES, fig.axes):
        if any((p.get_gid() or "") == "limiter" for p in ax.patches):
            marked.add(resource)
    return marked
