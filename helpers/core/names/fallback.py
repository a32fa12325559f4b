"""The last resort: words in a name that say what the kernel is."""
from __future__ import annotations

from ._common import FFMA, TENSOR_CORES


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

