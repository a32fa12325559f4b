"""Shared pieces of the decoders: kinds, C++ and name dtypes, template-argument parsing."""
from __future__ import annotations

import re


KINDS = ("gemm", "attention", "softmax", "masked_fill", "elementwise", "copy", "fill", "reduce",
         "mask", "fused", "memcpy", "memset", "unknown")

TENSOR_CORES = "tensor cores"
FFMA = "CUDA cores (FFMA)"


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
    # newer demanglers print a non-type template argument with its type as a cast: "(int)2"
    m = re.fullmatch(r"\s*(?:\((?:unsigned )?(?:int|long|long long|short|char)\))?\s*(-?\d+)[uUlL]*\s*", token or "")
    return int(m.group(1)) if m else None


def _kernel_stem(text: str) -> str:
    """The name before its parameter list and template arguments: the generated-name part."""
    stem = re.sub(r"^void\s+", "", text.strip())
    return re.split(r"[<(\s]", stem, maxsplit=1)[0]
