"""cuDNN's generated kernels (cudnn_generated_fort_native_sdpa_...)."""
from __future__ import annotations

import re

from ._common import TENSOR_CORES, _NAME_DTYPES, _kernel_stem


# --- cuDNN generated kernels ----------------------------------------------------------------

# e.g. cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0
# cuDNN's names are not documented; what is labelled here is what the tokens spell plainly. The
# field after the tile (4x1x1) is no warp count: the launch's block says how many warps there are.
_MMA_PATHS = {"wgmma": "wgmma (Hopper warpgroup MMA)", "hmma": "hmma (mma.sync tensor cores)",
              "umma": "umma (Blackwell tcgen05 MMA)", "tcgen05": "tcgen05 (Blackwell MMA)",
              "imma": "imma (integer tensor cores)"}
_DIRECTIONS = {"fprop": "forward", "bprop": "backward", "dgrad": "backward (data gradient)",
               "wgrad": "backward (weight gradient)"}


WARP_THREADS = 32
WARPGROUP_WARPS = 4   # a warpgroup: four consecutive warps, the unit Hopper's wgmma runs on


def _product(dims: str) -> int:
    n = 1
    for x in dims.split("x"):
        n *= int(x)
    return n


def layout_against_launch(name: str, threads: int) -> dict | None:
    """cuDNN's layout field (`4x1x1`, `1x4x1`) held to a launch's block: the field's product, the
    block's warps and warpgroups, and whether the product is one warpgroup of a block made of whole
    warpgroups (`one_warpgroup`). None for a name with no such field."""
    fields = _cudnn(name or "")
    layout = (fields or {}).get("details", {}).get("layout")
    if layout is None:
        return None
    product, warps = _product(layout), int(threads) // WARP_THREADS
    whole = int(threads) % (WARP_THREADS * WARPGROUP_WARPS) == 0
    return {"layout": layout, "product": product, "threads": int(threads), "block_warps": warps,
            "warpgroups": warps // WARPGROUP_WARPS if whole else None,
            "one_warpgroup": product == WARPGROUP_WARPS and whole and warps > product,
            "is_block_warps": product == warps}


# the helpers cuDNN's SDPA backward launches around its generated kernel, by their C++ names
# (cudnn::fusion::compute_dot_do_o_specialized<...>, cudnn::fusion::convert_dq_to_16bits<...>)
_FUSION_HELPERS = {
    "compute_dot_do_o": ("reduce", "rowsum(dO·O)", "per query row, the dot product of dO and O (the softmax gradient's D)"),
    "convert_dq_to_16bits": ("copy", "dQ fp32 → 16-bit", "dQ, accumulated in fp32, written as 16-bit"),
}
_FUSION = re.compile(r"cudnn::fusion::(?P<fn>\w+)")


def _cudnn(text: str) -> dict | None:
    fm = _FUSION.search(text)
    if fm:
        fn = fm.group("fn")
        role = next((v for k, v in _FUSION_HELPERS.items() if fn.startswith(k)), None)
        if role:
            kind, op, words = role
            return {"kind": kind, "library": "cuDNN", "op": op,
                    "details": {"function": fn, "computes": words, "direction": "backward"},
                    "summary": f"cuDNN SDPA backward helper, {op}"}
        return {"kind": "fused", "library": "cuDNN", "details": {"function": fn},
                "summary": f"cuDNN fusion kernel {fn}"}
    stem = _kernel_stem(text)
    if not (stem.startswith("cudnn") or "cudnn_generated" in stem):
        return None
    tokens = stem.split("_")
    d: dict = {}
    arch = tile = dtype = math = None
    dims = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if re.fullmatch(r"sm\d+[a-z]?", tok):
            arch = tok
        elif tok == "sdpa":
            d["operation"] = "sdpa (scaled dot-product attention)"
        elif tok == "flash":
            d["algorithm"] = "flash"
        elif tok in _DIRECTIONS:
            d["direction"] = tok
            d["direction_words"] = _DIRECTIONS[tok]
        elif tok in _MMA_PATHS:
            d["mma"] = tok
            d["mma_words"] = _MMA_PATHS[tok]
            math = TENSOR_CORES
        elif tok in ("f16", "bf16", "fp16", "fp8", "e4m3", "e5m2", "f32", "tf32"):
            d["precision_token"] = tok
            # "f16" in these names stands for 16-bit inputs: bf16 runs give the same token
            dtype = "16-bit" if tok == "f16" else _NAME_DTYPES.get(tok, tok)
        elif tok == "knob" and i + 1 < len(tokens) and tokens[i + 1].isdigit():
            d["knob"] = int(tokens[i + 1])  # the engine-config knob cuDNN's heuristics chose
            i += 1
        elif re.fullmatch(r"\d+x\d+(?:x\d+)?", tok):
            dims.append(tok)
        elif re.fullmatch(r"cga\d+x\d+x\d+", tok):
            d["cluster"] = tok[3:]  # CGA = cooperative grid array, CUDA's thread-block cluster
        elif re.fullmatch(r"kernel\d*", tok):
            d["kernel_index"] = tok[6:] or None
            d["suffix"] = "_".join(tokens[i + 1:]) or None
            break
        elif tok in ("cudnn", "generated"):
            pass
        else:
            d.setdefault("other_tokens", []).append(tok)
        i += 1
    if dims:
        tile = dims[0]
    if len(dims) > 1:
        # a second layout field, undocumented: not the warp count (fprop's 4x1x1 and bprop's 1x4x1
        # both launch 384 threads, 12 warps in three warpgroups). Its product is 4, the warps of ONE
        # warpgroup, the unit a wgmma runs on: a layout of one warpgroup's warps over the tile
        # (`layout_against_launch` checks it against a launch's block)
        d["layout"] = dims[1]
        d["layout_product"] = _product(dims[1])
        if d["layout_product"] == WARPGROUP_WARPS and d.get("mma") == "wgmma":
            d["layout_reads_as"] = "one warpgroup's layout over the tile (its product is a warpgroup, not the block)"
    if len(dims) > 2:
        d["other_dims"] = dims[2:]
    attention = "operation" in d or d.get("algorithm") == "flash" or "mha" in stem or "fmha" in stem
    kind = "attention" if attention else "fused"
    parts = ["cuDNN " + ("SDPA" if "operation" in d else "generated kernel")]
    parts += [x for x in (d.get("algorithm"), d.get("direction_words"), d.get("mma"), arch) if x]
    if "knob" in d:
        parts.append(f"knob {d['knob']}")
    if tile:
        parts.append(f"{tile} tile")
    if "layout" in d:
        p = d["layout_product"]
        parts.append(f"layout {d['layout']} (product {p}: one warpgroup, not the block's warp count)"
                     if "layout_reads_as" in d else f"layout {d['layout']} (product {p}; the launch gives the warp count)")
    if "cluster" in d:
        parts.append(f"cluster {d['cluster']}")
    op = None
    if attention:
        op = "attention " + _DIRECTIONS[d["direction"]].split(" ")[0] if "direction" in d else "attention"
    return {"kind": kind, "library": "cuDNN", "op": op,
            "dtype": dtype, "math": math, "arch": arch, "tile": tile, "details": d,
            "summary": ", ".join(parts)}
