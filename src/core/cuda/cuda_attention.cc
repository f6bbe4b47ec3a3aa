// CudaBackend's attention family. fp32 (the reference path) materialises scores with
// cuBLAS as the reference does; f16/bf16 run the fused kernels (flash_attention.cu,
// decoder_attention.cu). The decoder kernels serve every dtype and head dim 64.
#include <cmath>

#include "core/cuda/cuda_backend.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/kernels.cuh"

namespace hark {

using cuda::check;

namespace {

// The head dim of a fused kernel; only the dims the kernels are built for.
int head_dim(int64_t d, int n_heads, const char* op) {
  const int64_t hd = d / n_heads;
  if (d % n_heads != 0 || !cuda::attention_head_dim_supported(hd))
    throw Error(ErrorCode::Unavailable, std::string("[cuda] ") + op + " supports head dims 32 and 64 (width " +
                                            std::to_string(d) + ", " + std::to_string(n_heads) +
                                            " heads); use --compute-type f32");
  return static_cast<int>(hd);
}

void require_device(const Tensor& t, const char* what) {
  if (t.device() != Device::Cuda) throw Error(ErrorCode::Internal, std::string("[cuda] ") + what + " must be on the GPU");
}

// Scores, softmax and values through cuBLAS for one fp32 sequence whose rows are `ld`
// apart (q, k, v may be column blocks of one packed matrix).
void reference_attention(cublasHandle_t blas, cudaStream_t stream, Tensor scores, const float* q, const float* k,
                         const float* v, int64_t ld, int64_t ld_out, float* out, int64_t tq, int64_t tk, int n_heads,
                         int64_t hd, bool causal, int64_t offset) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd)), one = 1.0f, zero = 0.0f;
  // Per head: S = scale · Q_h K_hᵀ (heads are column blocks of width hd).
  check(cublasSgemmStridedBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(tk), static_cast<int>(tq),
                                  static_cast<int>(hd), &scale, k, static_cast<int>(ld), hd, q, static_cast<int>(ld), hd,
                                  &zero, scores.data<float>(), static_cast<int>(tk), tq * tk, n_heads),
        "sgemm (attention scores)");
  cuda::softmax(scores.data<float>(), n_heads, tq, tk, causal, offset, stream);
  cuda::check_launch("softmax");
  check(cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(hd), static_cast<int>(tq),
                                  static_cast<int>(tk), &one, v, static_cast<int>(ld), hd, scores.data<float>(),
                                  static_cast<int>(tk), tq * tk, &zero, out, static_cast<int>(ld_out), hd, n_heads),
        "sgemm (attention values)");
}

}  // namespace

void CudaBackend::attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, bool causal,
                            int64_t causal_offset, Tensor& out, Tensor* weights) {
  cuda::use_device(device_index_);
  const int64_t tq = q.dim(0), tk = k.dim(0), d = q.dim(1);
  // The plain op computes in fp32 whatever the activation dtype (it is the reference).
  auto f32 = [&](const Tensor& t) {
    if (t.dtype() == DType::F32 && t.device() == Device::Cuda) return t;
    Tensor c = alloc(t.shape(), DType::F32);
    copy(t, c);
    return c;
  };
  Tensor q32 = f32(q), k32 = f32(k), v32 = f32(v);
  Tensor o32 = act_ == DType::F32 ? out : alloc(out.shape(), DType::F32);
  Tensor scores = alloc({n_heads, tq, tk}, DType::F32);
  reference_attention(blas_, stream_, scores, q32.data<float>(), k32.data<float>(), v32.data<float>(), d, d,
                      o32.data<float>(), tq, tk, n_heads, d / n_heads, causal, causal_offset);
  if (act_ != DType::F32) copy(o32, out);
  if (weights) copy(scores, *weights);
}

void CudaBackend::self_attention(const Tensor& qkv, int batch, int n_heads, Tensor& out) {
  cuda::use_device(device_index_);
  const int64_t d = out.dim(1), t = qkv.dim(0) / batch;
  if (act_ != DType::F32) {
    const int hd = head_dim(d, n_heads, "flash attention");
    cuda::flash_attention(act_, qkv.raw(), out.raw(), batch, t, n_heads, hd, stream_);
    cuda::check_launch("flash_attention");
    return;
  }
  Tensor scores = alloc({n_heads, t, t}, DType::F32);
  for (int b = 0; b < batch; ++b) {
    const float* base = qkv.data<float>() + b * t * 3 * d;
    reference_attention(blas_, stream_, scores, base, base + d, base + 2 * d, 3 * d, d, out.data<float>() + b * t * d, t,
                        t, n_heads, d / n_heads, false, 0);
  }
}

void CudaBackend::cached_attention(const Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths,
                                   int n_new, int n_heads, Tensor& out) {
  cuda::use_device(device_index_);
  const int64_t d = out.dim(1), rows = qkv.dim(0) / n_new;
  const int hd = head_dim(d, n_heads, "decoder attention");
  require_device(lengths, "the cached lengths");
  cuda::cached_attention(act_, qkv.raw(), cache_k.raw(), cache_v.raw(), lengths.data<int32_t>(), static_cast<int>(rows),
                         n_new, cache_k.dim(0) / rows, n_heads, hd, out.raw(), stream_);
  cuda::check_launch("cached_attention");
}

