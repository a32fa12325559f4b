"""cuBLAS: nvjet (Hopper and later), xmma, and the legacy names (ampere_bf16_s16816gemm_..., volta_sgemm_...)."""
from __future__ import annotations

import re

from ._common import FFMA, TENSOR_CORES, _NAME_DTYPES, _kernel_stem


# --- cuBLAS nvjet (Hopper and later) --------------------------------------------------------

# e.g. nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT. NVIDIA does not document these names
# (asked in NVIDIA/TensorRT-LLM#1541: "confidential"); labelled: the arch, the first AxB as the
# CTA tile (M x N), the AxB after it literally, the third as the thread-block cluster, "h" as
# 16-bit inputs, "bz" as beta == 0, coop* as a cooperative schedule, and the final [NT]{3} as the
# operand layout, kept literal. Anything else stays in details["other_tokens"].
def _nvjet(text: str) -> dict | None:
    stem = _kernel_stem(text)
    if not stem.startswith("nvjet"):
        return None
    tokens = stem.split("_")[1:]
    d: dict = {}
    arch = tile = dtype = None
    dims = []
    for i, tok in enumerate(tokens):
        if re.fullmatch(r"sm\d+[a-z]?", tok):
            arch = tok
        elif re.fullmatch(r"\d+x\d+", tok):
            dims.append(tok)
        elif tok == "h":
            d["inputs"] = "16-bit (h)"
            dtype = "16-bit"
        elif tok == "bz":
            d["beta"] = "zero (bz)"
        elif tok.startswith("coop"):
            d["schedule"] = f"cooperative ({tok})"
            d["schedule_token"] = tok
        elif re.fullmatch(r"[NT]{2,3}", tok):
            d["layout"] = tok
        elif i == (1 if arch else 0) and re.fullmatch(r"[a-z]+", tok) and "variant_token" not in d:
            d["variant_token"] = tok  # e.g. "tst": meaning not documented
        else:
            d.setdefault("other_tokens", []).append(tok)
    if dims:
        tile = dims[0]
        d["tile_m"], d["tile_n"] = (int(x) for x in dims[0].split("x"))
    if len(dims) > 1:
        d["dims_token_2"] = dims[1]  # undocumented; often read as K-tile x stages, unconfirmed
    if len(dims) > 2:
        d["cluster"] = dims[2]
    if len(dims) > 3:
        d["other_dims"] = dims[3:]
    parts = ["cuBLAS nvjet gemm" + (f" ({arch})" if arch else "")]
    parts += [f"{tile} tile" if tile else None, f"cluster {d['cluster']}" if "cluster" in d else None,
              d.get("layout"), d.get("schedule_token"), "16-bit inputs" if dtype else None,
              "beta 0" if "beta" in d else None]
    return {"kind": "gemm", "library": "cuBLAS (nvjet)", "op": "gemm", "dtype": dtype,
            "math": TENSOR_CORES, "arch": arch, "tile": tile, "details": d,
            "summary": ", ".join(p for p in parts if p)}


# --- cuBLAS xmma (sm80_xmma_gemm_..., sm90_xmma_gemm_...) -----------------------------------

# e.g. sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage3_warpsize2x2x1_tensor16x8x16_kernel
#      sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas
# The first type token is the A and B element types; the next two stay literal.
def _xmma(text: str) -> dict | None:
    stem = _kernel_stem(text)
    m = re.match(r"(?P<arch>sm\d+[a-z]?)_xmma_(?P<op>[a-z]+)_(?P<rest>.*)", stem)
    if not m:
        return None
    arch = m.group("arch")
    d: dict = {"operation": m.group("op")}
    dtype = tile = math = None
    type_tokens, layout_tokens = [], []
    for tok in m.group("rest").split("_"):
        if re.fullmatch(r"(?:bf16|f16|f32|tf32|f64|s8|s32|e4m3|e5m2|f8)+", tok) and not tile:
            type_tokens.append(tok)
        elif re.fullmatch(r"[nt]{1,3}", tok) and not tile:
            layout_tokens.append(tok)
        elif tok.startswith("tilesize"):
            tile = tok[len("tilesize"):]
        elif re.fullmatch(r"stages?\d+", tok):
            d["stages"] = int(re.sub(r"\D", "", tok))
        elif tok.startswith("warpsize"):
            d["warp_layout"] = tok[len("warpsize"):]
        elif tok.startswith("warpgroupsize"):
            d["warpgroup_layout"] = tok[len("warpgroupsize"):]
            math = TENSOR_CORES  # warpgroups exist for wgmma
        elif tok.startswith("tensor") and re.fullmatch(r"tensor\d+x\d+x\d+", tok):
            d["mma_shape"] = tok[len("tensor"):]
            math = TENSOR_CORES
        elif tok == "ffma":
            math = FFMA
        elif tok in ("wgmma", "hmma", "imma"):
            d["mma"] = tok
            math = TENSOR_CORES
        elif re.fullmatch(r"align[a-z]\d+", tok):
            d[f"align_{tok[5]}"] = int(tok[6:])
        elif tok == "cublas":
            d["from"] = "cuBLAS"
        elif tok == "cudnn":  # cuDNN launches xmma too (its implicit-gemm convolutions: xmma_fprop_...)
            d["from"] = "cuDNN"
        elif tok:
            d.setdefault("other_tokens", []).append(tok)
    if type_tokens:
        d["type_tokens"] = type_tokens
        first = re.findall(r"bf16|tf32|f16|f32|f64|s8|s32|e4m3|e5m2", type_tokens[0])
        dtype = _NAME_DTYPES.get(first[0]) if first else None
    if layout_tokens:
        d["operand_layout"] = layout_tokens[0]
        if len(layout_tokens) > 1:
            d["layout_tokens"] = layout_tokens
    if math is None and dtype in ("bf16", "fp16", "tf32", "fp8 e4m3", "fp8 e5m2", "int8"):
        math, d["math_inferred"] = TENSOR_CORES, "from the 16/8-bit input type"
    library = "cuDNN" if d.get("from") == "cuDNN" else "cuBLAS"
    parts = [f"{library} xmma {d['operation']} ({arch})", dtype, f"{tile} tile" if tile else None,
             f"{d['stages']} stages" if "stages" in d else None,
             f"warps {d['warp_layout']}" if "warp_layout" in d else None,
             d.get("operand_layout"), math]
    return {"kind": "gemm" if "gemm" in d["operation"] else "unknown", "library": library,
            "op": d["operation"], "dtype": dtype, "math": math, "arch": arch, "tile": tile,
            "details": d, "summary": ", ".join(p for p in parts if p)}


