"""The book's one palette: colour means the same thing everywhere (views.charts draws with it, the
stage registry gives each stage its colour from it)."""
from __future__ import annotations

KIND_COLORS = {
    "gemm": "#4C78A8", "attention": "#54A24B", "softmax": "#F58518", "masked_fill": "#E45756",
    "elementwise": "#72B7B2", "copy": "#B279A2", "memcpy": "#B279A2", "fill": "#9D755D",
    "memset": "#9D755D", "reduce": "#EECA3B", "mask": "#FF9DA6", "fused": "#8CD17D",
    "unknown": "#BAB0AC",
}
SERIES_COLORS = {"GPU time": "#4C78A8", "CPU time": "#F58518", "do_bench": "#54A24B"}
MUTED = "#8A8F98"  # readable on the light and the dark theme alike