void CudaBackend::norm_cached_attention(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                        std::span<const Tensor* const> ws, std::span<const Tensor* const> biases,
                                        Tensor& qkv, Tensor& cache_k, Tensor& cache_v, const Tensor& lengths,
                                        int n_new, int n_heads, Tensor& out) {
  cuda::use_device(device_index_);
  const int64_t k = x.dim(-1), m = x.numel() / k, d = out.dim(1);
  const int hd = static_cast<int>(d / n_heads);
  // Where the two-launch path would run the one-row product with the norm fused
  // (fuse_norm) and then the cached kernel: the fused step computes the same numbers as
  // those two with the norm unfolded (HARK_CUDA_NORM_FOLD=0; it normalises x first).
  const bool one_row = m == 1 && n_new == 1 && lengths.numel() == 1 && d == k && qkv.dim(-1) == 3 * d;
  if (fused_self_step_ && act_ != DType::F32 && one_row && cuda::gemv_one_row_applies(1, static_cast<int>(k)) &&
      !lt_for_few_rows_ && cuda::self_attention_step_applies(static_cast<int>(k), n_heads, hd)) {
    const Packed& p = packed_weights(ws, biases);
    require_device(lengths, "the cached lengths");
    if (!self_step_counters_.defined()) {
      const PauseArena pause(arena_);
      self_step_counters_ = alloc({cuda::kSelfStepCounters}, DType::I32);
      check(cudaMemsetAsync(self_step_counters_.raw(), 0, self_step_counters_.nbytes(), stream_), "zeroing counters");
    }
    cuda::self_attention_step(act_, x.raw(), static_cast<int>(k), resident(p.weight, act_),
                              p.bias.defined() ? resident(p.bias, act_) : nullptr,
                              static_cast<const float*>(resident(gamma, DType::F32)),
                              static_cast<const float*>(resident(beta, DType::F32)), eps, qkv.raw(), cache_k.raw(),
                              cache_v.raw(), lengths.data<int32_t>(), cache_k.dim(0), n_heads, hd,
                              self_step_counters_.data<int32_t>(), out.raw(), stream_);
    cuda::check_launch("self_attention_step");
    return;
  }
  Backend::norm_cached_attention(x, gamma, beta, eps, ws, biases, qkv, cache_k, cache_v, lengths, n_new, n_heads, out);
}

int* CudaBackend::cross_counters() {
  if (!cross_counters_.defined()) {
    const PauseArena pause(arena_);
    cross_counters_ = alloc({kCrossCounters}, DType::I32);
    check(cudaMemsetAsync(cross_counters_.raw(), 0, cross_counters_.nbytes(), stream_), "zeroing counters");
  }
  return cross_counters_.data<int32_t>();
}

void CudaBackend::cross_attention(const Tensor& q, const PackedKV& kv, const Tensor& row_seq,
                                  std::span<const int32_t> row_seq_host, int n_new, int n_heads, Tensor& out,
                                  Tensor* weights) {
  cuda::use_device(device_index_);
  (void)row_seq_host;  // the kernels read row_seq on the device, so a recorded step stays valid
  const int64_t d = q.dim(1), rows = q.dim(0) / n_new, frames = kv.rows_per_seq, ld = kv.kv->dim(1);
  const int hd = head_dim(d, n_heads, "cross-attention");
  require_device(row_seq, "the row windows");
  const int windows = static_cast<int>(kv.kv->dim(0) / frames);
  Tensor partials =
      alloc({cuda::cross_attention_scratch(static_cast<int>(rows), n_new, n_heads, hd, frames)}, DType::F32);
  // The counters that let the last chunk combine (self-resetting, so zeroed once here).
  const int64_t needed = rows * n_new * n_heads;
  int* counters = needed <= kCrossCounters ? cross_counters() : nullptr;
  cuda::cross_attention(act_, q.raw(), kv.kv->raw(), ld, kv.k_col, kv.v_col, frames, windows, row_seq.data<int32_t>(),
                        static_cast<int>(rows), n_new, n_heads, hd, partials.data<float>(), out.raw(), stream_,
                        counters, static_cast<cuda::CrossKernel>(cross_kernel_), cross_tiles_, cross_depth_);
  cuda::check_launch("cross_attention");
  if (weights) {
    Tensor w = weights->device() == Device::Cuda ? *weights : alloc(weights->shape(), DType::F32);
    cuda::cross_attention_weights(act_, q.raw(), kv.kv->raw(), ld, kv.k_col, frames, row_seq.data<int32_t>(),
                                  static_cast<int>(rows), n_new, n_heads, hd, w.data<float>(), stream_);
    cuda::check_launch("cross_attention_weights");
    if (weights->device() != Device::Cuda) copy(w, *weights);
  }
}

}  // namespace hark
