"""Triton kernels that Inductor generates (triton_per_fused_..., triton_tem_fused_...)."""
from __future__ import annotations

import re

from ._common import _kernel_stem


# --- Triton (Inductor-generated) ------------------------------------------------------------

# Inductor names its kernels triton_{class}_fused_{aten ops of the origin nodes}_{index}
_TRITON = re.compile(r"^triton_(?P<cls>[a-z]+)_(?P<body>.*?)(?:_(?P<idx>\d+))?$")
_TRITON_CLASSES = {"per": "persistent reduction", "red": "reduction", "poi": "pointwise",
                   "tem": "template", "for": "foreach (combo)", "spl": "split scan",
                   "sca": "scan"}
# op names that themselves contain underscores, matched greedily before splitting on "_"
_MULTIWORD_OPS = sorted([
    "masked_fill", "prepare_softmax_online", "flex_attention", "flex_decoding", "flex_attention_backward",
    "to_copy", "log_softmax", "native_layer_norm", "native_batch_norm", "native_dropout",
    "clamp_min", "clamp_max", "full_like", "zeros_like", "ones_like", "empty_like", "new_zeros",
    "new_ones", "new_empty", "scalar_tensor", "constant_pad_nd", "index_put", "scatter_add",
    "slice_scatter", "select_scatter", "logical_not", "logical_and", "logical_or", "bitwise_not",
    "bitwise_and", "bitwise_or", "convert_element_type", "lift_fresh", "scaled_dot_product_attention",
    "unsafe_view", "safe_softmax", "where_self",
], key=lambda s: -s.count("_"))


# ops the name lists because another listed op decomposes into them (Inductor names a kernel by
# every aten op of its nodes, decompositions included), and ops that move no data; the short `op`
# leaves both out, `fused_ops` keeps them all
_DECOMPOSITIONS = {
    "_softmax": {"amax", "sub", "exp", "sum", "div", "prepare_softmax_online"},
    "softmax": {"amax", "sub", "exp", "sum", "div", "prepare_softmax_online"},
    "_log_softmax": {"amax", "sub", "exp", "sum", "log", "prepare_softmax_online"},
    "log_softmax": {"amax", "sub", "exp", "sum", "log", "prepare_softmax_online"},
}
_NO_DATA = {"view", "_unsafe_view", "unsafe_view", "reshape", "permute", "transpose", "t", "expand",
            "squeeze", "unsqueeze", "slice", "select", "as_strided", "alias"}


def _short_op(ops: list[str]) -> str | None:
    folded = set().union(*(_DECOMPOSITIONS.get(o, set()) for o in ops))
    kept = [o for o in ops if o not in folded and o not in _NO_DATA]
    kept = kept or [o for o in ops if o not in folded] or ops
    return "+".join(kept) if kept else None


def _split_ops(body: str) -> list[str]:
    tokens = body.split("_")
    ops, i = [], 0
    while i < len(tokens):
        lead = ""
        if tokens[i] == "" and i + 1 < len(tokens):  # "__softmax" -> "_softmax" (private aten op)
            lead, i = "_", i + 1
        for op in _MULTIWORD_OPS:
            parts = op.split("_")
            if tokens[i:i + len(parts)] == parts:
                ops.append(lead + op)
                i += len(parts)
                break
        else:
            if tokens[i]:
                ops.append(lead + tokens[i])
            i += 1
    return ops


def _triton(text: str) -> dict | None:
    stem = _kernel_stem(text)
    m = _TRITON.match(stem)
    if not m:
        return None
    cls, body = m.group("cls"), m.group("body")
    if body.startswith("fused_"):  # "fused__softmax_..." keeps the "_" of the private op
        ops = _split_ops(body[len("fused_"):])
    else:
        ops = _split_ops("" if body == "fused" else body)
    d = {"kernel_class": _TRITON_CLASSES.get(cls, cls), "class_token": cls, "fused_ops": ops,
         "index": int(m.group("idx")) if m.group("idx") else None}
    if cls == "tem" and any(o.startswith("flex_") for o in ops):
        kind, op = "attention", next(o for o in ops if o.startswith("flex_"))
    elif cls == "tem" and any(o.lstrip("_") in ("mm", "bmm", "addmm", "baddbmm") for o in ops):
        kind, op = "gemm", next(o for o in ops if o.lstrip("_") in ("mm", "bmm", "addmm", "baddbmm"))
    else:
        kind, op = "fused", _short_op(ops)
    summary = f"Triton {d['kernel_class']}" + (f": {', '.join(ops)}" if ops else "")
    return {"kind": kind, "library": "Triton", "op": op, "details": d, "summary": summary}
