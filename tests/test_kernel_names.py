"""helpers.core.names: the fields of known kernel names, the recorded traces, and fuzzing."""
from __future__ import annotations

import functools
import gzip
import json
import math
import os
import random
import re
from pathlib import Path

import pytest

from helpers.core.names import FFMA, KINDS, TENSOR_CORES, KernelName, decode, decode_frame

ROOT = Path(__file__).resolve().parent.parent
# KERNEL_NAMES_TRACES points the trace checks at another folder (a fresh recording, say)
TRACE_ROOT = Path(os.environ.get("KERNEL_NAMES_TRACES", ROOT / "notebooks" / "traces"))
TRACES = sorted(TRACE_ROOT.glob("*/*__*.json.gz"))  # the stage traces (experiments hold custom kernels)

NVJET_A = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"
NVJET_B = "nvjet_sm90_tst_64x512_64x2_1x2_h_bz_coopB_NNT"
AMPERE_BF16 = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"
XMMA_BF16 = ("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage3_warpsize2x2x1_"
             "tensor16x8x16_kernel")
XMMA_F32_TN = ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_"
               "aligna4_alignc4_execute_kernel__5x_cublas")
XMMA_F32_NN = ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_"
               "aligna4_alignc4_execute_kernel__5x_cublas")
CUTLASS_F = ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
             "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)")
FLASH = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
         "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, "
         "true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)")
FLASH_HUB = ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
             "cutlass::half_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::half_t> >, false, false, "
             "false, false, true, true, false, false>(flash::Flash_fwd_params)")
FLASH_SPLITKV = ("void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<64, 64, 256, 4, false, "
                 "false, cutlass::bfloat16_t, Flash_kernel_traits<64, 64, 256, 4, cutlass::bfloat16_t> >, "
                 "true, false, false, true, true, false, true, false>(flash::Flash_fwd_params)")
CUDNN = ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_"
         "cga1x1x1_kernel0_0")
TRITON_PER = "triton_per_fused__softmax_exp_masked_fill_mul_prepare_softmax_online_sub_view_0"
TRITON_FLEX = "triton_tem_fused_flex_attention_0"
MUL = ("void at::native::vectorized_elementwise_kernel<8, at::native::AUnaryFunctor<c10::BFloat16, "
       "c10::BFloat16, c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, "
       "std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<c10::BFloat16, c10::BFloat16, "
       "c10::BFloat16, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 2ul>)")
MASKED_FILL = (
    "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::"
    "masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::"
    "{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, "
    "at::native::masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::"
    "operator()() const::{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1} const&)::"
    "{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::masked_fill_kernel(at::"
    "TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::{lambda()#10}::"
    "operator()() const::{lambda(c10::BFloat16, bool)#1}>(at::TensorIteratorBase&, at::native::"
    "masked_fill_kernel(at::TensorIterator&, c10::Scalar const&)::{lambda()#1}::operator()() const::"
    "{lambda()#10}::operator()() const::{lambda(c10::BFloat16, bool)#1} const&)::{lambda(int)#1})")
SOFTMAX_WARP = ("void (anonymous namespace)::softmax_warp_forward<c10::BFloat16, c10::BFloat16, float, "
                "10, false, false>(c10::BFloat16*, c10::BFloat16 const*, int, int, int, bool const*, "
                "int, bool)")
CUNN_SOFTMAX = ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, "
                "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, "
                "c10::BFloat16 const*, int)")
DIRECT_COPY = ("void at::native::vectorized_elementwise_kernel<8, at::native::direct_copy_kernel_cuda("
               "at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() "
               "const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, ...)")
BF16_COPY = ("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
             "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::"
             "bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)")
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<bool>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<bool>, std::array<char*, 1ul>)")
TRIU = ("void at::native::triu_tril_kernel<bool, int, false, 8, false>(at::cuda::detail::TensorInfo<"
        "bool, int>, at::cuda::detail::TensorInfo<bool const, int>, long, long, int)")
REDUCE_AND = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<bool, at::native::"
              "func_wrapper_t<bool, at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::"
              "operator()() const::{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, "
              "unsigned int, bool, 4, 4> >(at::native::ReduceOp<bool, at::native::func_wrapper_t<bool, "
              "at::native::and_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::"
              "{lambda()#12}::operator()() const::{lambda(bool, bool)#1}>, unsigned int, bool, 4, 4>)")
WHERE = ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
         "(anonymous namespace)::where_kernel_impl(at::TensorIterator&)::{lambda()#1}::operator()() "
         "const::{lambda()#11}::operator()() const::{lambda(bool, float, float)#1}>(at::TensorIteratorBase&, ...")
ADD = ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<at::native::"
       "CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::"
       "{lambda(int)#1}>(int, ...)")
BINARY_MUL = ("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, "
              "float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, ...)")
EXP = ("void at::native::vectorized_elementwise_kernel<4, at::native::exp_kernel_cuda(at::TensorIteratorBase&)"
       "::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, "
       "std::array<char*, 2ul> >(int, ...)")

EXAMPLES = [NVJET_A, NVJET_B, AMPERE_BF16, XMMA_BF16, XMMA_F32_TN, XMMA_F32_NN, "volta_sgemm_128x64_nn",
            "ampere_sgemm_128x64_tn", CUTLASS_F, FLASH, FLASH_HUB, FLASH_SPLITKV, CUDNN, TRITON_PER,
            TRITON_FLEX, MUL, MASKED_FILL, SOFTMAX_WARP, CUNN_SOFTMAX, DIRECT_COPY, BF16_COPY, FILL,
            TRIU, REDUCE_AND, WHERE, ADD, BINARY_MUL, EXP, "Memcpy DtoD (Device -> Device)",
            "Memcpy HtoD (Pageable -> Device)", "Memset (Device)"]


def fields(k: KernelName) -> tuple:
    return (k.kind, k.library, k.op, k.dtype, k.math, k.arch, k.tile)


# --- (1) the fields of each example name --------------------------------------------------

def test_nvjet():
    k = decode(NVJET_A)
    assert fields(k) == ("gemm", "cuBLAS (nvjet)", "gemm", "16-bit", TENSOR_CORES, "sm90", "256x128")
    d = k.details
    assert (d["tile_m"], d["tile_n"], d["cluster"], d["layout"]) == (256, 128, "1x2", "TNT")
    assert d["schedule_token"] == "coopA" and "cooperative" in d["schedule"]
    assert d["inputs"].startswith("16-bit") and d["beta"].startswith("zero")
    # undocumented tokens stay literal, under neutral keys
    assert d["variant_token"] == "tst" and d["dims_token_2"] == "64x4"
    b = decode(NVJET_B)
    assert (b.tile, b.details["cluster"], b.details["layout"], b.details["schedule_token"]) == (
        "64x512", "1x2", "NNT", "coopB")


def test_ampere_s16816_gemm():
    k = decode(AMPERE_BF16)
    assert fields(k) == ("gemm", "cuBLAS", "gemm", "bf16", TENSOR_CORES, "ampere", "128x128")
    assert k.details["mma_instruction"] == "mma.sync m16n8k16"
    assert (k.details["k_tile"], k.details["stages"], k.details["operand_layout"]) == (64, 3, "tn")
    assert k.details["ldg"] == 8


def test_xmma_bf16_gemm():
    k = decode(XMMA_BF16)
    assert fields(k) == ("gemm", "cuBLAS", "gemm", "bf16", TENSOR_CORES, "sm80", "128x128x32")
    d = k.details
    assert (d["stages"], d["warp_layout"], d["mma_shape"], d["operand_layout"]) == (3, "2x2x1", "16x8x16", "tn")
    assert d["type_tokens"] == ["bf16bf16", "bf16f32", "f32"]


@pytest.mark.parametrize("name, tile, warps, layout", [
    (XMMA_F32_TN, "128x128x8", "2x2x1", "tn"), (XMMA_F32_NN, "64x64x8", "1x4x1", "nn")])
def test_xmma_fp32_ffma_gemm(name, tile, warps, layout):
    k = decode(name)
    assert fields(k) == ("gemm", "cuBLAS", "gemm", "fp32", FFMA, "sm80", tile)
    assert (k.details["stages"], k.details["warp_layout"], k.details["operand_layout"]) == (3, warps, layout)
    assert (k.details["align_a"], k.details["align_c"]) == (4, 4)


@pytest.mark.parametrize("name, arch, layout", [
    ("volta_sgemm_128x64_nn", "volta", "nn"), ("ampere_sgemm_128x64_tn", "ampere", "tn")])
def test_sgemm(name, arch, layout):
    k = decode(name)
    assert fields(k) == ("gemm", "cuBLAS", "gemm", "fp32", FFMA, arch, "128x64")
    assert k.details["operand_layout"] == layout


def test_cutlass_mem_efficient_forward():
    k = decode(CUTLASS_F)
    assert fields(k) == ("attention", "CUTLASS (xformers mem-efficient)", "attention forward", "bf16",
                         TENSOR_CORES, "sm80", "64x64")
    d = k.details
    assert d["algorithm"] == "memory-efficient attention forward (cutlassF)"
    assert d["alignment"] == "aligned"
    assert (d["queries_per_block"], d["keys_per_block"]) == (64, 64)
    assert d["output_accumulator"].startswith("register file") and "kSingleValueIteration" in d["output_accumulator"]
    t = d["template"]
    assert t["scalar_t"] == "cutlass::bfloat16_t" and t["arch_tag"] == "cutlass::arch::Sm80"
    assert (t["is_aligned"], t["kQueriesPerBlock"], t["kKeysPerBlock"], t["kMaxK"]) == (True, 64, 64, 64)
    assert (t["kSupportsDropout"], t["kSupportsBias"]) == (True, True)


@pytest.mark.parametrize("name", [
    "fmha_cutlassF_bf16_aligned_64x64_rf_sm80",  # no parameter list
    "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::bfloat16_t, cutl",
])
def test_cutlass_mem_efficient_without_or_with_cut_template(name):
    k = decode(name)
    assert fields(k)[:2] == ("attention", "CUTLASS (xformers mem-efficient)")
    assert (k.dtype, k.arch, k.tile) == ("bf16", "sm80", "64x64")


def test_cutlass_gmem_variant():
    k = decode("fmha_cutlassF_f32_aligned_32x128_gmem_sm80")
    assert (k.dtype, k.tile) == ("fp32", "32x128")
    assert k.details["output_accumulator"].startswith("global memory")


def test_flash_forward_pytorch_build():
    k = decode(FLASH)
    assert fields(k) == ("attention", "FlashAttention-2", "attention forward", "bf16", TENSOR_CORES,
                         None, "128x128")
    d = k.details
    assert (d["head_dim"], d["block_m"], d["block_n"], d["warps"], d["threads"]) == (64, 128, 128, 4, 128)
    assert (d["Is_Q_in_regs"], d["Share_Q_K_smem"]) == (False, False)
    assert d["element"] == "cutlass::bfloat16_t" and d["namespace"] == "pytorch_flash"
    flags = {f: d[f] for f in ("Is_dropout", "Is_causal", "Is_local", "Has_alibi", "Is_even_MN",
                               "Is_even_K", "Is_softcap", "Return_softmax")}
    assert flags == {"Is_dropout": False, "Is_causal": True, "Is_local": False, "Has_alibi": False,
                     "Is_even_MN": True, "Is_even_K": True, "Is_softcap": False,
                     "Return_softmax": False}
    assert k.summary.startswith("FlashAttention-2 forward, head_dim 64, 128x128 tiles, 4 warps")