# --- cuBLAS legacy names (ampere_bf16_s16816gemm_..., volta_sgemm_128x64_nn) ----------------

# e.g. ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn : s16816 = mma.sync m16n8k16
#      volta_sgemm_128x64_nn : plain single-precision gemm on CUDA cores (FFMA)
_ARCH_WORDS = ("maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
_MMA_GEMM = re.compile(r"(?P<acc>[a-z])(?P<shape>\d{3,5})gemm")


def _mma_shape(digits: str) -> str:
    # 16816 -> m16n8k16, 1688 -> m16n8k8, 884 -> m8n8k4, 16832 -> m16n8k32
    for m_len in (2, 1):
        m_, rest = digits[:m_len], digits[m_len:]
        if len(rest) >= 2 and rest[0] == "8":
            return f"m{m_}n{rest[0]}k{rest[1:]}"
    return digits


def _cublas_legacy(text: str) -> dict | None:
    stem = _kernel_stem(text)
    tokens = stem.split("_")
    if not tokens or not (tokens[0] in _ARCH_WORDS or re.fullmatch(r"sm\d+", tokens[0])):
        return None
    if not any("gemm" in t or "gemv" in t for t in tokens):
        return None
    arch = tokens[0]
    d: dict = {}
    dtype = tile = math = None
    out_dtype = None
    dims = []
    op = "gemm"
    for i, tok in enumerate(tokens[1:], 1):
        mm = _MMA_GEMM.fullmatch(tok)
        if mm:
            d["mma_instruction"] = f"mma.sync {_mma_shape(mm.group('shape'))}"
            d["mma_token"] = tok
            d["accumulate_letter"] = mm.group("acc")  # s/h/i: by convention the accumulator type
            math = TENSOR_CORES
        elif tok in ("sgemm", "sgemv"):
            math, dtype, op = FFMA, dtype or "fp32", tok[1:]
        elif tok in ("dgemm", "dgemv"):
            math, dtype, op = "CUDA cores (DFMA)", dtype or "fp64", tok[1:]
        elif tok in ("hgemm", "hgemv"):
            math, dtype, op = "CUDA cores (HFMA2)", dtype or "fp16", tok[1:]
        elif tok in ("bf16", "fp16", "f16", "fp32", "tf32", "int8", "i8"):
            if "mma_token" in d or op != "gemm":
                out_dtype = _NAME_DTYPES.get(tok, tok)
            else:
                dtype = _NAME_DTYPES.get(tok, tok)
        elif re.fullmatch(r"\d+x\d+", tok):
            dims.append((tokens[i - 1] if i > 1 else "", tok))
        elif re.fullmatch(r"[nt]{2}", tok):
            d["operand_layout"] = tok
        elif re.fullmatch(r"ldg\d+", tok):
            d["ldg"] = int(tok[3:])  # global-load vector width token
        elif tok.startswith("sliced"):
            d["sliced"] = tok[6:]
        elif tok in ("stages", "stage"):
            pass
        elif tok:
            d.setdefault("other_tokens", []).append(tok)
    for before, dim in dims:
        if before in ("stages", "stage"):
            d["k_tile"], d["stages"] = (int(x) for x in dim.split("x"))
        elif tile is None:
            tile = dim
        else:
            d.setdefault("other_dims", []).append(dim)
    if out_dtype:
        d["output_dtype"] = out_dtype
    if math is None and dtype in ("bf16", "fp16", "tf32"):
        math, d["math_inferred"] = TENSOR_CORES, "from the 16-bit input type"
    parts = [f"cuBLAS {op} ({arch})", dtype, d.get("mma_instruction"),
             f"{tile} tile" if tile else None,
             f"{d['stages']} stages" if "stages" in d else None, d.get("operand_layout"), math]
    return {"kind": "gemm", "library": "cuBLAS", "op": op, "dtype": dtype, "math": math,
            "arch": arch, "tile": tile, "details": d, "summary": ", ".join(p for p in parts if p)}


def _cublas_other(text: str) -> dict | None:
    # cuBLAS helper kernels: split-K reductions, gemv, small gemms
    stem = _kernel_stem(re.sub(r"^(?:void\s+)?(?:\w+::)*", "", text))
    low = text.lower()
    if "splitkreduce" in low:
        return {"kind": "reduce", "library": "cuBLAS", "op": "split-K reduce",
                "details": {"function": "splitKreduce_kernel"},
                "summary": "cuBLAS split-K reduction (sums the partial gemm tiles)"}
    if re.match(r"(gemv\w*|gemm\w*_kernel|gemmSN\w*|gemmk1\w*)", stem):
        return {"kind": "gemm", "library": "cuBLAS", "op": "gemv" if "gemv" in stem else "gemm",
                "details": {"function": stem}, "summary": f"cuBLAS {stem}"}
    return None
