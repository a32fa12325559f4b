"""FlashAttention-2 kernels (flash_fwd_kernel, flash_fwd_splitkv_kernel, ...), vendored in PyTorch or built elsewhere."""
from __future__ import annotations

import re

from ._common import TENSOR_CORES, _CPP_DTYPES, _bool, _cpp_dtype, _int, _template_args


# --- FlashAttention-2 -----------------------------------------------------------------------

# The boolean template flags of the kernels, in declaration order, keyed by how many there are.
# 8 (fwd) / 8 (splitkv): upstream flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h
#   (Dao-AILab/flash-attention, DEFINE_FLASH_FORWARD_KERNEL(flash_fwd_kernel, bool Is_dropout,
#   bool Is_causal, bool Is_local, bool Has_alibi, bool Is_even_MN, bool Is_even_K,
#   bool Is_softcap, bool Return_softmax)). Current PyTorch builds exactly that file from
#   third_party/flash-attention with FLASH_NAMESPACE=pytorch_flash (caffe2/CMakeLists.txt, which
#   also sets FLASHATTENTION_DISABLE_ALIBI and _SOFTCAP, so those two flags are always false).
# 7 / 6 / 5: the older copies PyTorch kept in aten/src/ATen/native/transformers/cuda/flash_attn/
#   flash_fwd_launch_template.h (with Has_alibi, before softcap; with Is_local, before alibi;
#   and the first, with Is_even_N).
_FWD_FLAGS = {
    8: ("Is_dropout", "Is_causal", "Is_local", "Has_alibi", "Is_even_MN", "Is_even_K",
        "Is_softcap", "Return_softmax"),
    7: ("Is_dropout", "Is_causal", "Is_local", "Has_alibi", "Is_even_MN", "Is_even_K",
        "Return_softmax"),
    6: ("Is_dropout", "Is_causal", "Is_local", "Is_even_MN", "Is_even_K", "Return_softmax"),
    5: ("Is_dropout", "Is_causal", "Is_even_N", "Is_even_K", "Return_softmax"),
}
_SPLITKV_FLAGS = {
    8: ("Is_causal", "Is_local", "Has_alibi", "Is_even_MN", "Is_even_K", "Is_softcap", "Split",
        "Append_KV"),
    7: ("Is_causal", "Is_local", "Has_alibi", "Is_even_MN", "Is_even_K", "Split", "Append_KV"),
    6: ("Is_causal", "Is_local", "Is_even_MN", "Is_even_K", "Split", "Append_KV"),
}
# Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, Is_Q_in_regs, Share_Q_K_smem,
#                         elem_type, Base>  (kernel_traits.h)
_TRAITS = ("head_dim", "block_m", "block_n", "warps", "Is_Q_in_regs", "Share_Q_K_smem", "element")

_FLASH = re.compile(r"(?:(?P<ns>[A-Za-z_]\w*)::)?(?P<fn>flash_(?P<dir>fwd|bwd)\w*?_kernel\w*)")
_FLASH3 = re.compile(r"FlashAttn(?P<dir>Fwd|Bwd)Sm(?P<sm>\d+)")


def _flash(text: str) -> dict | None:
    m3 = _FLASH3.search(text)
    if m3:  # FlashAttention-3 (Hopper): cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>
        direction = "forward" if m3.group("dir") == "Fwd" else "backward"
        dtype = next((v for k, v in _CPP_DTYPES.items() if k in text and "::" in k), None)
        return {"kind": "attention", "library": "FlashAttention-3", "op": f"attention {direction}",
                "dtype": dtype, "math": TENSOR_CORES, "arch": f"sm{m3.group('sm')}",
                "details": {"algorithm": f"FlashAttention-3 {direction}", "direction": direction},
                "summary": f"FlashAttention-3 {direction} (sm{m3.group('sm')})"}
    m = _FLASH.search(text)
    if not m:
        return None
    fn = m.group("fn")
    ns = m.group("ns")
    if ns is None:  # the namespace may survive only in the parameter list
        pm = re.search(r"\((?:const\s+)?(\w+)::Flash_(?:fwd|bwd)_params", text)
        ns = pm.group(1) if pm else None
    d: dict = {"function": fn, "namespace": ns,
               "build": {"pytorch_flash": "PyTorch's vendored build",
                         "flash": "flash-attn build (pip / kernels Hub)"}.get(ns, ns)}
    direction = "forward" if m.group("dir") == "fwd" else "backward"
    variant = ("split-KV combine" if "combine" in fn else "split-KV" if "splitkv" in fn else
               None if fn == "flash_fwd_kernel" else fn)
    d["direction"] = direction
    if variant:
        d["variant"] = variant
    args, closed = _template_args(text, m.end()) if text[m.end():m.end() + 1] == "<" else ([], False)
    if args and not closed:
        d["truncated"] = True
    traits_text = args[0] if args else ""
    targs, _ = _template_args(traits_text, traits_text.find("<"))
    for key, value in zip(_TRAITS, targs):
        if key == "element":
            d[key] = value
            d["dtype"] = _cpp_dtype(value)
        elif key.startswith(("Is_", "Share")):
            d[key] = _bool(value)
        else:
            d[key] = _int(value)
    if isinstance(d.get("warps"), int):
        d["threads"] = d["warps"] * 32
    flags = args[1:]
    if "combine" in fn:
        names = ("kBlockM", "Log_max_splits", "Is_even_K")
        for key, value in zip(names, flags):
            d[key] = _bool(value) if key.startswith("Is_") else _int(value)
    elif flags:
        table = _SPLITKV_FLAGS if "splitkv" in fn else _FWD_FLAGS
        names = table.get(len(flags)) if closed else None
        if names is None and not closed:  # truncated: name the flags we have by the newest order
            newest = table[max(table)]
            names = newest[:len(flags)]
        if names:
            for key, value in zip(names, flags):
                d[key] = _bool(value)
        else:
            d["flags"] = [_bool(v) if _bool(v) is not None else v for v in flags]
    dtype = d.pop("dtype", None)
    tile = (f"{d['block_m']}x{d['block_n']}" if isinstance(d.get("block_m"), int)
            and isinstance(d.get("block_n"), int) else None)
    parts = [f"FlashAttention-2 {direction}" + (f" ({variant})" if variant else "")]
    if d.get("head_dim") is not None:
        parts.append(f"head_dim {d['head_dim']}")
    if tile:
        parts.append(f"{tile} tiles")
    if d.get("warps") is not None:
        parts.append(f"{d['warps']} warps")
    if d.get("Is_causal"):
        parts.append("causal")
    return {"kind": "attention", "library": "FlashAttention-2", "op": f"attention {direction}",
            "dtype": dtype, "math": TENSOR_CORES, "tile": tile, "details": d,
            "summary": ", ".join(parts)}