def test_flash_hub_build_and_split_kv():
    k = decode(FLASH_HUB)
    assert (k.kind, k.library, k.dtype, k.tile) == ("attention", "FlashAttention-2", "fp16", "128x64")
    assert k.details["namespace"] == "flash" and k.details["head_dim"] == 128
    assert k.details["Is_causal"] is False and k.details["Is_even_MN"] is True
    s = decode(FLASH_SPLITKV)
    assert (s.kind, s.library, s.tile) == ("attention", "FlashAttention-2", "64x256")
    assert s.details["variant"] == "split-KV"
    # flash_fwd_splitkv_kernel<traits, Is_causal, Is_local, Has_alibi, Is_even_MN, Is_even_K,
    #                          Is_softcap, Split, Append_KV>
    assert (s.details["Is_causal"], s.details["Is_even_MN"], s.details["Split"],
            s.details["Append_KV"]) == (True, True, True, False)


# Uneven MN, even K, non-square 128x32 tiles, head_dim 96, fp16: every flag distinct from its
# neighbours' so that a decoder reading two of them in the wrong order is caught. Written from
# FlashAttention-2's signatures (Dao-AILab/flash-attention csrc/flash_attn/src):
#   kernel_traits.h: Flash_fwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, Is_Q_in_regs,
#                                            Share_Q_K_smem, elem_type, Base>
#   flash_fwd_launch_template.h: flash_fwd_kernel<Kernel_traits, Is_dropout, Is_causal, Is_local,
#                                Has_alibi, Is_even_MN, Is_even_K, Is_softcap, Return_softmax>
UPSTREAM_TRAITS = ("head_dim", "block_m", "block_n", "warps", "Is_Q_in_regs", "Share_Q_K_smem")
UPSTREAM_FWD_FLAGS = ("Is_dropout", "Is_causal", "Is_local", "Has_alibi", "Is_even_MN", "Is_even_K",
                      "Is_softcap", "Return_softmax")
UNEVEN_TRAITS = ("96", "128", "32", "4", "true", "false")
UNEVEN_FLAGS = ("false", "true", "false", "false", "false", "true", "false", "false")
FLASH_UNEVEN = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<" + ", ".join(UNEVEN_TRAITS)
                + ", cutlass::half_t, Flash_kernel_traits<96, 128, 32, 4, cutlass::half_t> >, "
                + ", ".join(UNEVEN_FLAGS) + ">(pytorch_flash::Flash_fwd_params)")


def test_flash_uneven_mn_even_k_non_square_tiles():
    k = decode(FLASH_UNEVEN)
    as_python = lambda v: {"true": True, "false": False}.get(v, None) if not v.isdigit() else int(v)  # noqa: E731
    expected = dict(zip(UPSTREAM_TRAITS, map(as_python, UNEVEN_TRAITS)))
    expected |= dict(zip(UPSTREAM_FWD_FLAGS, map(as_python, UNEVEN_FLAGS)))
    assert {key: k.details[key] for key in expected} == expected
    assert k.details["Is_even_MN"] is False and k.details["Is_even_K"] is True
    assert (k.dtype, k.tile) == ("fp16", f"{UNEVEN_TRAITS[1]}x{UNEVEN_TRAITS[2]}")
    assert k.details["threads"] == 32 * int(UNEVEN_TRAITS[3])
    assert k.summary.startswith(f"FlashAttention-2 forward, head_dim {UNEVEN_TRAITS[0]}, "
                                f"{UNEVEN_TRAITS[1]}x{UNEVEN_TRAITS[2]} tiles")


def test_flash_truncated_keeps_what_it_read():
    k = decode(FLASH[:120])
    assert (k.kind, k.library) == ("attention", "FlashAttention-2")
    assert k.details["head_dim"] == 64 and k.details.get("truncated")


def test_cudnn_sdpa():
    k = decode(CUDNN)
    assert fields(k) == ("attention", "cuDNN", "attention forward", "16-bit", TENSOR_CORES, "sm90",
                         "64x128x64")
    d = k.details
    assert (d["algorithm"], d["direction"], d["mma"], d["precision_token"], d["knob"]) == (
        "flash", "fprop", "wgmma", "f16", 7)
    assert (d["layout"], d["cluster"]) == ("4x1x1", "1x1x1")
    assert "warp_layout" not in d   # the field is no warp count: the launch is 12 warps


@pytest.mark.parametrize("name, arch, mma, direction", [
    ("cudnn_generated_fort_native_sdpa_sm80_flash_fprop_hmma_f16_knob_3_64x64x64_4x1x1_kernel0_0",
     "sm80", "hmma", "fprop"),
    ("cudnn_generated_fort_native_sdpa_sm100_flash_bprop_umma_f16_knob_2_128x128x64_cga1x1x1_kernel0_0_x",
     "sm100", "umma", "bprop"),
])
def test_cudnn_variants(name, arch, mma, direction):
    k = decode(name)
    assert (k.kind, k.library, k.arch, k.details["mma"], k.details["direction"]) == (
        "attention", "cuDNN", arch, mma, direction)


def test_triton():
    k = decode(TRITON_PER)
    assert (k.kind, k.library) == ("fused", "Triton")
    assert k.details["kernel_class"] == "persistent reduction"
    assert k.details["fused_ops"] == ["_softmax", "exp", "masked_fill", "mul", "prepare_softmax_online",
                                      "sub", "view"]
    # the short op folds softmax's decomposition into _softmax and drops the view
    assert k.op == "_softmax+masked_fill+mul"
    assert decode("triton_poi_fused_view_0").op == "view"  # a kernel of views alone keeps them
    f = decode(TRITON_FLEX)
    assert (f.kind, f.library, f.op, f.details["kernel_class"]) == ("attention", "Triton",
                                                                    "flex_attention", "template")
    assert decode("triton_poi_fused_add_mul_3").details["kernel_class"] == "pointwise"
    assert decode("triton_red_fused__to_copy_sum_1").details["fused_ops"] == ["_to_copy", "sum"]


def test_aten_elementwise_and_masked_fill():
    mul = decode(MUL)
    assert (mul.kind, mul.library, mul.op, mul.dtype) == ("elementwise", "ATen", "mul", "bf16")
    assert mul.details["vector_width"] == 8 and mul.details["scalar_operand"] == "a"
    mf = decode(MASKED_FILL)
    assert (mf.kind, mf.library, mf.op, mf.dtype) == ("masked_fill", "ATen", "masked_fill", "bf16")
    assert (mf.details["threads_per_block"], mf.details["items_per_thread"]) == (128, 4)
    assert fields(decode(WHERE))[:4] == ("elementwise", "ATen", "where", "fp32")
    assert fields(decode(ADD))[:4] == ("elementwise", "ATen", "add", "fp32")
    assert fields(decode(BINARY_MUL))[:4] == ("elementwise", "ATen", "mul", "fp32")
    assert fields(decode(EXP))[:4] == ("elementwise", "ATen", "exp", "fp32")


def test_aten_softmax():
    k = decode(SOFTMAX_WARP)
    assert (k.kind, k.library, k.op, k.dtype) == ("softmax", "ATen", "softmax", "bf16")
    d = k.details
    assert (d["input_dtype"], d["output_dtype"], d["accumulate_dtype"]) == ("bf16", "bf16", "fp32")
    assert (d["log2_elements"], d["elements_per_row"]) == (10, 1024)
    assert (d["is_log_softmax"], d["is_masked"]) == (False, False)
    c = decode(CUNN_SOFTMAX)
    assert (c.kind, c.op, c.dtype, c.details["ILP"], c.details["epilogue"]) == (
        "softmax", "softmax", "bf16", 8, "SoftMaxForwardEpilogue")
    r = decode("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<c10::BFloat16, float, "
               "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, 4>("
               "c10::BFloat16*, c10::BFloat16 const*, long)")
    assert (r.kind, r.dtype, r.details["accumulate_dtype"], r.details["reg_cnt"], r.details["index_t"]) == (
        "softmax", "bf16", "fp32", 4, "long")


def test_aten_copy_fill_mask_reduce():
    assert fields(decode(DIRECT_COPY))[:4] == ("copy", "ATen", "direct copy", "bf16")
    bc = decode(BF16_COPY)
    assert fields(bc)[:4] == ("copy", "ATen", "dtype copy", "bf16") and bc.details["to_dtype"] == "bf16"
    assert fields(decode(FILL))[:4] == ("fill", "ATen", "fill", "bool")
    t = decode(TRIU)
    assert fields(t)[:4] == ("mask", "ATen", "triu/tril", "bool")
    assert (t.details["upper"], t.details["elements_per_thread"], t.details["inplace"]) == (False, 8, False)
    r = decode(REDUCE_AND)
    assert fields(r)[:4] == ("reduce", "ATen", "reduce", "bool")
    assert r.details["reduction"].startswith("and") and r.details["max_threads"] == 512


def test_runtime_copies_and_sets():
    k = decode("Memcpy DtoD (Device -> Device)")
    assert (k.kind, k.library, k.details["direction"]) == ("memcpy", "CUDA runtime", "DtoD")
    h = decode("Memcpy HtoD (Pageable -> Device)")
    assert (h.kind, h.details["direction"], h.details["src_memory"], h.details["dst_memory"]) == (
        "memcpy", "HtoD", "Pageable", "Device")
    m = decode("Memset (Device)")
    assert (m.kind, m.library, m.details["memory"]) == ("memset", "CUDA runtime", "Device")


def test_unknown():
    k = decode("my_custom_kernel_v2")
    assert (k.kind, k.library) == ("unknown", "unknown")
    assert k.name == "my_custom_kernel_v2" and k.summary


def test_every_example_decodes_and_frame():
    for name in EXAMPLES:
        k = decode(name)
        assert k.kind in KINDS and k.kind != "unknown", name
        assert k.name == name and isinstance(k.details, dict) and k.summary
    frame = decode_frame(EXAMPLES)
    assert list(frame.columns) == ["name", "kind", "library", "op", "dtype", "math", "arch", "tile",
                                   "summary", "details"]
    assert len(frame) == len(EXAMPLES) and frame["name"].tolist() == EXAMPLES
    assert decode_frame([]).empty


# --- (2) every GPU event of the recorded traces ---------------------------------------------

