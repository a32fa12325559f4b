"""ATen: PyTorch's own kernels (elementwise, reductions, softmax, copies, fills)."""
from __future__ import annotations

import re

from ._common import _CPP_DTYPES, _args_after, _bool, _cpp_dtype, _int, _template_args


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
    (r"tanh_kernel", "tanh"), (r"pow_\w*kernel", "pow"), (r"clamp\w*kernel|launch_clamp_scalar", "clamp"),
    (r"threshold_kernel", "threshold"),  # ReLU's backward (aten::threshold_backward)
    (r"logical_not_kernel", "logical_not"), (r"logical_and_kernel", "logical_and"),
    (r"logical_or_kernel", "logical_or"), (r"bitwise_not_kernel", "bitwise_not"),
    (r"bitwise_\w+_kernel", "bitwise"),
    (r"maximum_kernel|MaxFunctor", "maximum"), (r"minimum_kernel|MinFunctor", "minimum"),
    # dropout's backward scales the kept gradients (Dropout.cu masked_scale_kernel); "scale_kernel"
    # once read as le_kernel, a comparison: the comparisons' names are matched as whole words
    (r"masked_scale_kernel", "masked_scale"),
    (r"CompareEqFunctor|\beq_kernel", "eq"), (r"\bne_kernel", "ne"),
    (r"CompareFunctor|\b(?:lt|le|gt|ge)_kernel", "compare"),
    (r"nan_to_num", "nan_to_num"), (r"fused_dropout|dropout", "dropout"),
    (r"arange|linspace", "arange"),
    (r"normal_kernel|uniform_kernel|distribution_elementwise", "random"),
    (r"index_elementwise_kernel|index_put|index_kernel", "index"),
    (r"gather_kernel", "gather"),
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


# layer norm: its forward and its two backward kernels (layer_norm_kernel.cu)
_LAYER_NORM = [
    (r"vectorized_layer_norm_kernel|\blayer_norm_kernel\b|LayerNormForwardCUDAKernel|RowwiseMomentsCUDAKernel",
     "layer_norm", "forward: each row's mean and variance, then normalize, scale and shift"),
    (r"layer_norm_grad_input_kernel|LayerNormBackwardCUDAKernel|ComputeInternalGradientsCUDAKernel",
     "layer_norm backward", "the input's gradient"),
    (r"GammaBetaBackward", "layer_norm backward", "the weight and bias gradients, summed over rows"),
]
# torch._foreach_* ops (what AdamW and SGD run with foreach=True): one launch for a list of
# tensors; the functor names the per-element op (ForeachFunctors.cuh, ForeachOpsKernels.cu)
_FOREACH_OPS = [(r"LerpFunctor", "lerp"), (r"Sqrt<", "sqrt"), (r"PointwiseOp\w*Functor.*std::multiplies", "addcmul"),
                (r"PointwiseOp\w*Functor.*std::divides", "addcdiv"), (r"std::multiplies", "mul"),
                (r"std::plus", "add"), (r"std::minus", "sub"), (r"std::divides", "div"),
                (r"Copy|copy", "copy"), (r"Exp<", "exp"), (r"Zero", "zero")]


def _aten_special(text: str) -> dict | None:
    """ATen kernels not launched through the elementwise/reduce launchers: layer norm, the
    foreach ops, the RNG state unpack of cuDNN's dropout."""
    for pattern, op, what in _LAYER_NORM:
        if re.search(pattern, text):
            dtype = _aten_dtype(text)
            return {"kind": "reduce", "library": "ATen", "op": op, "dtype": dtype,
                    "details": {"computes": what},
                    "summary": f"ATen {op} ({what})" + (f", {dtype}" if dtype else "")}
    if "multi_tensor_apply_kernel" in text:
        op = next((name for pat, name in _FOREACH_OPS if re.search(pat, text)), None)
        lists = re.search(r"Tensor(?:List|ListScalarList)Metadata<(?:float, )?(\d+)>", text)
        d = {"launcher": "multi_tensor_apply_kernel", "tensor_lists": _int(lists.group(1)) if lists else None}
        dtype = _aten_dtype(text)
        return {"kind": "elementwise", "library": "ATen", "op": f"foreach {op}" if op else "foreach",
                "dtype": dtype, "details": d,
                "summary": f"ATen foreach {op or 'op'} (one launch for a list of tensors)"
                           + (f", {dtype}" if dtype else "")}
    if re.search(r"philox::unpack", text):
        return {"kind": "copy", "library": "ATen", "op": "philox unpack", "dtype": None, "details": {},
                "summary": "ATen RNG state unpack (the seed and offset a dropout reads)"}
    return None


def _aten(text: str) -> dict | None:
    softmax = _aten_softmax(text)
    if softmax:
        return softmax
    special = _aten_special(text)
    if special:
        return special
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
