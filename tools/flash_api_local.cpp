// Forward-only binding of FlashAttention-2 from the flash-attn 2.8.3 sdist, for the one
// configuration this build compiles: bf16, head_dim 64, causal, no dropout / ALiBi / softcap /
// local window, no split-KV. Fills Flash_fwd_params as upstream's mha_fwd (flash_api.cpp) does
// for that case and calls run_mha_fwd_<cutlass::bfloat16_t, 64, true>. Written for
// "Attention, Profiled" (tools/build_local_flash_attn.py); NOT the Hugging Face Hub's build.
#include <cmath>
#include <vector>

#include <torch/library.h>
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <cutlass/numeric_types.h>

#include "namespace_config.h"
#include "flash.h"

namespace {

constexpr const char* kBuild =
    "this local FlashAttention-2 build (flash-attn 2.8.3 sdist: head_dim 64, bf16, causal, forward only)";

int round_multiple(int x, int m) { return (x + m - 1) / m * m; }

std::vector<at::Tensor> mha_fwd(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                const std::optional<at::Tensor>& out_,
                                const std::optional<at::Tensor>& alibi_slopes_,
                                double p_dropout, double softmax_scale, bool is_causal,
                                int64_t window_size_left, int64_t window_size_right, double softcap,
                                bool return_softmax, std::optional<at::Generator> gen_) {
  at::cuda::CUDAGuard device_guard{q.device()};
  TORCH_CHECK(q.is_cuda() && k.is_cuda() && v.is_cuda(), "q, k and v must be CUDA tensors");
  TORCH_CHECK(q.scalar_type() == at::kBFloat16 && k.scalar_type() == at::kBFloat16 &&
              v.scalar_type() == at::kBFloat16, kBuild, " runs bfloat16 only");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "q, k, v must be [batch, seq, heads, head_dim]");
  TORCH_CHECK(q.stride(-1) == 1 && k.stride(-1) == 1 && v.stride(-1) == 1,
              "q, k, v must have a contiguous last dimension");
  const int batch = q.size(0), seqlen_q = q.size(1), heads = q.size(2), head_dim = q.size(3);
  const int seqlen_k = k.size(1), heads_k = k.size(2);
  TORCH_CHECK(head_dim == 64, kBuild, " has no kernel for head_dim ", head_dim);
  TORCH_CHECK(k.size(0) == batch && k.size(3) == head_dim && v.sizes() == k.sizes(),
              "k and v must be [batch, seq_k, heads_k, head_dim] like q");
  TORCH_CHECK(heads % heads_k == 0, "the heads of q must be a multiple of the heads of k and v");
  TORCH_CHECK(p_dropout == 0.0, kBuild, " has no dropout");
  TORCH_CHECK(!alibi_slopes_.has_value(), kBuild, " has no ALiBi");
  TORCH_CHECK(softcap <= 0.0, kBuild, " has no softcap");
  TORCH_CHECK(!return_softmax, kBuild, " does not return the softmax");
  TORCH_CHECK(!out_.has_value(), kBuild, " allocates its own output");
  if (window_size_left >= seqlen_k) { window_size_left = -1; }
  if (window_size_right >= seqlen_k) { window_size_right = -1; }
  TORCH_CHECK(is_causal && seqlen_q > 1, kBuild, " has only the causal kernel (seqlen_q > 1)");
  TORCH_CHECK(window_size_left < 0, kBuild, " has no local (sliding-window) attention");
  window_size_right = 0;

  // upstream's mha_fwd would take the split-KV kernels, which this build lacks, only when the
  // grid is too small to fill the GPU: num_splits_heuristic returns 1 above 80% of 2 x SMs
  int num_sm = 0;
  C10_CUDA_CHECK(cudaDeviceGetAttribute(&num_sm, cudaDevAttrMultiProcessorCount, q.get_device()));
  const int num_m_blocks = (seqlen_q + 64 - 1) / 64;
  TORCH_CHECK(batch * heads * num_m_blocks >= 0.8f * num_sm * 2, kBuild,
              " has no split-KV kernel, which upstream would consider for a grid this small");

  at::Tensor out = at::empty_like(q);
  auto opts = q.options();
  at::Tensor softmax_lse = at::empty({batch, heads, seqlen_q}, opts.dtype(at::kFloat));
  at::Tensor p = at::empty({0}, opts);
  at::Tensor rng_state = at::empty({2}, opts.dtype(at::kLong));

  FLASH_NAMESPACE::Flash_fwd_params params = {};
  params.is_bf16 = true;
  params.q_ptr = q.data_ptr();
  params.k_ptr = k.data_ptr();
  params.v_ptr = v.data_ptr();
  params.q_row_stride = q.stride(-3);
  params.k_row_stride = k.stride(-3);
  params.v_row_stride = v.stride(-3);
  params.q_head_stride = q.stride(-2);
  params.k_head_stride = k.stride(-2);
  params.v_head_stride = v.stride(-2);
  params.o_ptr = out.data_ptr();
  params.o_row_stride = out.stride(-3);
  params.o_head_stride = out.stride(-2);
  params.q_batch_stride = q.stride(0);
  params.k_batch_stride = k.stride(0);
  params.v_batch_stride = v.stride(0);
  params.o_batch_stride = out.stride(0);
  params.cu_seqlens_q = nullptr;
  params.cu_seqlens_k = nullptr;
  params.seqused_k = nullptr;
  params.p_ptr = nullptr;
  params.softmax_lse_ptr = softmax_lse.data_ptr();
  params.b = batch;
  params.h = heads;
  params.h_k = heads_k;
  params.h_h_k_ratio = heads / heads_k;
  params.seqlen_q = seqlen_q;
  params.seqlen_k = seqlen_k;
  params.seqlen_q_rounded = round_multiple(seqlen_q, 128);
  params.seqlen_k_rounded = round_multiple(seqlen_k, 128);
  params.d = head_dim;
  params.d_rounded = round_multiple(head_dim, 32);
  params.softcap = 0.0f;
  params.scale_softmax = static_cast<float>(softmax_scale);
  params.scale_softmax_log2 = static_cast<float>(softmax_scale * M_LOG2E);
  params.p_dropout = 1.f;  // the probability of keeping, as upstream stores it
  params.p_dropout_in_uint8_t = uint8_t(std::floor(params.p_dropout * 255.0));
  params.rp_dropout = 1.f / params.p_dropout;
  params.scale_softmax_rp_dropout = params.rp_dropout * params.scale_softmax;
  params.is_causal = true;
  params.window_size_left = seqlen_k;  // causal: left unbounded, right 0 (set_params_fprop)
  params.window_size_right = 0;
  params.is_seqlens_k_cumulative = true;
  params.num_splits = 1;
  params.alibi_slopes_ptr = nullptr;
  params.rng_state = reinterpret_cast<uint64_t*>(rng_state.data_ptr());
  params.unpadded_lse = false;
  params.seqlenq_ngroups_swapped = false;

  auto stream = c10::cuda::getCurrentCUDAStream().stream();
  FLASH_NAMESPACE::run_mha_fwd_<cutlass::bfloat16_t, 64, true>(params, stream);
  return {out, softmax_lse, p, rng_state};
}

}  // namespace

TORCH_LIBRARY(@NS@, m) {
  m.def("fwd(Tensor q, Tensor k, Tensor v, Tensor? out_, Tensor? alibi_slopes_, float p_dropout, "
        "float softmax_scale, bool is_causal, int window_size_left, int window_size_right, "
        "float softcap, bool return_softmax, Generator? gen_) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(@NS@, CUDA, m) {
  m.impl("fwd", &mha_fwd);
}