GPU_CATS = {"kernel": None, "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
SHORT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def _gpu_events(path: Path):
    with gzip.open(path, "rt") as fh:
        document = json.load(fh)
    events = [e for e in document.get("traceEvents", [])
              if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    return document.get("provenance") or {}, events


def _covers(blocks: int, per_block: int, seq: int) -> bool:
    """`blocks` tiles of `per_block` rows are the fewest that cover seq rows."""
    return blocks == math.ceil(seq / per_block)


@pytest.mark.parametrize("path", TRACES or [None], ids=lambda p: p.name if p else "no-traces")
def test_recorded_trace_names(path, recorded_traces):
    # recorded_traces fails (never skips) where the replay set is missing
    assert path is not None, (f"no recorded traces under {TRACE_ROOT} (notebooks/traces/**/*.json.gz); "
                              f"record them with `python tools/record.py` on a GPU")
    provenance, events = _gpu_events(path)
    assert events, f"{path.name} holds no GPU events"
    shape = provenance.get("shape") or {}
    stage = provenance.get("stage")
    problems = []
    for e in events:
        name, args = e.get("name", ""), e.get("args", {})
        k = decode(name)
        where = f"{path.name}: {name[:120]!r}"
        if k.kind == "unknown":
            problems.append(f"{where} decodes to kind 'unknown'")
            continue
        expected_kind = GPU_CATS[e["cat"]]
        if expected_kind and k.kind != expected_kind:
            problems.append(f"{where}: category {e['cat']} but kind {k.kind}")
        grid, block = args.get("grid"), args.get("block")
        threads = math.prod(block) if block else None
        d = k.details
        if k.library == "FlashAttention-2" and d.get("function") == "flash_fwd_kernel":
            if threads is not None and d.get("threads") != threads:
                problems.append(f"{where}: {d.get('warps')} warps x 32 != {threads} block threads")
            if shape.get("head_dim") is not None and d.get("head_dim") != shape["head_dim"]:
                problems.append(f"{where}: head_dim {d.get('head_dim')} != shape {shape['head_dim']}")
            # flash_fwd_launch_template.h: dim3 grid(num_m_block, params.b, params.h)
            if grid and shape and not (_covers(grid[0], d["block_m"], shape["seq"])
                                       and grid[1] == shape["batch"] and grid[2] == shape["heads"]):
                problems.append(f"{where}: grid {grid} is not [seq/{d['block_m']}, batch, heads] for {shape}")
        if k.library == "CUTLASS (xformers mem-efficient)" and d.get("direction") == "forward":
            q = d.get("queries_per_block")
            # kernel_forward.h getBlocksGrid: (ceil(num_queries / kQueriesPerBlock), num_heads, num_batches)
            if grid and shape and q and not (_covers(grid[0], q, shape["seq"])
                                             and grid[1] == shape["heads"] and grid[2] == shape["batch"]):
                problems.append(f"{where}: grid {grid} is not [seq/{q}, heads, batch] for {shape}")
        if name.startswith(("void cublasLt::", "cublasLt::")) and not k.library.startswith("cuBLAS"):
            problems.append(f"{where}: a cublasLt:: kernel decoded as {k.library}")
        if k.kind == "attention" and k.dtype in ("bf16", "fp16") and shape.get("dtype"):
            if {"bf16": "bfloat16", "fp16": "float16"}[k.dtype] != shape["dtype"]:
                problems.append(f"{where}: dtype {k.dtype} but the inputs are {shape['dtype']}")
        if k.kind == "softmax" and "elements_per_row" in d and shape.get("seq"):
            # the warp softmax pads each row of seq keys to the next power of two
            if not d["elements_per_row"] >= shape["seq"] > d["elements_per_row"] // 2:
                problems.append(f"{where}: rows of {d['elements_per_row']} for seq {shape['seq']}")
        if k.kind == "softmax" and k.library == "ATen" and shape.get("dtype"):
            # the softmax reads the scores: the inputs' dtype, or fp32 in the upcasting math backend
            want = "fp32" if stage == "sdpa_math" else SHORT_DTYPES.get(shape["dtype"])
            if k.dtype != want:
                problems.append(f"{where}: softmax dtype {k.dtype}, expected {want} for {stage}")
        if k.kind == "gemm" and k.library.startswith(("cuBLAS", "CUTLASS")) and shape.get("dtype"):
            # the math backend upcasts to fp32 and cuBLAS runs it on CUDA cores (no TF32 by default)
            fp32 = stage == "sdpa_math" or shape["dtype"] == "float32"
            want = FFMA if fp32 else TENSOR_CORES
            if k.math != want:
                problems.append(f"{where}: math {k.math!r}, expected {want!r} for {stage} {shape['dtype']}")
    assert not problems, "\n".join(problems)


# --- (3) fuzz: random and truncated names never raise ---------------------------------------

ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:<>(),*& #{}[]-.x"


def _check(text) -> None:
    k = decode(text)
    assert isinstance(k, KernelName)
    assert k.kind in KINDS and isinstance(k.library, str) and isinstance(k.details, dict)
    assert isinstance(k.summary, str) and k.summary


def test_fuzz_truncations_of_every_example():
    for name in EXAMPLES:
        for cut in range(len(name) + 1):
            _check(name[:cut])
            _check(name[cut:])


def test_fuzz_random_strings_and_mutations():
    rng = random.Random(20241202)
    for _ in range(3000):
        _check("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 200))))
    pieces = ["<", ">", "(", ")", ",", "::", "_", "x", "128", "true", "{lambda(", ")#1}", "Flash_",
              "flash_fwd_kernel", "fmha_cutlassF_", "nvjet_", "cudnn_generated_", "triton_per_fused_",
              "sm80_xmma_gemm_", "at::native::", "softmax_warp_forward<", "Memcpy ", "Memset ("]
    for _ in range(3000):
        base = list(rng.choice(EXAMPLES))
        for _ in range(rng.randint(1, 6)):
            at = rng.randint(0, len(base))
            if rng.random() < 0.5 and base:
                del base[min(at, len(base) - 1)]
            else:
                base[at:at] = list(rng.choice(pieces))
        _check("".join(base))
    for _ in range(500):
        _check("".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))))


@pytest.mark.parametrize("value", [None, "", " ", 123, 4.5, b"nvjet_sm90", ["a"], "\x00\xff", "<" * 5000,
                                   "flash_fwd_kernel" + "<" * 3000, "fmha_cutlassF" + "_" * 3000])
def test_odd_inputs(value):
    _check(value)


# --- what the flash decoder tells a reader beyond the forward kernel (mutants of these survived) ---

# FlashAttention-3 (Hopper) names its kernel cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>,
# its element type among the template arguments
FLASH3 = ("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<"
          "flash::CollectiveMainloopFwdSm90<2, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, "
          "cute::tuple<cute::C<128>, cute::C<128>, cute::C<128> >, 128, cutlass::bfloat16_t, float, "
          "cutlass::arch::Sm90, true, false> > > >(flash::FlashAttnFwdSm90<...>::Params)")
FLASH3_BWD = FLASH3.replace("FlashAttnFwdSm90", "FlashAttnBwdSm90").replace("cutlass::bfloat16_t", "cutlass::half_t")


def test_flash_attention_3_is_named_with_its_direction_arch_and_type():
    k = decode(FLASH3)
    assert (k.kind, k.library, k.op, k.dtype, k.math) == ("attention", "FlashAttention-3", "attention forward",
                                                         "bf16", TENSOR_CORES)
    assert k.details == {"algorithm": "FlashAttention-3 forward", "direction": "forward"}
    assert k.summary == "FlashAttention-3 forward (sm90)"
    b = decode(FLASH3_BWD)
    assert (b.op, b.dtype, b.summary) == ("attention backward", "fp16", "FlashAttention-3 backward (sm90)")


def test_flash_namespace_read_from_the_parameters_names_the_build():
    # the namespace may survive only in the parameter list (the function's own prefix cut off)
    bare = FLASH.replace("void pytorch_flash::", "void ")
    assert decode(bare).details["namespace"] == "pytorch_flash"
    assert decode(bare).details["build"] == "PyTorch's vendored build"
    assert decode(FLASH_HUB).details["build"] == "flash-attn build (pip / kernels Hub)"
    other = FLASH.replace("pytorch_flash", "my_flash")
    assert decode(other).details["namespace"] == "my_flash" and decode(other).details["build"] == "my_flash"
    neither = FLASH.replace("void pytorch_flash::", "void ").replace("(pytorch_flash::Flash_fwd_params)", "()")
    assert decode(neither).details["namespace"] is None


def test_flash_variants_and_the_combine_kernels_fields():
    plain = decode(FLASH)
    assert "variant" not in plain.details and "truncated" not in plain.details
    combine = decode("void flash::flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<64, 64, 256, 4, false, "
                     "false, cutlass::bfloat16_t, Flash_kernel_traits<64, 64, 256, 4, cutlass::bfloat16_t> >, 16, 7, "
                     "true>(flash::Flash_fwd_params)")
    # flash_fwd_splitkv_combine_kernel<Kernel_traits, kBlockM, Log_max_splits, Is_even_K>
    assert combine.details["variant"] == "split-KV combine"
    assert (combine.details["kBlockM"], combine.details["Log_max_splits"], combine.details["Is_even_K"]) == (16, 7, True)
    assert combine.summary.startswith("FlashAttention-2 forward (split-KV combine)")
    assert decode(FLASH_SPLITKV).summary.startswith("FlashAttention-2 forward (split-KV)")
    backward = decode(FLASH.replace("flash_fwd_kernel", "flash_bwd_dq_dk_dv_loop_kernel"))
    assert backward.op == "attention backward" and backward.details["variant"] == "flash_bwd_dq_dk_dv_loop_kernel"


# --- the last resort: a name no family knows is read by its words (mutants of _fallback survived:
# no example reached it) -----------------------------------------------------------------------------

# A made-up name around one word; what the word means is what vendors mean by it: fmha / flash_attn /
# sdpa / mha_ attention kernels; gemm and gemv matrix products; ffma and sgemm the CUDA-core FMA path
# (cuBLAS's sgemm, xmma's _ffma_); hmma / wgmma / tensorop / s16816 / s1688 / h16816 / tensor16x8 the
# tensor-core MMA instructions (PTX mma.sync / wgmma.mma_async, CUTLASS's OpClassTensorOp).
ATTENTION_WORDS = ["fmha", "flash_attn", "attention", "sdpa", "mha_"]
TENSOR_WORDS = ["tensorop", "wgmma", "hmma", "s16816", "s1688", "h16816", "tensor16x8"]


@pytest.mark.parametrize("word", ATTENTION_WORDS)
def test_fallback_attention_words(word):
    k = decode(f"Vendor{word.upper()}Kernel")  # the words are read whatever their case, wherever they stand
    assert (k.kind, k.library, k.summary) == ("attention", "unknown", "attention kernel (name not decoded)")


@pytest.mark.parametrize("word, math", [(w, TENSOR_CORES) for w in TENSOR_WORDS]
                         + [("ffma", FFMA), ("sgemm", FFMA), ("plain", None)])
@pytest.mark.parametrize("product", ["gemm", "GEMV"])
def test_fallback_gemm_words_and_their_units(word, math, product):
    k = decode(f"vendor_{product}_{word}_v1")
    assert (k.kind, k.library, k.op, k.math, k.summary) == ("gemm", "unknown", "gemm", math,
                                                            "gemm kernel (name not decoded)")


@pytest.mark.parametrize("library, name", [("CUTLASS", "MyCutlass_gemm_v2"), ("cuBLAS", "cuBLAS_mystery_gemm"),
                                           ("CUTLASS", "cutlass_softmax_v2"), ("cuBLAS", "CUBLAS_attention_x")])
def test_fallback_names_the_library_a_name_spells(library, name):
    k = decode(name)
    assert k.library == library and k.kind in ("gemm", "softmax", "attention")


def test_fallback_softmax_and_words_it_does_not_know():
    s = decode("Vendor_SOFTMAX_v3")
    assert (s.kind, s.op, s.summary) == ("softmax", "softmax", "softmax kernel (name not decoded)")
    for name in ("  ", "my_custom_kernel_v2"):
        assert (decode(name).kind, decode(name).summary) == ("unknown", "unrecognised kernel name")


def test_no_example_trips_a_decoder():
    # decode() turns a decoder's exception into an unknown kernel (a page never breaks): none of the
    # examples may take that path
    for name in EXAMPLES + [FLASH_UNEVEN, FLASH3, FLASH3_BWD]:
        assert "decode_error" not in decode(name).details, name


# cuBLAS's helper kernels and its older generated names, as cuBLAS 12 names them (the split-K
# reduction is in the recorded training traces; gemv / gemmSN / gemmk1 serve small and skinny shapes)
SPLITK = ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, "
          "false, false>(cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, "
          "float const*, float const*, __nv_bfloat16 const*, float const*, __nv_bfloat16*, void*, long, float*, int*)")
GEMV = ("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
        "cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float "
        "const>, cublasGemvTensorStridedBatched<float>, float> >(cublasGemvParamsEx<int, "
        "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float const>, "
        "cublasGemvTensorStridedBatched<float>, float>, float, float)")


@pytest.mark.parametrize("name, kind, op, function", [
    (SPLITK, "reduce", "split-K reduce", "splitKreduce_kernel"),
    (SPLITK.replace("void cublasLt::", ""), "reduce", "split-K reduce", "splitKreduce_kernel"),
    (GEMV, "gemm", "gemv", "gemv2T_kernel_val"),
    ("void gemmSN_TN_kernel<float, 128, 16, 2, 4, 4, 4, true>(cublasGemmSmallNParams<float>)", "gemm", "gemm", "gemmSN_TN_kernel"),
    ("void gemmk1_kernel<int, float, 256, 5, false, false, false, false, float, 0>(cublasGemmk1Params<float>)", "gemm",
     "gemm", "gemmk1_kernel"),
])
def test_cublas_helper_kernels(name, kind, op, function):
    k = decode(name)
    assert (k.kind, k.library, k.op, k.details["function"]) == (kind, "cuBLAS", op, function)
    assert k.summary == ("cuBLAS split-K reduction (sums the partial gemm tiles)" if kind == "reduce"
                         else f"cuBLAS {function}")


