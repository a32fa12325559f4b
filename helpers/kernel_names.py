"""Read a GPU kernel name like a fingerprint.

CUPTI (and so Kineto, and so the PyTorch profiler) reports each kernel by its name: a demangled
C++ signature (``void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, ...``) or
a name a library generated (``nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT``). Those names
carry the library, the data type, the tile sizes, the warp counts and the template flags the
kernel was compiled with. ``decode`` splits one name into named fields; ``decode_frame`` does a
column of them.

Rules kept throughout:
- only label what the name (or the source that generates it) justifies; a token whose meaning
  is not documented stays literal in ``details`` under a neutral key;
- names can be truncated anywhere (Kineto and some viewers cut long signatures), so every
  family decodes what it can and leaves the rest None;
- ``decode`` never raises: an unrecognised name is kind "unknown", library "unknown".

No torch import: this runs on recorded traces, on machines with no GPU.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

KINDS = ("gemm", "attention", "softmax", "masked_fill", "elementwise", "copy", "fill", "reduce",
         "mask", "fused", "memcpy", "memset", "unknown")

TENSOR_CORES = "tensor cores"
FFMA = "CUDA cores (FFMA)"


@dataclass(frozen=True)
class KernelName:
    name: str            # the name, literally
    kind: str            # one of KINDS
    library: str         # "cuBLAS (nvjet)", "cuBLAS", "CUTLASS", "CUTLASS (xformers mem-efficient)",
                         # "FlashAttention-2", "cuDNN", "ATen", "Triton", "CUDA runtime", "unknown"
    op: str | None       # what it computes, short: "mul", "masked_fill", "softmax", "direct copy", ...
    dtype: str | None    # "bf16", "fp16", "fp32", "bool", ... or "16-bit" where the name says no more
    math: str | None     # "tensor cores" or "CUDA cores (FFMA)" for gemm/attention kernels
    arch: str | None     # target arch as written: "sm80", "sm90", "ampere"
    tile: str | None     # tile as written: "64x64", "256x128", "64x128x64"
    details: dict = field(default_factory=dict)  # family-specific named fields
    summary: str = ""    # one readable line for a table


COLUMNS = ["name", "kind", "library", "op", "dtype", "math", "arch", "tile", "summary", "details"]


def decode(name) -> KernelName:
    """The fields of one kernel name. Never raises."""
    text = "" if name is None else name if isinstance(name, str) else str(name)
    try:
        for family in _FAMILIES:
            fields = family(text)
            if fields is not None:
                return _make(text, fields)
    except Exception as err:  # a decoder bug must not break a notebook: report it, don't raise
        return _make(text, {"details": {"decode_error": repr(err)}})
    return _make(text, {})


def decode_frame(names) -> pd.DataFrame:
    """One row per name: name, kind, library, op, dtype, math, arch, tile, summary, details."""
    rows = []
    for name in names:
        k = decode(name)
        rows.append({c: getattr(k, c) for c in COLUMNS})
    return pd.DataFrame(rows, columns=COLUMNS)


def _make(text: str, f: dict) -> KernelName:
    kind = f.get("kind", "unknown")
    if kind not in KINDS:
        kind = "unknown"
    library = f.get("library") or "unknown"
    summary = f.get("summary") or ("unrecognised kernel name" if kind == "unknown" else
                                   " ".join(x for x in (library, kind, f.get("op") or "") if x))
    return KernelName(name=text, kind=kind, library=library, op=f.get("op"), dtype=f.get("dtype"),
                      math=f.get("math"), arch=f.get("arch"), tile=f.get("tile"),
                      details=dict(f.get("details") or {}), summary=summary)


# --- shared pieces --------------------------------------------------------------------------

# C++ element types as they appear in demangled names, and the short names used here
_CPP_DTYPES = {
    "c10::BFloat16": "bf16", "cutlass::bfloat16_t": "bf16", "__nv_bfloat16": "bf16",
    "c10::Half": "fp16", "cutlass::half_t": "fp16", "__half": "fp16", "half": "fp16",
    "float": "fp32", "double": "fp64", "bool": "bool",
    "c10::Float8_e4m3fn": "fp8 e4m3", "c10::Float8_e5m2": "fp8 e5m2",
    "cutlass::float_e4m3_t": "fp8 e4m3", "cutlass::float_e5m2_t": "fp8 e5m2",
    "signed char": "int8", "unsigned char": "uint8", "short": "int16", "int": "int32",
    "long": "int64", "long long": "int64", "c10::complex<float>": "complex64",
    "c10::complex<double>": "complex128",
}
# dtype tokens in generated names (cuBLAS, CUTLASS, cuDNN, xformers)
_NAME_DTYPES = {"bf16": "bf16", "fp16": "fp16", "f16": "fp16", "h": "fp16", "f32": "fp32",
                "fp32": "fp32", "tf32": "tf32", "f64": "fp64", "s8": "int8", "i8": "int8",
                "e4m3": "fp8 e4m3", "e5m2": "fp8 e5m2", "s32": "int32"}


def _cpp_dtype(token: str | None) -> str | None:
    if token is None:
        return None
    token = token.strip().replace("const ", "").rstrip("*& ").strip()
    return _CPP_DTYPES.get(token)


def _template_args(text: str, start: int) -> tuple[list[str], bool]:
    """Top-level arguments of the <...> that opens at text[start]; and whether it closed.

    A truncated name gives the arguments read so far (the last one possibly cut short).
    Brackets of every kind nest, so lambdas `{lambda(int)#1}` and `operator()()` don't split.
    """
    if start < 0 or start >= len(text) or text[start] != "<":
        return [], False
    depth, buf, args = 0, [], []
    for ch in text[start:]:
        if ch in "<({[":
            depth += 1
            if depth == 1:
                continue
        elif ch in ">)}]":
            depth -= 1
            if depth == 0:
                args.append("".join(buf).strip())
                return args, True
        elif ch == "," and depth == 1:
            args.append("".join(buf).strip())
            buf = []
            continue
        buf.append(ch)
    if "".join(buf).strip():
        args.append("".join(buf).strip())
    return args, False


def _args_after(text: str, pattern: str) -> tuple[list[str], bool] | None:
    """Template arguments of the first `pattern<...>` in text, or None if it has none."""
    m = re.search(pattern + r"\s*<", text)
    if not m:
        return None
    return _template_args(text, m.end() - 1)


def _bool(token: str | None) -> bool | None:
    return {"true": True, "false": False, "1": True, "0": False}.get((token or "").strip())


def _int(token: str | None) -> int | None:
    m = re.fullmatch(r"\s*(-?\d+)[uUlL]*\s*", token or "")
    return int(m.group(1)) if m else None


def _kernel_stem(text: str) -> str:
    """The name before its parameter list and template arguments: the generated-name part."""
    stem = re.sub(r"^void\s+", "", text.strip())
    return re.split(r"[<(\s]", stem, maxsplit=1)[0]


# --- CUDA runtime: memcpy and memset ------------------------------------------------------

_MEMCPY = re.compile(r"^Memcpy\s+(?P<dir>[A-Za-z]+)(?:\s*\((?P<src>[^)>-]*?)\s*->\s*(?P<dst>[^)]*?)\))?")
_MEMSET = re.compile(r"^Memset(?:\s*\((?P<where>[^)]*)\))?")
_MEMCPY_WORDS = {"DtoD": "device to device", "HtoD": "host to device", "DtoH": "device to host",
                 "HtoH": "host to host", "PtoP": "peer to peer", "DtoA": "device to array",
                 "AtoD": "array to device"}


def _runtime(text: str) -> dict | None:
    # Kineto names copies and sets the runtime does (not kernels): "Memcpy DtoD (Device -> Device)"
    m = _MEMCPY.match(text)
    if m:
        d = {"direction": m.group("dir"), "direction_words": _MEMCPY_WORDS.get(m.group("dir"))}
        if m.group("src") is not None:
            d["src_memory"], d["dst_memory"] = m.group("src").strip(), m.group("dst").strip()
        where = f" ({d['src_memory']} -> {d['dst_memory']})" if "src_memory" in d else ""
        return {"kind": "memcpy", "library": "CUDA runtime", "op": f"memcpy {m.group('dir')}",
                "details": d, "summary": f"runtime copy {m.group('dir')}{where}"}
    m = _MEMSET.match(text)
    if m:
        d = {"memory": m.group("where").strip()} if m.group("where") else {}
        return {"kind": "memset", "library": "CUDA runtime", "op": "memset", "details": d,
                "summary": "runtime memset" + (f" ({d['memory']})" if d else "")}
    return None


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


# --- xformers' CUTLASS memory-efficient attention (PyTorch's EFFICIENT_ATTENTION) -----------

# Names come from mem_eff_attention/kernels/generate_kernels.py:
#   forward:  fmha_cutlassF_{dtype}_{aligned|notaligned}_{q}x{k}_{rf|gmem}_sm{sm}
#             where "rf" means max_k <= k: the output tile stays in the register file across
#             key blocks (kSingleValueIteration); "gmem" accumulates it in global memory.
#   backward: fmha_cutlassB_{dtype}_{aligned}_{block_i}x{block_j}_k{max_k}[_dropout][_seqaligned]_sm{sm}
# The parameter list names the class: AttentionKernel<scalar_t, ArchTag, isAligned,
#   kQueriesPerBlock, kKeysPerBlock, kMaxK, kSupportsDropout, kSupportsBias, ...> (kernel_forward.h)
#   AttentionBackwardKernel<ArchTag, scalar_t, isAligned, kApplyDropout, kPreload_MMAs,
#   kBlockSizeI, kBlockSizeJ, kMaxK[, kKeysQueriesAlignedToBlockSize]> (kernel_backward.h)
_FMHA = re.compile(r"fmha_cutlass(?P<dir>[FB])(?P<rest>\w*)")
_FWD_CLASS = ("scalar_t", "arch_tag", "is_aligned", "kQueriesPerBlock", "kKeysPerBlock", "kMaxK",
              "kSupportsDropout", "kSupportsBias")
_BWD_CLASS = ("arch_tag", "scalar_t", "is_aligned", "kApplyDropout", "kPreload_MMAs",
              "kBlockSizeI", "kBlockSizeJ", "kMaxK", "kKeysQueriesAlignedToBlockSize")


def _cutlass_fmha(text: str) -> dict | None:
    m = _FMHA.search(text)
    if not m:
        return None
    forward = m.group("dir") == "F"
    d: dict = {"algorithm": "memory-efficient attention " + ("forward (cutlassF)" if forward
                                                             else "backward (cutlassB)"),
               "direction": "forward" if forward else "backward"}
    dtype = arch = tile = None
    for tok in m.group("rest").split("_"):
        if tok in ("bf16", "f16", "f32"):
            dtype = _NAME_DTYPES[tok]
        elif tok in ("aligned", "notaligned"):
            d["alignment"] = tok
        elif re.fullmatch(r"\d+x\d+", tok):
            tile = tok
            q, k = tok.split("x")
            if forward:
                d["queries_per_block"], d["keys_per_block"] = int(q), int(k)
            else:
                d["block_i"], d["block_j"] = int(q), int(k)
        elif tok == "rf":
            d["output_accumulator"] = "register file (kSingleValueIteration: max_k <= keys per block)"
        elif tok == "gmem":
            d["output_accumulator"] = "global memory (max_k > keys per block)"
        elif re.fullmatch(r"k\d+", tok):
            d["max_k"] = int(tok[1:])
        elif tok == "dropout":
            d["dropout"] = True
        elif tok == "seqaligned":
            d["keys_queries_aligned_to_blocksizes"] = True
        elif re.fullmatch(r"sm\d+", tok):
            arch = tok
    cls = _args_after(text, r"AttentionKernel") if forward else _args_after(text, r"AttentionBackwardKernel")
    if cls:
        args, closed = cls
        names = _FWD_CLASS if forward else _BWD_CLASS
        template = {}
        for key, value in zip(names, args):
            if key == "scalar_t":
                template[key] = value
                dtype = dtype or _cpp_dtype(value)
            elif key == "arch_tag":
                template[key] = value
                am = re.search(r"Sm(\d+)", value)
                arch = arch or (f"sm{am.group(1)}" if am else None)
            elif key.startswith(("is_", "kSupports", "kApply", "kPreload", "kKeysQueries")):
                template[key] = _bool(value)
            else:
                template[key] = _int(value)
        if not closed:
            template["truncated"] = True
        d["template"] = template
    parts = [d["algorithm"]]
    parts += [x for x in (dtype, f"{tile} tiles" if tile else None) if x]
    if "output_accumulator" in d:
        parts.append("output in registers" if d["output_accumulator"].startswith("register")
                     else "output in global memory")
    if arch:
        parts.append(arch)
    return {"kind": "attention", "library": "CUTLASS (xformers mem-efficient)",
            "op": "attention " + d["direction"], "dtype": dtype, "math": TENSOR_CORES if dtype
            in ("bf16", "fp16") else None, "arch": arch, "tile": tile, "details": d,
            "summary": ", ".join(parts)}


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
        kind, op = "fused", "+".join(ops) if ops else None
    summary = f"Triton {d['kernel_class']}" + (f": {', '.join(ops)}" if ops else "")
    return {"kind": kind, "library": "Triton", "op": op, "details": d, "summary": summary}


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
    parts = [f"cuBLAS xmma {d['operation']} ({arch})", dtype, f"{tile} tile" if tile else None,
             f"{d['stages']} stages" if "stages" in d else None,
             f"warps {d['warp_layout']}" if "warp_layout" in d else None,
             d.get("operand_layout"), math]
    return {"kind": "gemm" if "gemm" in d["operation"] else "unknown", "library": "cuBLAS",
            "op": d["operation"], "dtype": dtype, "math": math, "arch": arch, "tile": tile,
            "details": d, "summary": ", ".join(p for p in parts if p)}


# --- CUTLASS gemms (cutlass_80_tensorop_..., cutlass3x_sm90_...) ----------------------------

# CUTLASS 2 profiler names: cutlass_{arch}_{tensorop|simt|wmma}_{type}_{s16816}gemm_{...}_{MxN}_{KxStages}_{layout}_align{N}
# (the KxStages reading confirmed by a CUTLASS maintainer in NVIDIA/cutlass#1025)
def _cutlass_gemm(text: str) -> dict | None:
    stem_m = re.search(r"\b(cutlass3?x?_(?:sm)?\d+\w*)", text)
    if not stem_m or "gemm" not in stem_m.group(1):
        return None
    stem = stem_m.group(1)
    tokens = stem.split("_")
    d: dict = {}
    arch_tok = tokens[1] if len(tokens) > 1 else ""
    arch = arch_tok if arch_tok.startswith("sm") else f"sm{arch_tok}" if arch_tok.isdigit() else None
    dtype = tile = math = None
    dims = []
    for tok in tokens[2:]:
        mm = re.fullmatch(r"([a-z]?)(\d{3,5})gemm", tok)
        if tok in ("tensorop", "wmma"):
            math = TENSOR_CORES
        elif tok == "simt":
            math = FFMA if dtype in (None, "fp32") else "CUDA cores"
        elif mm:
            d["mma_token"] = tok
            math = TENSOR_CORES
        elif tok in _NAME_DTYPES and dtype is None:
            dtype = _NAME_DTYPES[tok]
        elif re.fullmatch(r"\d+x\d+(?:x\d+)?", tok):
            dims.append(tok)
        elif re.fullmatch(r"[nt]{2,3}", tok):
            d["operand_layout"] = tok
        elif tok.startswith("align") and tok[5:].isdigit():
            d["alignment"] = int(tok[5:])
        elif tok and tok != "gemm":
            d.setdefault("other_tokens", []).append(tok)
    if dims:
        tile = dims[0]
    if len(dims) > 1:
        if stem.startswith("cutlass3x"):  # CUTLASS 3: {MxNxK}_{cluster MxNxK}
            d["cluster"] = dims[1]
        elif len(dims[1].split("x")) == 2:  # CUTLASS 2: {MxN}_{K-tile x stages}
            d["k_tile"], d["stages"] = (int(x) for x in dims[1].split("x"))
        else:
            d["other_dims"] = dims[1:]
    parts = ["CUTLASS gemm" + (f" ({arch})" if arch else ""), dtype,
             f"{tile} tile" if tile else None, d.get("operand_layout"), math]
    return {"kind": "gemm", "library": "CUTLASS", "op": "gemm", "dtype": dtype, "math": math,
            "arch": arch, "tile": tile, "details": d, "summary": ", ".join(p for p in parts if p)}


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


# --- ATen (PyTorch's own kernels) -----------------------------------------------------------

# what an elementwise kernel computes, read off the functor or the kernel function in its name
_ATEN_OPS = [  # (pattern, op); first match wins, so specific before general
    (r"masked_fill", "masked_fill"),
    (r"where_kernel", "where"),
    (r"(?:bfloat16|float16|float8\w*?|half)_copy_kernel_cuda", "dtype copy"),
    (r"direct_copy_kernel_cuda", "direct copy"),
    (r"CatArrayBatchedCopy", "cat"),
    (r"FillFunctor|fill_kernel", "fill"),
    (r"triu_tril_kernel", "triu/tril"),
    (r"MulFunctor|mul_kernel", "mul"),
    (r"DivFunctor|div_true_kernel|div_floor_kernel|div_trunc_kernel", "div"),
    (r"CUDAFunctor\w*_add|AddFunctor|add_kernel", "add"),
    (r"sub_kernel|SubFunctor", "sub"),
    (r"exp2_kernel", "exp2"), (r"exp_kernel", "exp"), (r"log_kernel", "log"),
    (r"neg_kernel", "neg"), (r"abs_kernel", "abs"), (r"rsqrt_kernel", "rsqrt"),
    (r"sqrt_kernel", "sqrt"), (r"reciprocal_kernel", "reciprocal"), (r"sigmoid_kernel", "sigmoid"),
    (r"tanh_kernel", "tanh"), (r"pow_\w*kernel", "pow"), (r"clamp\w*kernel", "clamp"),
    (r"logical_not_kernel", "logical_not"), (r"logical_and_kernel", "logical_and"),
    (r"logical_or_kernel", "logical_or"), (r"bitwise_not_kernel", "bitwise_not"),
    (r"bitwise_\w+_kernel", "bitwise"),
    (r"maximum_kernel|MaxFunctor", "maximum"), (r"minimum_kernel|MinFunctor", "minimum"),
    (r"CompareEqFunctor|eq_kernel", "eq"), (r"ne_kernel", "ne"),
    (r"CompareFunctor|lt_kernel|le_kernel|gt_kernel|ge_kernel", "compare"),
    (r"nan_to_num", "nan_to_num"), (r"fused_dropout|dropout", "dropout"),
    (r"arange|linspace", "arange"),
    (r"normal_kernel|uniform_kernel|distribution_elementwise", "random"),
    (r"index_elementwise_kernel|index_put|index_kernel", "index"),
    (r"copy_kernel|CopyFunctor", "copy"),
]
_ATEN_LAUNCHERS = re.compile(
    r"(vectorized_elementwise_kernel|unrolled_elementwise_kernel|elementwise_kernel_with_index|"
    r"elementwise_kernel|index_elementwise_kernel|reduce_kernel|vectorized_templated_elementwise_kernel)")
_REDUCTIONS = [(r"and_kernel|AndOps|\ball\b", "and (all)"), (r"or_kernel|OrOps|\bany\b", "or (any)"),
               (r"sum_functor|sum_kernel|SumOps", "sum"), (r"MeanOps|mean_kernel", "mean"),
               (r"ArgMaxOps|argmax", "argmax"), (r"ArgMinOps|argmin", "argmin"),
               (r"MaxOps|max_values|max_kernel|MaxNanFunctor", "max"),
               (r"MinOps|min_values|min_kernel|MinNanFunctor", "min"),
               (r"NormOps|norm_kernel|NormTwoOps|NormOneOps", "norm"), (r"prod", "prod"),
               (r"std_var|WelfordOps", "std/var")]


def _lambda_dtype(text: str) -> str | None:
    # the innermost lambda's signature names the element types: {lambda(c10::BFloat16, bool)#1}
    # where's lambda starts with the bool condition: prefer the first non-bool type
    for sig in re.findall(r"\{lambda\(([^()]*)\)#\d+\}", text):
        types = [_cpp_dtype(t) for t in sig.split(",") if t.strip() and t.strip() != "int"]
        types = [t for t in types if t]
        if types:
            return next((t for t in types if t != "bool"), types[0])
    return None


def _functor_dtype(text: str) -> str | None:
    for m in re.finditer(r"(?:Functor\w*|Functor)\s*<", text):
        args, _ = _template_args(text, m.end() - 1)
        if args and _cpp_dtype(args[0]):
            return _cpp_dtype(args[0])
    return None


def _aten_dtype(text: str) -> str | None:
    got = _lambda_dtype(text) or _functor_dtype(text)
    if got:
        return got
    for token, short in (("c10::BFloat16", "bf16"), ("c10::Half", "fp16"),
                         ("c10::Float8_e4m3fn", "fp8 e4m3"), ("c10::Float8_e5m2", "fp8 e5m2")):
        if token in text:
            return short
    return None


def _aten_softmax(text: str) -> dict | None:
    m = re.search(r"(softmax_warp_(?:forward|backward)|cunn_SoftMax(?:Forward|Backward)\w*|"
                  r"cunn_SpatialSoftMax(?:Forward|Backward))", text)
    if not m:
        return None
    fn = m.group(1)
    d: dict = {"function": fn}
    dtype = None
    args, closed = (_template_args(text, m.end()) if text[m.end():m.end() + 1] == "<" else ([], False))
    log = False
    if fn.startswith("softmax_warp"):
        # PersistentSoftmax.cuh: <input_t, output_t, acc_t, log2_elements, is_log_softmax, is_masked>
        names = ("input", "output", "accumulate", "log2_elements", "is_log_softmax", "is_masked")
        for key, value in zip(names, args):
            if key in ("input", "output", "accumulate"):
                d[f"{key}_dtype"] = _cpp_dtype(value) or value
            elif key == "log2_elements":
                d[key] = _int(value)
                if d[key] is not None:
                    d["elements_per_row"] = 2 ** d[key]  # the row (softmax dim) padded to a power of 2
            else:
                d[key] = _bool(value)
        log = bool(d.get("is_log_softmax"))
        d["algorithm"] = "one warp per row, row held in registers (dim <= 1024)"
    elif fn.startswith("cunn_SoftMax"):
        # SoftMax.cu: cunn_SoftMaxForward<ILP, scalar_t, accscalar_t, outscalar_t, Epilogue>,
        # cunn_SoftMaxForwardSmem<ILP, ..., Epilogue, index_t>, and
        # cunn_SoftMaxForwardReg<scalar_t, accscalar_t, outscalar_t, Epilogue, index_t, reg_cnt>
        if fn.endswith("Reg"):
            names = ("input", "accumulate", "output", "epilogue", "index_t", "reg_cnt")
        else:
            names = ("ILP", "input", "accumulate", "output", "epilogue", "index_t")
        for key, value in zip(names, args):
            if key in ("ILP", "reg_cnt"):
                d[key] = _int(value)
            elif key == "index_t":
                d[key] = value
            elif key == "epilogue":
                d[key] = value.split("::")[-1]
                log = "LogSoftMax" in value
            else:
                d[f"{key}_dtype"] = _cpp_dtype(value) or value
        d["algorithm"] = "one block per row" + (", row staged in shared memory" if "Smem" in fn else
                                                ", row held in registers" if fn.endswith("Reg") else "")
    if args and not closed:
        d["truncated"] = True
    known = set(_CPP_DTYPES.values())
    dtype = d.get("input_dtype") if d.get("input_dtype") in known else _aten_dtype(text)
    direction = "backward" if "ackward" in fn else "forward"
    op = ("log_softmax" if log else "softmax") + ("" if direction == "forward" else " backward")
    parts = [f"ATen {op}", fn, dtype]
    if "elements_per_row" in d:
        parts.append(f"rows of {d['elements_per_row']}")
    return {"kind": "softmax", "library": "ATen", "op": op, "dtype": dtype, "details": d,
            "summary": ", ".join(p for p in parts if p)}


def _aten(text: str) -> dict | None:
    softmax = _aten_softmax(text)
    if softmax:
        return softmax
    is_aten = "at::native" in text or "at::cuda" in text or "c10::" in text or "at_cuda_detail" in text
    launcher = _ATEN_LAUNCHERS.search(text)
    if not (is_aten or launcher):
        return None
    op = next((name for pat, name in _ATEN_OPS if re.search(pat, text)), None)
    if op is None:  # else the kernel function's own name: isneginf_kernel_impl(...) -> "isneginf"
        fm = re.search(r"(?:::|\s|<)([a-z][a-z0-9_]*?)_kernel(?:_impl|_cuda)?\(", text)
        op = fm.group(1) if fm else None
    d: dict = {}
    if launcher:
        d["launcher"] = launcher.group(1)
        args, _ = _template_args(text, launcher.end()) if text[launcher.end():launcher.end() + 1] == "<" else ([], False)
        if launcher.group(1).startswith("vectorized") and args:
            d["vector_width"] = _int(args[0])  # elements per thread per load
        elif launcher.group(1) == "elementwise_kernel" and len(args) >= 2:
            d["threads_per_block"], d["items_per_thread"] = _int(args[0]), _int(args[1])
        elif launcher.group(1) == "reduce_kernel" and len(args) >= 2:
            d["max_threads"], d["output_vec_size"] = _int(args[0]), _int(args[1])
    dtype = _aten_dtype(text)
    if "triu_tril_kernel" in text:
        args = _args_after(text, r"triu_tril_kernel")
        # TriangularOps.cu: <scalar_t, IndexType, upper, elements_per_thread, inplace>
        for key, value in zip(("scalar_t", "index_type", "upper", "elements_per_thread", "inplace"),
                              args[0] if args else []):
            d[key] = _bool(value) if key in ("upper", "inplace") else (
                _int(value) if key == "elements_per_thread" else value)
        dtype = _cpp_dtype(d.get("scalar_t")) or dtype
        which = {True: "triu", False: "tril"}.get(d.get("upper"), "triu/tril")
        return {"kind": "mask", "library": "ATen", "op": "triu/tril", "dtype": dtype, "details": d,
                "summary": f"ATen {which} (builds the causal mask)" + (f", {dtype}" if dtype else "")}
    if d.get("launcher") == "reduce_kernel" or "reduce_kernel" in text or "DeviceReduce" in text:
        red = next((name for pat, name in _REDUCTIONS if re.search(pat, text)), None)
        rop = _args_after(text, r"ReduceOp")
        if rop and rop[0]:
            dtype = _cpp_dtype(rop[0][0]) or dtype
        d["reduction"] = red
        return {"kind": "reduce", "library": "ATen", "op": "reduce", "dtype": dtype, "details": d,
                "summary": "ATen reduce" + (f" ({red})" if red else "") + (f" over {dtype}" if dtype else "")}
    if op == "masked_fill":
        return {"kind": "masked_fill", "library": "ATen", "op": "masked_fill", "dtype": dtype,
                "details": d, "summary": "ATen masked_fill" + (f", {dtype}" if dtype else "")}
    if op in ("direct copy", "dtype copy", "cat", "copy"):
        if op == "dtype copy":
            cm = re.search(r"(bfloat16|float16|float8\w*?|half)_copy_kernel_cuda", text)
            d["function"] = cm.group(0) if cm else None
            # these convert fp32 values into the named type (Copy.cu: gpu_kernel_nocast over float)
            d["to_dtype"] = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16"}.get(
                cm.group(1) if cm else "", cm.group(1) if cm else None)
            dtype = d["to_dtype"] or dtype
        note = ""
        if "LoadWithCast" in text or "StoreWithCast" in text:
            # loads/stores convert element types: a dtype conversion into the lambda's type
            d["casting_load_store"] = True
            note = " with casting loads/stores (a dtype conversion)"
        return {"kind": "copy", "library": "ATen", "op": op, "dtype": dtype, "details": d,
                "summary": f"ATen {op}{note}" + (f", {dtype}" if dtype else "")}
    if op == "fill":
        return {"kind": "fill", "library": "ATen", "op": "fill", "dtype": dtype, "details": d,
                "summary": "ATen fill" + (f", {dtype}" if dtype else "")}
    if launcher or op:
        note = ""
        if "AUnaryFunctor" in text or "BUnaryFunctor" in text:
            # Loops.cuh: one operand is a CPU scalar held in the functor (here, the softmax
            # scale), so the kernel reads one tensor; A/B says which operand is the scalar
            d["scalar_operand"] = "a" if "AUnaryFunctor" in text else "b"
            note = " by a CPU scalar"
        return {"kind": "elementwise", "library": "ATen", "op": op, "dtype": dtype, "details": d,
                "summary": "ATen elementwise" + (f" {op}{note}" if op else "") +
                (f", {dtype}" if dtype else "")}
    if is_aten:
        return {"kind": "unknown", "library": "ATen", "details": d,
                "summary": "ATen kernel, not recognised"}
    return None


# --- last resort: words that say what the kernel is -----------------------------------------

def _fallback(text: str) -> dict | None:
    low = text.lower()
    if not low.strip():
        return None
    library = "CUTLASS" if "cutlass" in low else "cuBLAS" if "cublas" in low else "unknown"
    if any(w in low for w in ("fmha", "flash_attn", "attention", "sdpa", "mha_")):
        return {"kind": "attention", "library": library, "summary": "attention kernel (name not decoded)"}
    if "gemm" in low or "gemv" in low:
        math = FFMA if "ffma" in low or "sgemm" in low else TENSOR_CORES if any(
            w in low for w in ("tensorop", "wgmma", "hmma", "s16816", "s1688", "h16816", "tensor16x8")) else None
        return {"kind": "gemm", "library": library, "op": "gemm", "math": math,
                "summary": "gemm kernel (name not decoded)"}
    if "softmax" in low:
        return {"kind": "softmax", "library": library, "op": "softmax",
                "summary": "softmax kernel (name not decoded)"}
    return None


_FAMILIES = (_runtime, _flash, _cutlass_fmha, _cudnn, _triton, _nvjet, _xmma, _cutlass_gemm,
             _cublas_legacy, _aten, _cublas_other, _fallback)
