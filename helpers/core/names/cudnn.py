"""cuDNN's generated kernels (cudnn_generated_fort_native_sdpa_...)."""
from __future__ import annotations

import re

from ._common import TENSOR_CORES, _NAME_DTYPES, _kernel_stem


# --- cuDNN generated kernels ----------------------------------------------------------------

# e.g. cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0
# cuDNN's names are not documented; what is labelled here is what the tokens spell plainly.
_MMA_PATHS = {"wgmma": "wgmma (Hopper warpgroup MMA)", "hmma": "hmma (mma.sync tensor cores)",
              "umma": "umma (Blackwell tcgen05 MMA)", "tcgen05": "tcgen05 (Blackwell MMA)",
              "imma": "imma (integer tensor cores)"}
_DIRECTIONS = {"fprop": "forward", "bprop": "backward", "dgrad": "backward (data gradient)",
               "wgrad": "backward (weight gradient)"}


def _cudnn(text: str) -> dict | None:
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
        d["warp_layout"] = dims[1]  # warps (or warpgroups) per CTA along M x N x K
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
    if "warp_layout" in d:
        parts.append(f"warps {d['warp_layout']}")
    if "cluster" in d:
        parts.append(f"cluster {d['cluster']}")
    op = None
    if attention:
        op = "attention " + _DIRECTIONS[d["direction"]].split(" ")[0] if "direction" in d else "attention"
    return {"kind": kind, "library": "cuDNN", "op": op,
            "dtype": dtype, "math": math, "arch": arch, "tile": tile, "details": d,
            "summary": ", ".join(parts)}