@pytest.mark.parametrize("name, mma, arch, layout", [
    # cuBLAS's <arch>_<acc><mma shape>gemm names: h884 Volta's HMMA.884 (m8n8k4), h1688 Turing's m16n8k8
    ("volta_h884gemm_64x64_ldg8_nn", "mma.sync m8n8k4", "volta", "nn"),
    ("turing_h1688gemm_128x128_ldg8_tn", "mma.sync m16n8k8", "turing", "tn"),
])
def test_cublas_mma_shapes_of_older_arches(name, mma, arch, layout):
    k = decode(name)
    assert (k.kind, k.library, k.math, k.arch, k.details["mma_instruction"], k.details["operand_layout"]) == (
        "gemm", "cuBLAS", TENSOR_CORES, arch, mma, layout)


def test_the_frame_is_the_decoded_fields_row_by_row():
    names = EXAMPLES + EXAMPLES[:5] + [None, 7]  # repeats (decoded once, copied) and names that are no str
    frame = decode_frame(names)
    blank = lambda v: v is None or (isinstance(v, float) and math.isnan(v))  # noqa: E731  (a missing cell)
    for row, name in zip(frame.to_dict("records"), names):
        row = {c: None if blank(v) else v for c, v in row.items()}
        k = decode(name)
        assert row == {c: getattr(k, c) for c in ["name", "kind", "library", "op", "dtype", "math", "arch", "tile",
                                                  "summary", "details"]}, name
    # each row owns its details: editing one leaves its repeat alone
    frame.loc[0, "details"]["edited"] = True
    assert "edited" not in frame.loc[len(EXAMPLES), "details"]
    assert list(decode_frame([]).columns) == list(frame.columns)  # an empty table keeps its header


# --- what an ATen kernel computes, against the host op that launched it -------------------------------

# The decoded op of an ATen kernel, as a word of the aten op whose call launched it (tied by the
# correlation id of the raw events). Where ATen runs one op with another's kernel, the source says so:
# a division by a CPU scalar is a multiplication by its reciprocal (BinaryDivTrueKernel.cu), dropout's
# backward is masked_scale_kernel (Dropout.cu), copies serve .to/.contiguous/.clone.
LAUNCHED_BY = {"direct copy": ("copy", "to", "contiguous", "clone"), "dtype copy": ("copy", "to"),
               "triu/tril": ("triu", "tril"), "masked_scale": ("dropout",), "mul": ("mul", "div")}
EVERY_TRACE = sorted(TRACE_ROOT.glob("**/*.json.gz"))  # the stages, the training steps, your model's


@pytest.mark.parametrize("path", EVERY_TRACE or [None], ids=lambda p: str(p.relative_to(TRACE_ROOT)) if p else "none")
def test_aten_ops_are_the_ops_that_launched_them(path, recorded_traces):
    assert path is not None, f"no recorded traces under {TRACE_ROOT}"
    with gzip.open(path, "rt") as fh:
        events = json.load(fh).get("traceEvents", [])
    calls = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and e.get("ph") == "X" and "correlation" in e.get("args", {})}
    ops = [e for e in events if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    problems, checked = [], 0
    for name in {e["name"]: e for e in events if e.get("cat") == "kernel"}.values():
        k = decode(name["name"])
        call = calls.get(name["args"].get("correlation"))
        if not re.search(r"\bat::(?:native|cuda)::", name["name"]) or call is None:
            continue  # ATen's kernels live in at::native / at::cuda (the name says so, whatever the decoder)
        if k.library != "ATen" or k.kind in ("unknown", None) or not k.op:
            problems.append(f"ATen's {name['name'][:100]} decoded as {k.library} {k.kind} {k.op}")
            continue
        if k.op in ("reduce", "philox unpack"):
            continue
        holders = [o["name"] for o in ops if o["ts"] <= call["ts"] and o["ts"] + o["dur"] >= call["ts"] + call["dur"]]
        if not any(h.startswith("aten::") for h in holders):
            continue
        words = LAUNCHED_BY.get(k.op, (k.op.replace(" ", "_"),))
        checked += 1
        if not any(w in h for h in holders for w in words):
            problems.append(f"{k.op!r} launched under {[h for h in holders if h.startswith('aten::')]}: {name['name'][:120]}")
    assert not problems, "\n".join(problems)


# CUTLASS's own gemm names (cuBLAS launches some of them as cutlass::Kernel2<...>), written as CUTLASS's
# library names them (tools/library/scripts/generator.py / gemm_operation.py):
#   2.x: cutlass_{cc}_{opclass}_{element}_{acc}{mma shape}gemm_{epilogue}_{element}_{MxN}_{K-tile}x{stages}_{layouts}_align{N}
#   3.x: cutlass3x_sm{cc}_{opclass}_gemm_{types}_{MxNxK}_{cluster MxNxK}_..._{layouts}_align{N}_{schedule}
CUTLASS2 = ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8>"
            "(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_nn_align8::Params)")
CUTLASS_SIMT = "cutlass_80_simt_sgemm_128x128_8x5_nt_align1"
CUTLASS3 = ("cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_1x2x1_0_tnn_align8_"
            "warpspecialized_cooperative_epi_tma")


@pytest.mark.parametrize("name, fields_, details", [
    (CUTLASS2, ("gemm", "CUTLASS", "gemm", "bf16", TENSOR_CORES, "sm80", "256x128"),
     {"k_tile": 32, "stages": 3, "operand_layout": "nn", "alignment": 8, "mma_token": "s16816gemm"}),
    (CUTLASS_SIMT, ("gemm", "CUTLASS", "gemm", None, FFMA, "sm80", "128x128"),
     {"k_tile": 8, "stages": 5, "operand_layout": "nt", "alignment": 1}),
    (CUTLASS3, ("gemm", "CUTLASS", "gemm", "bf16", TENSOR_CORES, "sm90", "128x256x64"),
     {"cluster": "1x2x1", "operand_layout": "tnn", "alignment": 8}),
])
def test_cutlass_gemm_names(name, fields_, details):
    k = decode(name)
    assert fields(k) == fields_
    assert {key: k.details.get(key) for key in details} == details
    assert k.summary.startswith(f"CUTLASS gemm ({fields_[5]})") and f"{fields_[6]} tile" in k.summary


def test_the_shared_readers_of_template_arguments():
    from helpers.core.names._common import _bool, _cpp_dtype, _int, _template_args
    # a demangler writes a bool template argument as true/false, or as 1/0 (an integral constant)
    assert [_bool(t) for t in ("true", " false ", "1", "0", "2", None, "")] == [True, False, True, False, None, None, None]
    # a C++ element type, whatever its qualifiers: const, pointer, reference
    assert [_cpp_dtype(t) for t in ("const c10::BFloat16*", "float&", " c10::Half ", "__half *", None, "Foo")] == \
        ["bf16", "fp32", "fp16", "fp16", None, None]
    assert [_int(t) for t in ("128", " 32u", "-1", "64UL", "x", None)] == [128, 32, -1, 64, None, None]
    assert _template_args("f<a, g<b, c>, {lambda(int)#1}>(x)", 1) == (["a", "g<b, c>", "{lambda(int)#1}"], True)
    assert _template_args("f<a, g<b", 1) == (["a", "g<b"], False)


# --- FlashAttention-2's backward, as the recorded training step launches it (mutants survived: no
# example had a backward kernel). Signatures: flash_bwd_launch_template.h and
# flash_bwd_preprocess_kernel.h (Dao-AILab/flash-attention csrc/flash_attn/src):
#   Flash_bwd_kernel_traits<kHeadDim, kBlockM, kBlockN, kNWarps, AtomLayoutMSdP, AtomLayoutNdKV,
#                           AtomLayoutMdQ, Is_V_in_regs, No_double_buffer, elem_type, Base>
#   flash_bwd_dot_do_o_kernel<bool Clear_dQaccum, Kernel_traits>: rowsum(dO * O), the softmax gradient's D
#   flash_bwd_convert_dq_kernel<Kernel_traits>: dQ accumulated in fp32, written in the element type
#   flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Kernel_traits, Is_dropout, Is_causal, Is_local,
#                                                Has_alibi, Is_even_MN, Is_even_K, Is_softcap>
BWD_TRAITS = ("Flash_bwd_kernel_traits<64, 128, 128, 8, 4, 4, 4, false, false, cutlass::bfloat16_t, "
              "Flash_kernel_traits<64, 128, 128, 8, cutlass::bfloat16_t> >")
FLASH_BWD = {
    "dot_do_o": f"void pytorch_flash::flash_bwd_dot_do_o_kernel<true, {BWD_TRAITS} >(pytorch_flash::Flash_bwd_params)",
    "convert_dq": f"void pytorch_flash::flash_bwd_convert_dq_kernel<{BWD_TRAITS} >(pytorch_flash::Flash_bwd_params, int)",
    "main": (f"void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<{BWD_TRAITS}, false, true, false, "
             "false, true, true, false>(pytorch_flash::Flash_bwd_params)"),
}
BWD_TRAIT_VALUES = {"head_dim": 64, "block_m": 128, "block_n": 128, "warps": 8, "AtomLayoutMSdP": 4,
                    "AtomLayoutNdKV": 4, "AtomLayoutMdQ": 4, "Is_V_in_regs": False, "No_double_buffer": False,
                    "element": "cutlass::bfloat16_t"}


def test_flash_backward_kernels_are_in_the_recorded_training_step():
    recorded = set()
    for path in sorted(TRACE_ROOT.glob("*/training/sdpa_flash__*.json.gz")):
        with gzip.open(path, "rt") as fh:
            recorded |= {e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"}
    assert set(FLASH_BWD.values()) <= recorded  # the examples below are the recording's own names


@pytest.mark.parametrize("which, kind, op, computes", [
    ("dot_do_o", "reduce", "rowsum(dO·O)", "per query row, the dot product of dO and O"),
    ("convert_dq", "copy", "dQ fp32 → 16-bit", "dQ, accumulated in fp32 across key tiles"),
])
def test_flash_backward_helpers(which, kind, op, computes):
    k = decode(FLASH_BWD[which])
    assert (k.kind, k.library, k.op, k.dtype, k.math, k.tile) == (kind, "FlashAttention-2", op, "bf16", None, "128x128")
    d = k.details
    assert {key: d[key] for key in BWD_TRAIT_VALUES} == BWD_TRAIT_VALUES
    assert d["computes"].startswith(computes) and d["direction"] == "backward"
    assert d["function"] == FLASH_BWD[which].split("::")[1].split("<")[0]
    assert ("Clear_dQaccum" in d) == (which == "dot_do_o") and d.get("Clear_dQaccum", True) is True
    assert k.summary == f"FlashAttention-2 backward, {op}, head_dim 64, 128x128 tiles, 8 warps"


def test_flash_backward_main_kernel():
    k = decode(FLASH_BWD["main"])
    assert (k.kind, k.library, k.op, k.dtype, k.math) == ("attention", "FlashAttention-2", "attention backward",
                                                         "bf16", TENSOR_CORES)
    d = k.details
    assert {key: d[key] for key in BWD_TRAIT_VALUES} == BWD_TRAIT_VALUES
    flags = dict(zip(("Is_dropout", "Is_causal", "Is_local", "Has_alibi", "Is_even_MN", "Is_even_K", "Is_softcap"),
                     (False, True, False, False, True, True, False)))
    assert {key: d[key] for key in flags} == flags
    assert k.summary.endswith(", causal") and "FlashAttention-2 backward (flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel)" in k.summary


def test_flash_forward_says_causal_and_names_its_function_and_direction():
    k, hub = decode(FLASH), decode(FLASH_HUB)
    assert k.summary.endswith(", causal") and "causal" not in hub.summary  # Is_causal true / false
    assert (k.details["function"], k.details["direction"]) == ("flash_fwd_kernel", "forward")
    # the namespace before the function wins when the parameter list has none
    assert decode(FLASH.replace("(pytorch_flash::Flash_fwd_params)", "(Flash_fwd_params)")).details["namespace"] == "pytorch_flash"
    assert decode(FLASH3).arch == "sm90"
    unnamed = decode(FLASH3.replace("cutlass::bfloat16_t", "T"))  # no element type named
    assert (unnamed.library, unnamed.dtype) == ("FlashAttention-3", None)


def test_flash_names_cut_short_or_with_flags_of_an_unknown_count():
    bare = decode("flash_fwd_kernel")  # a viewer that keeps the bare function name
    assert (bare.kind, bare.library, bare.tile, bare.dtype) == ("attention", "FlashAttention-2", None, None)
    # cut inside the traits: block_m read, block_n lost
    cut = decode("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128")
    assert cut.details.get("block_m") == 128 and cut.tile is None and cut.details["truncated"] is True
    # cut inside the flags: the flags read so far are named in the newest order
    flags_cut = FLASH[:FLASH.index(", true, true, false, false>")]  # ..., false, true, false, false (4 flags)
    d = decode(flags_cut).details
    assert d["truncated"] is True and [d[f] for f in ("Is_dropout", "Is_causal", "Is_local", "Has_alibi")] == \
        [False, True, False, False]
    # cut after seven flags: named in the newest order (softcap 7th), not by the older 7-flag build's
    seven = decode(FLASH[:FLASH.index(", false>(pytorch_flash")]).details
    assert seven["truncated"] is True and "Is_softcap" in seven and "Return_softmax" not in seven
    # a closed list of a count no known build has (4): kept as a list, unnamed
    four = decode(FLASH.replace(", false, true, false, false, true, true, false, false>", ", true, 1, false, x>"))
    assert four.details["flags"] == [True, True, False, "x"] and "Is_causal" not in four.details


# cuDNN's SDPA backward as the recorded training step of your model launches it (own_model/
# encoder_train_step): its generated bprop kernel and the two fusion helpers (cudnn::fusion::...),
# and the generated name's every token (cuDNN's frontend names them
# cudnn_generated_fort_native_sdpa_<arch>_<algo>_<fprop|bprop>_<mma>_<precision>_knob_<n>_<tile>_<warps>_cga<cluster>_kernel<i>_<suffix>)
CUDNN_BWD = "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x64_1x4x1_cga1x1x1_kernel0_0"
CUDNN_HELPERS = ("void cudnn::fusion::compute_dot_do_o_specialized<true, 64>(void const*, void const*, void*, void*, "
                 "unsigned int, unsigned int, unsigned int, unsigned int)",
                 "void cudnn::fusion::convert_dq_to_16bits<true>(void const*, void*, unsigned int, unsigned int)")


def test_cudnn_names_of_the_recorded_training_step():
    path = next(TRACE_ROOT.glob("*/own_model/encoder_train_step.json.gz"))
    with gzip.open(path, "rt") as fh:
        recorded = {e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"}
    assert CUDNN_BWD in recorded
    assert all(any(r.startswith(h.split("(")[0]) for r in recorded) for h in CUDNN_HELPERS)
    k = decode(CUDNN_BWD)
    assert fields(k) == ("attention", "cuDNN", "attention backward", "16-bit", TENSOR_CORES, "sm90", "64x64x64")
    d = k.details
    assert (d["direction"], d["direction_words"], d["knob"], d["layout"], d["cluster"]) == (
        "bprop", "backward", 26, "1x4x1", "1x1x1")
    assert (d["kernel_index"], d["suffix"], d["other_tokens"]) == ("0", "0", ["fort", "native"])
    assert d["mma_words"].startswith("wgmma") and "other_dims" not in d
    assert k.summary.startswith("cuDNN SDPA")
    dot, dq = (decode(h) for h in CUDNN_HELPERS)
    assert (dot.kind, dot.library, dot.op, dot.details["function"], dot.details["direction"]) == (
        "reduce", "cuDNN", "rowsum(dO·O)", "compute_dot_do_o_specialized", "backward")
    assert (dq.kind, dq.library, dq.op, dq.details["function"]) == ("copy", "cuDNN", "dQ fp32 → 16-bit", "convert_dq_to_16bits")
    assert dot.summary == "cuDNN SDPA backward helper, rowsum(dO·O)"


def test_cudnn_suffixes_extra_dims_and_a_knob_without_its_number():
    k = decode("cudnn_generated_fort_native_sdpa_sm100_flash_bprop_umma_f16_knob_2_128x128x64_2x1x1_1x1x1_cga1x1x1_kernel3_0_x")
    assert (k.tile, k.details["layout"], k.details["other_dims"]) == ("128x128x64", "2x1x1", ["1x1x1"])
    assert (k.details["kernel_index"], k.details["suffix"]) == ("3", "0_x")
    cut = decode("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob")  # cut after "knob"
    assert "knob" not in cut.details and cut.details["other_tokens"][-1] == "knob"
    bare = decode("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_kernel")
    assert bare.details.get("kernel_index") is None and bare.details.get("suffix") is None


def test_runtime_copies_and_sets_in_words():
    # Kineto's own names for the runtime's copies and sets: "Memcpy <dir> (<src> -> <dst>)", "Memset (<where>)"
    h = decode("Memcpy HtoD (Pageable -> Device)")
    assert (h.op, h.summary, h.details["direction_words"]) == ("memcpy HtoD", "runtime copy HtoD (Pageable -> Device)",
                                                                "host to device")
    bare = decode("Memcpy DtoH")
    assert (bare.summary, bare.details) == ("runtime copy DtoH", {"direction": "DtoH", "direction_words": "device to host"})
    s = decode("Memset (Device)")
    assert (s.op, s.summary) == ("memset", "runtime memset (Device)")
    assert (decode("Memset").summary, decode("Memset").details) == ("runtime memset", {})


@pytest.mark.parametrize("name, kind, op, kernel_class, ops, index", [
    # Inductor: triton_{class}_fused_{aten ops}_{index}; a template (tem) is a matmul or flex attention
    ("triton_tem_fused_mm_0", "gemm", "mm", "template", ["mm"], 0),
    ("triton_tem_fused_addmm_relu_3", "gemm", "addmm", "template", ["addmm", "relu"], 3),
    ("triton_tem_fused_convolution_1", "fused", "convolution", "template", ["convolution"], 1),
    ("triton_per_fused_mm_2", "fused", "mm", "persistent reduction", ["mm"], 2),
    ("triton_poi_fused_7", "fused", None, "pointwise", [], 7),
    ("triton_xyz_fused_add", "fused", "add", "xyz", ["add"], None),
])
def test_triton_classes_templates_and_indices(name, kind, op, kernel_class, ops, index):
    k = decode(name)
    assert (k.kind, k.library, k.op) == (kind, "Triton", op)
    d = k.details
    assert (d["kernel_class"], d["class_token"], d["fused_ops"], d["index"]) == (kernel_class, name.split("_")[1], ops, index)
    assert k.summary == f"Triton {kernel_class}" + (f": {', '.join(ops)}" if ops else "")


# ATen's softmax kernels, as PersistentSoftmax.cuh and SoftMax.cu declare them:
#   softmax_warp_{forward,backward}<input_t, output_t, acc_t, log2_elements, is_log_softmax, is_masked>
#   cunn_SoftMaxForward<ILP, scalar_t, accscalar_t, outscalar_t, Epilogue>, ...Smem<..., index_t>,
#   cunn_SoftMaxForwardReg<scalar_t, accscalar_t, outscalar_t, Epilogue, index_t, reg_cnt>
# (the backward and the Reg form are the recorded traces' own names: training/inplace, inplace s4096)
WARP_BWD = ("void (anonymous namespace)::softmax_warp_backward<c10::BFloat16, c10::BFloat16, float, 10, false, false>"
            "(c10::BFloat16*, c10::BFloat16 const*, c10::BFloat16 const*, int, int, int, bool const*)")


@pytest.mark.parametrize("name, op, dtype, details, summary", [
    (WARP_BWD, "softmax backward", "bf16",
     {"function": "softmax_warp_backward", "log2_elements": 10, "elements_per_row": 1024, "is_log_softmax": False,
      "algorithm": "one warp per row, row held in registers (dim <= 1024)"},
     "ATen softmax backward, softmax_warp_backward, bf16, rows of 1024"),
    (WARP_BWD.replace("10, false, false>", "9, true, false>").replace("c10::BFloat16", "float"), "log_softmax backward", "fp32",
     {"is_log_softmax": True, "elements_per_row": 512}, "ATen log_softmax backward, softmax_warp_backward, fp32, rows of 512"),
    (CUNN_SOFTMAX.replace("SoftMaxForwardEpilogue", "LogSoftMaxForwardEpilogue"), "log_softmax", "bf16",
     {"ILP": 8, "epilogue": "LogSoftMaxForwardEpilogue", "algorithm": "one block per row"},
     "ATen log_softmax, cunn_SoftMaxForward, bf16"),
    (CUNN_SOFTMAX.replace("cunn_SoftMaxForward<", "cunn_SoftMaxForwardSmem<").replace(">(c10", ", long>(c10"),
     "softmax", "bf16", {"index_t": "long", "algorithm": "one block per row, row staged in shared memory"},
     "ATen softmax, cunn_SoftMaxForwardSmem, bf16"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<c10::BFloat16, float, c10::BFloat16, "
     "at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, 4>(c10::BFloat16*, c10::BFloat16 const*, long)",
     "softmax", "bf16", {"reg_cnt": 4, "algorithm": "one block per row, row held in registers"},
     "ATen softmax, cunn_SoftMaxForwardReg, bf16"),
])
def test_aten_softmax_variants(name, op, dtype, details, summary):
    k = decode(name)
    assert (k.kind, k.library, k.op, k.dtype) == ("softmax", "ATen", op, dtype)
    assert {key: k.details.get(key) for key in details} == details
    assert k.summary == summary and "truncated" not in k.details
    cut = decode(name[:name.index(",") + 1])  # cut after the first template argument
    assert (cut.kind, cut.details["truncated"]) == ("softmax", True)


@pytest.mark.parametrize("name, tile, cluster, other_dims, parts", [
    # cuBLAS 12's nvjet names: nvjet_<arch>_<variant>_<MxN tile>_<dims>_<cluster>_<h: 16-bit inputs>_<bz: beta 0>_<schedule>_<layout>
    (NVJET_A, "256x128", "1x2", None, ["cuBLAS nvjet gemm (sm90)", "256x128 tile", "cluster 1x2", "TNT", "coopA",
                                       "16-bit inputs", "beta 0"]),
    ("nvjet_tst_64x8_64x16_4x1_v_bz_NTN", "64x8", "4x1", None, ["cuBLAS nvjet gemm", "64x8 tile", "cluster 4x1", "NTN", "beta 0"]),
    ("nvjet_sm90_tst_64x128_64x8_2x1_2x2_v_splitK_NTN", "64x128", "2x1", ["2x2"],
     ["cuBLAS nvjet gemm (sm90)", "64x128 tile", "cluster 2x1", "NTN"]),
    ("nvjet_sm90_tst_128x64", "128x64", None, None, ["cuBLAS nvjet gemm (sm90)", "128x64 tile"]),
])
def test_nvjet_summary_and_dims(name, tile, cluster, other_dims, parts):
    k = decode(name)
    assert (k.kind, k.library, k.tile, k.details.get("cluster"), k.details.get("other_dims")) == (
        "gemm", "cuBLAS (nvjet)", tile, cluster, other_dims)
    assert k.summary == ", ".join(parts)  # each part a token of the name, in the name's words


# cuBLAS's xmma names: sm<cc>_xmma_<op>_<A B types>_<C acc types>_<out type>_<layouts>_tilesize<MxNxK>_
# stage<n>_warpsize<MxNxK>_<unit: ffma / hmma / tensor...>_..._kernel[__5x_cublas]
XMMA_HMMA = "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize64x64x32_stage4_warpsize2x2x1_hmma_kernel"
XMMA_BARE = "sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_kernel"  # no unit named


@pytest.mark.parametrize("name, dtype, math, parts, details", [
    (XMMA_BF16, "bf16", TENSOR_CORES, ["cuBLAS xmma gemm (sm80)", "bf16", "128x128x32 tile", "3 stages", "warps 2x2x1",
                                      "tn", TENSOR_CORES], {"layout_tokens": ["tn", "n"], "from": None, "mma": None}),
    (XMMA_F32_TN, "fp32", FFMA, ["cuBLAS xmma gemm (sm80)", "fp32", "128x128x8 tile", "3 stages", "warps 2x2x1", "tn", FFMA],
     {"from": "cuBLAS", "type_tokens": ["f32f32", "f32f32", "f32"]}),
    (XMMA_HMMA, "fp16", TENSOR_CORES, ["cuBLAS xmma gemm (sm80)", "fp16", "64x64x32 tile", "4 stages", "warps 2x2x1", "nn",
                                      TENSOR_CORES], {"mma": "hmma", "math_inferred": None}),
    (XMMA_BARE, "bf16", TENSOR_CORES, ["cuBLAS xmma gemm (sm80)", "bf16", "128x128x32 tile", "tn", TENSOR_CORES],
     {"math_inferred": "from the 16/8-bit input type", "stages": None}),
])
def test_xmma_summary_units_and_types(name, dtype, math, parts, details):
    k = decode(name)
    assert (k.kind, k.library, k.dtype, k.math) == ("gemm", "cuBLAS", dtype, math)
    assert k.summary == ", ".join(parts)
    assert {key: k.details.get(key) for key in details} == details


# xformers' backward as the recorded training step launches it (training/sdpa_efficient), read by
# kernel_backward.h's AttentionBackwardKernel<ArchTag, scalar_t, kIsAligned, kApplyDropout,
# kPreload_MMAs, kBlockSizeI, kBlockSizeJ, kMaxK, kKeysQueriesAlignedToBlockSize> and its generated
# name fmha_cutlassB_<type>_<aligned>_<IxJ>_k<maxK>[_dropout][_seqaligned]_sm<cc>
CUTLASS_B = ("fmha_cutlassB_bf16_aligned_64x64_k64_seqaligned_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<"
             "cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, 64, 64, 64, true>::Params)")


def test_cutlass_mem_efficient_backward_of_the_recorded_training_step():
    with gzip.open(next(TRACE_ROOT.glob("*/training/sdpa_efficient__*.json.gz")), "rt") as fh:
        assert CUTLASS_B in {e["name"] for e in json.load(fh)["traceEvents"] if e.get("cat") == "kernel"}
    k = decode(CUTLASS_B)
    assert fields(k) == ("attention", "CUTLASS (xformers mem-efficient)", "attention backward", "bf16", TENSOR_CORES,
                         "sm80", "64x64")
    d = k.details
    assert (d["direction"], d["block_i"], d["block_j"], d["max_k"], d["keys_queries_aligned_to_blocksizes"]) == (
        "backward", 64, 64, 64, True) and "dropout" not in d
    assert d["template"] == {"arch_tag": "cutlass::arch::Sm80", "scalar_t": "cutlass::bfloat16_t", "is_aligned": True,
                             "kApplyDropout": False, "kPreload_MMAs": True, "kBlockSizeI": 64, "kBlockSizeJ": 64,
                             "kMaxK": 64, "kKeysQueriesAlignedToBlockSize": True}
    assert k.summary == "memory-efficient attention backward (cutlassB), bf16, 64x64 tiles, sm80"
    assert decode("fmha_cutlassB_bf16_aligned_64x64_k64_dropout_sm80").details["dropout"] is True
    cut = decode(CUTLASS_B[:CUTLASS_B.index("true, false")])  # the template cut after its two types
    assert cut.details["template"] == {"arch_tag": "cutlass::arch::Sm80", "scalar_t": "cutlass::bfloat16_t", "truncated": True}
    assert cut.arch == "sm80" and cut.dtype == "bf16"


def test_cutlass_mem_efficient_forward_summary():
    k = decode(CUTLASS_F)  # the recorded sdpa_efficient forward's own name
    assert k.summary == "memory-efficient attention forward (cutlassF), bf16, 64x64 tiles, output in registers, sm80"
    g = decode("fmha_cutlassF_f32_aligned_32x128_gmem_sm80")
    assert "output in registers" not in g.summary and g.summary.endswith(", sm80")


# --- every field a reader is shown, per branch of ATen's, legacy cuBLAS's and cuDNN's decoders ---
# Each expectation is written from the name itself (its template arguments, read against the
# ATen / cuBLAS / cuDNN source or naming convention cited beside it) and the decoder's documented
# summary template; the whole details dict and the exact summary are compared, because both are
# shown in the kernel tables and the book's kernel-names page.

@functools.lru_cache(maxsize=None)
def _recorded(fragment: str) -> str:
    """The first recorded kernel name that holds `fragment` (from the replayed traces, not typed in)."""
    for path in sorted(TRACE_ROOT.rglob("*.json.gz")):
        with gzip.open(path, "rt") as fh:
            for e in json.load(fh)["traceEvents"]:
                if e.get("cat") == "kernel" and fragment in e["name"]:
                    return e["name"]
    raise AssertionError(f"no recorded kernel holds {fragment!r}")


# ATen Reduce.cuh: reduce_kernel<max_threads, output_vec_size, ReduceOp<scalar_t, ops_t, ...>>
REDUCE_MEAN_PART = "ReduceOp<float, at::native::MeanOps<float, float, float, float>"
# ATen CUDALoops.cuh: unrolled_elementwise_kernel<func, array, elems, in_calc, out_calc, loader, storer>;
# the loader/storer LoadWithCast/StoreWithCast are the casting path (a dtype conversion)
CAST_COPY_PART = "unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda"
# Copy.cu's float16_copy_kernel_cuda (fp32 -> fp16, the twin of bfloat16_copy_kernel_cuda)
FP16_COPY = ("void at::native::vectorized_elementwise_kernel<8, at::native::float16_copy_kernel_cuda("
             "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::"
             "float16_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)")
# TriangularOps.cu: triu_tril_kernel<scalar_t, IndexType, upper, elements_per_thread, inplace>; torch.triu
TRIU_UPPER = ("void at::native::triu_tril_kernel<bool, int, true, 8, false>(at::cuda::detail::TensorInfo<"
              "bool, int>, at::cuda::detail::TensorInfo<bool const, int>, long, long, int)")
# Indexing.cu's index_select kernel: an ATen kernel with no launcher and no op in the table
INDEX_SELECT = ("void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, "
                "true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<float const, "
                "unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, int, unsigned int, "
                "unsigned int, long)")


@pytest.mark.parametrize("name, kind, op, dtype, details, summary", [
    # reduce_kernel<512, 1, ReduceOp<float, MeanOps...>>: 512 threads, output vec 1, a mean over fp32
    (REDUCE_MEAN_PART, "reduce", "reduce", "fp32",
     {"launcher": "reduce_kernel", "max_threads": 512, "output_vec_size": 1, "reduction": "mean"},
     "ATen reduce (mean) over fp32"),
    # vectorized_elementwise_kernel<4, FillFunctor<bool>>: vector width 4, fills bools
    (FILL, "fill", "fill", "bool", {"launcher": "vectorized_elementwise_kernel", "vector_width": 4},
     "ATen fill, bool"),
    # elementwise_kernel<128, 4, ...masked_fill_kernel...{lambda(c10::BFloat16, bool)}>: 128 threads, 4 items
    (MASKED_FILL, "masked_fill", "masked_fill", "bf16",
     {"launcher": "elementwise_kernel", "threads_per_block": 128, "items_per_thread": 4},
     "ATen masked_fill, bf16"),
    # the casting copy: unrolled launcher (no vector width), lambda(float), LoadWithCast/StoreWithCast
    (CAST_COPY_PART, "copy", "direct copy", "fp32",
     {"launcher": "unrolled_elementwise_kernel", "casting_load_store": True},
     "ATen direct copy with casting loads/stores (a dtype conversion), fp32"),
    # the plain copy: vectorized<8>, lambda(c10::BFloat16), no casting loader
    (DIRECT_COPY, "copy", "direct copy", "bf16", {"launcher": "vectorized_elementwise_kernel", "vector_width": 8},
     "ATen direct copy, bf16"),
    (BF16_COPY, "copy", "dtype copy", "bf16",
     {"launcher": "vectorized_elementwise_kernel", "vector_width": 8, "function": "bfloat16_copy_kernel_cuda",
      "to_dtype": "bf16"}, "ATen dtype copy, bf16"),
    (FP16_COPY, "copy", "dtype copy", "fp16",
     {"launcher": "vectorized_elementwise_kernel", "vector_width": 8, "function": "float16_copy_kernel_cuda",
      "to_dtype": "fp16"}, "ATen dtype copy, fp16"),
    # AUnaryFunctor: the first operand (a) is the CPU scalar; MulFunctor; vector width 8; bf16
    (MUL, "elementwise", "mul", "bf16",
     {"launcher": "vectorized_elementwise_kernel", "vector_width": 8, "scalar_operand": "a"},
     "ATen elementwise mul by a CPU scalar, bf16"),
    # BinaryFunctor<float, ...MulFunctor>: two tensors, no scalar operand
    (BINARY_MUL, "elementwise", "mul", "fp32", {"launcher": "vectorized_elementwise_kernel", "vector_width": 4},
     "ATen elementwise mul, fp32"),
    # triu_tril_kernel<bool, int, false, 8, false> is tril; <..., true, ...> is triu
    (TRIU, "mask", "triu/tril", "bool",
     {"scalar_t": "bool", "index_type": "int", "upper": False, "elements_per_thread": 8, "inplace": False},
     "ATen tril (builds the causal mask), bool"),
    (TRIU_UPPER, "mask", "triu/tril", "bool",
     {"scalar_t": "bool", "index_type": "int", "upper": True, "elements_per_thread": 8, "inplace": False},
     "ATen triu (builds the causal mask), bool"),
    (INDEX_SELECT, "unknown", None, None, {}, "ATen kernel, not recognised"),
])
def test_aten_every_shown_field_per_branch(name, kind, op, dtype, details, summary):
    name = name if name.startswith(("void", "at::")) else _recorded(name)
    k = decode(name)
    assert (k.kind, k.library, k.op, k.dtype) == (kind, "ATen", op, dtype)
    assert k.details == details
    assert k.summary == summary


@pytest.mark.parametrize("fragment, op, dtype, details, summary", [
    # layer_norm_kernel.cu's forward, <c10::BFloat16, float, false>
    ("vectorized_layer_norm_kernel", "layer_norm", "bf16",
     {"computes": "forward: each row's mean and variance, then normalize, scale and shift"},
     "ATen layer_norm (forward: each row's mean and variance, then normalize, scale and shift), bf16"),
    # ForeachFunctors.cuh: TensorListMetadata<3> = three lists (param, tensor1, tensor2) and
    # std::multiplies = addcmul; PointwiseOpScalarFunctor<c10::BFloat16, ...> = bf16
    ("TensorListMetadata<3>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor", "foreach addcmul", "bf16",
     {"launcher": "multi_tensor_apply_kernel", "tensor_lists": 3},
     "ATen foreach addcmul (one launch for a list of tensors), bf16"),
    # TensorListScalarListMetadata<float, 3>: three lists plus a list of scalars; std::divides = addcdiv
    ("TensorListScalarListMetadata<float, 3>", "foreach addcdiv", "bf16",
     {"launcher": "multi_tensor_apply_kernel", "tensor_lists": 3},
     "ATen foreach addcdiv (one launch for a list of tensors), bf16"),
    ("philox::unpack", "philox unpack", None, {},
     "ATen RNG state unpack (the seed and offset a dropout reads)"),
])
def test_aten_special_every_shown_field(fragment, op, dtype, details, summary):
    k = decode(_recorded(fragment))
    kind = {"layer_norm": "reduce", "philox unpack": "copy"}.get(op, "elementwise")
    assert (k.kind, k.library, k.op, k.dtype) == (kind, "ATen", op, dtype)
    assert k.details == details
    assert k.summary == summary


def test_aten_foreach_of_an_op_not_in_the_table():
    # ForeachReduceOp.cu's LpNormFunctor (clip_grad_norm_'s foreach norm): a foreach launch whose op
    # is none of the table's, over one list of fp32 tensors
    k = decode("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
               "namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<float, "
               "(at::native::(anonymous namespace)::NormType)1, float, float>, float*, int>(at::native::"
               "(anonymous namespace)::TensorListMetadata<1>, at::native::(anonymous namespace)::LpNormFunctor<"
               "float, (at::native::(anonymous namespace)::NormType)1, float, float>, float*, int)")
    assert (k.kind, k.library, k.op, k.dtype) == ("elementwise", "ATen", "foreach", "fp32")
    assert k.details == {"launcher": "multi_tensor_apply_kernel", "tensor_lists": 1}
    assert k.summary == "ATen foreach op (one launch for a list of tensors), fp32"


def assert_shown(name: str, fields_: tuple, details: dict, summary: str) -> None:
    """Every field a kernel table shows for `name`: the columns, the whole details, the exact summary."""
    k = decode(name)
    assert fields(k) == fields_
    assert k.details == details
    assert k.summary == summary


@pytest.mark.parametrize("name, fields_, details, summary", [
    # <arch>_<in dtype>_<acc letter><mma shape>gemm_<out dtype>_<tile>_ldg<n>_f2f_stages_<k tile>x<stages>_<layout>
    (AMPERE_BF16, ("gemm", "cuBLAS", "gemm", "bf16", TENSOR_CORES, "ampere", "128x128"),
     {"mma_instruction": "mma.sync m16n8k16", "mma_token": "s16816gemm", "accumulate_letter": "s",
      "output_dtype": "bf16", "ldg": 8, "other_tokens": ["f2f"], "k_tile": 64, "stages": 3, "operand_layout": "tn"},
     "cuBLAS gemm (ampere), bf16, mma.sync m16n8k16, 128x128 tile, 3 stages, tn, tensor cores"),
    # Turing's fp16 in / fp16 out on m16n8k8 with an fp32 ("s") accumulator, no stage count
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn", ("gemm", "cuBLAS", "gemm", "fp16", TENSOR_CORES, "turing",
                                                        "128x128"),
     {"mma_instruction": "mma.sync m16n8k8", "mma_token": "s1688gemm", "accumulate_letter": "s",
      "output_dtype": "fp16", "ldg": 8, "other_tokens": ["f2f"], "operand_layout": "tn"},
     "cuBLAS gemm (turing), fp16, mma.sync m16n8k8, 128x128 tile, tn, tensor cores"),
    # Volta's HMMA.884 with a half ("h") accumulator and no type token
    ("volta_h884gemm_64x64_ldg8_nn", ("gemm", "cuBLAS", "gemm", None, TENSOR_CORES, "volta", "64x64"),
     {"mma_instruction": "mma.sync m8n8k4", "mma_token": "h884gemm", "accumulate_letter": "h", "ldg": 8,
      "operand_layout": "nn"},
     "cuBLAS gemm (volta), mma.sync m8n8k4, 64x64 tile, nn, tensor cores"),
    # sgemm: fp32 on CUDA cores; "sliced1x4" kept as the slicing token (as ncu lists it on an A100)
    ("ampere_sgemm_32x32_sliced1x4_nn", ("gemm", "cuBLAS", "gemm", "fp32", FFMA, "ampere", "32x32"),
     {"sliced": "1x4", "operand_layout": "nn"},
     "cuBLAS gemm (ampere), fp32, 32x32 tile, nn, CUDA cores (FFMA)"),
])
def test_cublas_legacy_every_shown_field(name, fields_, details, summary):
    assert_shown(name, fields_, details, summary)


def test_cudnn_every_shown_field():
    # cudnn_generated_fort_native_ sdpa sm90 flash fprop wgmma f16 knob_7 <tile> <layout> cga<cluster> kernel0_0
    k = decode(CUDNN)
    assert k.details == {
        "other_tokens": ["fort", "native"], "operation": "sdpa (scaled dot-product attention)", "algorithm": "flash",
        "direction": "fprop", "direction_words": "forward", "mma": "wgmma", "mma_words": "wgmma (Hopper warpgroup MMA)",
        "precision_token": "f16", "knob": 7, "cluster": "1x1x1", "kernel_index": "0", "suffix": "0",
        "layout": "4x1x1", "layout_product": 4,
        "layout_reads_as": "one warpgroup's layout over the tile (its product is a warpgroup, not the block)"}
    assert k.summary == ("cuDNN SDPA, flash, forward, wgmma, sm90, knob 7, 64x128x64 tile, "
                         "layout 4x1x1 (product 4: one warpgroup, not the block's warp count), cluster 1x1x1")
    # cut right after the knob's number: the knob is still read
    assert decode("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7").details["knob"] == 7
    # cut before the direction: attention with no direction
    cut = decode("cudnn_generated_fort_native_sdpa_sm90_flash")
    assert (cut.kind, cut.op, cut.summary) == ("attention", "attention", "cuDNN SDPA, flash, sm90")
    dot = decode(CUDNN_HELPERS[0])
    assert dot.details == {"function": "compute_dot_do_o_specialized", "direction": "backward",
                           "computes": "per query row, the dot product of dO and O (the softmax gradient's D)"}


@pytest.mark.parametrize("name, fields_, details, summary", [
    # CUTLASS 2: cutlass_<cc>_<opclass>_<type>_<mma>gemm_<epilogue>_<out type>_<MxN>_<KxStages>_<layout>_align<n>;
    # the op class comes before any type, the second type token and the epilogue stay literal
    (CUTLASS2, ("gemm", "CUTLASS", "gemm", "bf16", TENSOR_CORES, "sm80", "256x128"),
     {"mma_token": "s16816gemm", "other_tokens": ["relu", "bf16"], "operand_layout": "nn", "alignment": 8,
      "k_tile": 32, "stages": 3}, "CUTLASS gemm (sm80), bf16, 256x128 tile, nn, tensor cores"),
    # simt sgemm: CUDA cores, no type token (the "s" of sgemm is not read as one), K-tile 8, 5 stages
    (CUTLASS_SIMT, ("gemm", "CUTLASS", "gemm", None, FFMA, "sm80", "128x128"),
     {"other_tokens": ["sgemm"], "k_tile": 8, "stages": 5, "operand_layout": "nt", "alignment": 1},
     "CUTLASS gemm (sm80), 128x128 tile, nt, CUDA cores (FFMA)"),
    # CUTLASS 3: cutlass3x_<sm>_<opclass>_gemm_<A>_<B>_<acc>_<C>_<D>_<MxNxK>_<cluster>_<stages>_<layout>_align<n>_<schedule>
    (CUTLASS3, ("gemm", "CUTLASS", "gemm", "bf16", TENSOR_CORES, "sm90", "128x256x64"),
     {"other_tokens": ["bf16", "f32", "bf16", "bf16", "0", "warpspecialized", "cooperative", "epi", "tma"],
      "cluster": "1x2x1", "operand_layout": "tnn", "alignment": 8},
     "CUTLASS gemm (sm90), bf16, 128x256x64 tile, tnn, tensor cores"),
])
def test_cutlass_gemm_every_shown_field(name, fields_, details, summary):
    assert_shown(name, fields_, details, summary)


# Hopper's xmma as vLLM's and others' nsys tables list it: a warpgroup size (wgmma) and no warp size or stages
XMMA_SM90 = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
             "kernel__5x_cublas")


@pytest.mark.parametrize("name, fields_, details, summary", [
    (XMMA_SM90, ("gemm", "cuBLAS", "gemm", "bf16", TENSOR_CORES, "sm90", "128x128x64"),
     {"operation": "gemm", "warpgroup_layout": "1x1x1", "other_tokens": ["execute", "segment", "k", "off", "kernel", "5x"],
      "from": "cuBLAS", "type_tokens": ["bf16bf16", "bf16f32", "f32"], "operand_layout": "tn", "layout_tokens": ["tn", "n"]},
     "cuBLAS xmma gemm (sm90), bf16, 128x128x64 tile, tn, tensor cores"),
    (XMMA_F32_TN, ("gemm", "cuBLAS", "gemm", "fp32", FFMA, "sm80", "128x128x8"),
     {"operation": "gemm", "stages": 3, "warp_layout": "2x2x1", "align_a": 4, "align_c": 4,
      "other_tokens": ["execute", "kernel", "5x"], "from": "cuBLAS", "type_tokens": ["f32f32", "f32f32", "f32"],
      "operand_layout": "tn", "layout_tokens": ["tn", "n"]},
     "cuBLAS xmma gemm (sm80), fp32, 128x128x8 tile, 3 stages, warps 2x2x1, tn, CUDA cores (FFMA)"),
])
def test_xmma_every_shown_field(name, fields_, details, summary):
    assert_shown(name, fields_, details, summary)


def test_nvjet_without_an_arch_with_tokens_it_does_not_name():
    # as an nsys table lists it: no sm token, so the variant is the first token; "2cta" and "splitK"
    # are not labelled and stay literal
    k = decode("nvjet_tst_64x32_64x16_2x2_2cta_h_bz_splitK_TNT")
    assert fields(k) == ("gemm", "cuBLAS (nvjet)", "gemm", "16-bit", TENSOR_CORES, None, "64x32")
    assert k.details == {"variant_token": "tst", "other_tokens": ["2cta", "splitK"], "inputs": "16-bit (h)",
                         "beta": "zero (bz)", "layout": "TNT", "tile_m": 64, "tile_n": 32, "dims_token_2": "64x16",
                         "cluster": "2x2"}
    assert k.summary == "cuBLAS nvjet gemm, 64x32 tile, cluster 2x2, TNT, 16-bit inputs, beta 0"


def test_a_decoder_that_raises_reads_unknown_with_the_error(monkeypatch):
    import helpers.core.names as names

    def broken(text):
        raise ValueError("boom")
    monkeypatch.setattr(names, "_FAMILIES", (broken,))
    k = decode("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")
    assert (k.name, k.kind, k.library, k.op, k.summary) == (
        "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT", "unknown", "unknown", None, "unrecognised kernel name")
    assert k.details == {"decode_error": "ValueError('boom')"}
    # a family's fields with no summary of their own: the library, the kind and the op, in words;
    # a kind outside KINDS reads "unknown"
    monkeypatch.setattr(names, "_FAMILIES", (lambda text: {"kind": "gemm", "library": "L", "op": "mm"},))
    assert decode("x").summary == "L gemm mm"
    monkeypatch.setattr(names, "_FAMILIES", (lambda text: {"kind": "not-a-kind", "library": "L"},))
    assert (decode("x").kind, decode("x").summary) == ("unknown", "unrecognised kernel name")
    monkeypatch.setattr(names, "_FAMILIES", (lambda text: {"library": "L", "op": "mm"},))
    assert (decode("x").kind, decode("x").summary) == ("unknown", "unrecognised kernel name")


@pytest.mark.parametrize("name, op, dtype, details, summary", [
    # SoftMax.cu: cunn_SoftMaxForward<ILP, scalar_t, accscalar_t, outscalar_t, Epilogue>
    (CUNN_SOFTMAX, "softmax", "bf16",
     {"function": "cunn_SoftMaxForward", "ILP": 8, "input_dtype": "bf16", "accumulate_dtype": "fp32",
      "output_dtype": "bf16", "epilogue": "SoftMaxForwardEpilogue", "algorithm": "one block per row"},
     "ATen softmax, cunn_SoftMaxForward, bf16"),
    # PersistentSoftmax.cuh: softmax_warp_backward<input_t, output_t, acc_t, log2_elements, is_log_softmax,
    # is_masked> as the recorded backward launches it: <float, float, float, 10, false, false>
    ("softmax_warp_backward<float, float, float, 10, false, false>", "softmax backward", "fp32",
     {"function": "softmax_warp_backward", "input_dtype": "fp32", "output_dtype": "fp32", "accumulate_dtype": "fp32",
      "log2_elements": 10, "elements_per_row": 1024, "is_log_softmax": False, "is_masked": False,
      "algorithm": "one warp per row, row held in registers (dim <= 1024)"},
     "ATen softmax backward, softmax_warp_backward, fp32, rows of 1024"),
])
def test_aten_softmax_every_shown_field(name, op, dtype, details, summary):
    k = decode(name if name.startswith("void") else _recorded(name))
    assert (k.kind, k.library, k.op, k.dtype) == ("softmax", "ATen", op, dtype)
    assert k.details == details
    assert k.summary == summary


# names as profiler tables print them (cut with "...", non-type template arguments as "(int)2")
CUB_REDUCE = ("void at_cuda_detail::cub::DeviceReduceSingleTileKernel<at_cuda_detail::cub::DeviceReducePolicy<int, "
              "unsigned long long, cuda::std::__4::plus<void>>::Policy60...")
REMAINDER_BY_SCALAR = ("void at::native::vectorized_elementwise_kernel<(int)2, at::native::BUnaryFunctor<long, long, "
                       "long, at::native::remainder_kernel_cuda(at::...")


@pytest.mark.parametrize("name, kind, op, dtype, details, summary", [
    # torch.nonzero's count: CUB's single-tile device reduce in ATen's CUB namespace (at_cuda_detail);
    # no ReduceOp, no ATen reduction named, no element type before the cut
    (CUB_REDUCE, "reduce", "reduce", None, {"reduction": None}, "ATen reduce"),
    # x % scalar: Loops.cuh's BUnaryFunctor holds the second operand (b) as the CPU scalar;
    # vectorized_elementwise_kernel<(int)2, ...>: vector width 2; BUnaryFunctor<long, ...>: int64;
    # the op is the kernel function's own name (remainder_kernel_cuda), not in the op table
    (REMAINDER_BY_SCALAR, "elementwise", "remainder", "int64",
     {"launcher": "vectorized_elementwise_kernel", "vector_width": 2, "scalar_operand": "b"},
     "ATen elementwise remainder by a CPU scalar, int64"),
    # the recorded gather: no launcher of the elementwise family, no element type in <16, long>
    ("vectorized_gather_kernel<16, long>", "elementwise", "gather", None, {}, "ATen elementwise gather"),
    # triu_tril_kernel cut before its template arguments: neither triu nor tril can be told
    ("void at::native::triu_tril_kernel", "mask", "triu/tril", None, {}, "ATen triu/tril (builds the causal mask)"),
])
def test_aten_cut_and_scalar_names_every_shown_field(name, kind, op, dtype, details, summary):
    name = name if name.startswith("void") else _recorded(name)
    k = decode(name)
    assert (k.kind, k.library, k.op, k.dtype) == (kind, "ATen", op, dtype)
    assert k.details == details
    assert k.summary == summary


def test_cublas_dgemm_and_a_cudnn_conv_name_that_is_no_gemm():
    # nvprof's GPU activities list volta_dgemm_64x64_nn: fp64 on CUDA cores (DFMA), 64x64 tile, nn
    k = decode("volta_dgemm_64x64_nn")
    assert fields(k) == ("gemm", "cuBLAS", "gemm", "fp64", "CUDA cores (DFMA)", "volta", "64x64")
    assert k.details == {"operand_layout": "nn"}
    assert k.summary == "cuBLAS gemm (volta), fp64, 64x64 tile, nn, CUDA cores (DFMA)"
    # nvprof on a P100 lists maxwell_hgemm_128x64_tn: fp16 on CUDA cores (HFMA2), 128x64 tile, tn
    h = decode("maxwell_hgemm_128x64_tn")
    assert fields(h) == ("gemm", "cuBLAS", "gemm", "fp16", "CUDA cores (HFMA2)", "maxwell", "128x64")
    assert h.details == {"operand_layout": "tn"}
    assert h.summary == "cuBLAS gemm (maxwell), fp16, 128x64 tile, tn, CUDA cores (HFMA2)"
    # cuDNN's classic convolution kernel: an arch word first, but no gemm token: not a cuBLAS gemm
    c = decode("maxwell_scudnn_128x64_relu_interior_nn")
    assert (c.kind, c.library, c.op, c.summary) == ("unknown", "unknown", None, "unrecognised kernel name")


def test_cudnn_cut_before_its_type_and_tile_leaves_them_none():
    cut = decode("cudnn_generated_fort_native_sdpa_sm90_flash")
    assert fields(cut) == ("attention", "cuDNN", "attention", None, None, "sm90", None)


def test_xmma_bf16_whole_and_cut_before_its_tile():
    k = decode(XMMA_BF16)  # the unit named by the mma shape (tensor16x8x16): nothing inferred
    assert k.details == {"operation": "gemm", "stages": 3, "warp_layout": "2x2x1", "mma_shape": "16x8x16",
                         "other_tokens": ["kernel"], "type_tokens": ["bf16bf16", "bf16f32", "f32"],
                         "operand_layout": "tn", "layout_tokens": ["tn", "n"]}
    assert k.summary == "cuBLAS xmma gemm (sm80), bf16, 128x128x32 tile, 3 stages, warps 2x2x1, tn, tensor cores"
    cut = decode("sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n")  # cut before tilesize: no tile, the unit inferred
    assert fields(cut) == ("gemm", "cuBLAS", "gemm", "bf16", TENSOR_CORES, "sm80", None)
    assert cut.summary == "cuBLAS xmma gemm (sm80), bf16, tn, tensor cores"
    assert cut.details["math_inferred"] == "from the 16/8-bit input type"


def test_aten_softmax_reg_whole_and_cunn_cut_before_its_epilogue():
    # SoftMax.cu: cunn_SoftMaxForwardReg<scalar_t, accscalar_t, outscalar_t, Epilogue, index_t, reg_cnt>
    r = decode("void at::native::(anonymous namespace)::cunn_SoftMaxForwardReg<c10::BFloat16, float, "
               "c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue, long, 4>("
               "c10::BFloat16*, c10::BFloat16 const*, long)")
    assert r.details == {"function": "cunn_SoftMaxForwardReg", "input_dtype": "bf16", "accumulate_dtype": "fp32",
                         "output_dtype": "bf16", "epilogue": "SoftMaxForwardEpilogue", "index_t": "long", "reg_cnt": 4,
                         "algorithm": "one block per row, row held in registers"}
    assert r.summary == "ATen softmax, cunn_SoftMaxForwardReg, bf16"
    # cut before the epilogue: which softmax (log or not) is not told, so it reads softmax
    cut = decode("void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float")
    assert (cut.op, cut.dtype, cut.summary) == ("softmax", "bf16", "ATen softmax, cunn_SoftMaxForward, bf16")
    assert cut.details == {"function": "cunn_SoftMaxForward", "ILP": 8, "input_dtype": "bf16",
                           "accumulate_dtype": "fp32", "truncated": True, "algorithm": "one block per row"}


def test_decode_keeps_the_name_as_text(monkeypatch):
    assert decode(None).name == "" and decode(123).name == "123"
    import helpers.core.names as names
    monkeypatch.setattr(names, "_FAMILIES", (lambda text: {"kind": "gemm", "library": "L"},))
    assert decode("x").summary == "L gemm"  # no op: the library and the kind alone


def test_xmma_convolution_is_cudnns():
    # a TensorFlow trace's conv kernel: xmma's forward-propagation implicit gemm, suffixed _cudnn (cuDNN
    # launched it); tf32f32 the A and B types; tensor16x8x8 the mma shape; stage1, warpsize4x1x1
    k = decode("sm80_xmma_fprop_implicit_gemm_indexed_wo_smem_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x32x16_"
               "stage1_warpsize4x1x1_g1_tensor16x8x8_aligna4_alignc8_execute_kernel_cudnn")
    assert fields(k) == ("unknown", "cuDNN", "fprop", "tf32", TENSOR_CORES, "sm80", "128x32x16")
    assert k.details == {"operation": "fprop", "other_tokens": ["implicit", "gemm", "indexed", "wo", "smem", "nhwckrsc",
                                                                "nhwc", "g1", "execute", "kernel"],
                         "stages": 1, "warp_layout": "4x1x1", "mma_shape": "16x8x8", "align_a": 4, "align_c": 8,
                         "from": "cuDNN", "type_tokens": ["tf32f32", "tf32f32", "f32"]}
    assert k.summary == "cuDNN xmma fprop (sm80), tf32, 128x32x16 tile, 1 stages, warps 4x1x1, tensor cores"


def test_aten_cat_is_a_copy_with_no_element_type_named():
    # the recorded torch.cat: CatArrayBatchedCopy<OpaqueType<2u>, ...> copies opaque 2-byte elements,
    # so no element type is named
    k = decode(_recorded("CatArrayBatchedCopy"))
    assert (k.kind, k.library, k.op, k.dtype, k.details, k.summary) == ("copy", "ATen", "cat", None, {}, "ATen cat")


@pytest.mark.parametrize("name, fields_, details, summary", [
    # xformers' generate_kernels.py: fmha_cutlass<F|B>_<f32|f16|bf16>_<aligned|notaligned>_<QxK>_<rf|gmem>_sm<cc>;
    # gmem: the output accumulated in global memory; fp32 runs on CUDA cores (math None)
    ("fmha_cutlassF_f32_aligned_32x128_gmem_sm80", ("attention", "CUTLASS (xformers mem-efficient)",
                                                     "attention forward", "fp32", None, "sm80", "32x128"),
     {"algorithm": "memory-efficient attention forward (cutlassF)", "direction": "forward", "alignment": "aligned",
      "queries_per_block": 32, "keys_per_block": 128, "output_accumulator": "global memory (max_k > keys per block)"},
     "memory-efficient attention forward (cutlassF), fp32, 32x128 tiles, output in global memory, sm80"),
    # f16, not aligned, registers, Turing: 16-bit inputs on tensor cores
    ("fmha_cutlassF_f16_notaligned_64x64_rf_sm75", ("attention", "CUTLASS (xformers mem-efficient)",
                                                     "attention forward", "fp16", TENSOR_CORES, "sm75", "64x64"),
     {"algorithm": "memory-efficient attention forward (cutlassF)", "direction": "forward", "alignment": "notaligned",
      "queries_per_block": 64, "keys_per_block": 64,
      "output_accumulator": "register file (kSingleValueIteration: max_k <= keys per block)"},
     "memory-efficient attention forward (cutlassF), fp16, 64x64 tiles, output in registers, sm75"),
])
def test_cutlass_fmha_names_alone_every_shown_field(name, fields_, details, summary):
    assert_shown(name, fields_, details, summary)
