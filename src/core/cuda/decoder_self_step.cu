// The greedy decoder step's self-attention block in one launch: the layer norm, the packed
// Q/K/V product of the one row, the new K/V appended to the cache, and attention over the
// cache — where the step otherwise runs gemv_one_row.cu's product and then decoder_attention.cu's
// cached kernel, two launches per layer and the product's output waiting in memory between.
//
// Blocks (head, part): part p of head h computes Q, K and V rows 4p .. 4p + 3 of the head
// (12 outputs; each warp one Q, one K and one V row, their weights requested before waiting
// for the kernel in front), with the one-row kernel's per-warp arithmetic (device/one_row.cuh);
// it writes them to the packed qkv buffer, K and V also to the cache. The last part of a head
// to finish (a counter per head, reset by it) attends over the head's keys with the cached
// kernel's arithmetic (device/cached_attention.cuh). So the outputs equal the two-launch
// path's bit for bit (CudaOps.FusedSelfAttentionStepEqualsTwoLaunches) with the norm
// unfolded (HARK_CUDA_NORM_FOLD=0): this kernel normalises x first, where the one-row
// product folds the norm by default since 2026-12-04.
//
// Status (2026-12-01): written in a session without a GPU, opt-in (HARK_CUDA_FUSED_SELF=1)
// until it has passed the GPU tests and been timed. Expected: the product's ~9.5 µs and the
// attention's ~5.7 µs per turbo layer (Nsight Compute, 2026-12-01) become one launch of
// about the attention's length — not measured.
#include <cuda_runtime.h>

#include <cmath>

#include "core/cuda/device/cached_attention.cuh"
#include "core/cuda/device/one_row.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = kDecoderAttentionThreads;  // 4 warps: one Q, K and V row each
constexpr int kRowsPerPart = 4;                      // of each of Q, K and V

template <int HD, int W, class T>
__global__ void __launch_bounds__(kThreads) self_step_kernel(const T* __restrict__ x, int k, const T* __restrict__ w,
                                                             const T* __restrict__ bias, const float* __restrict__ gamma,
                                                             const float* __restrict__ beta, float eps, T* qkv,
                                                             T* cache_k, T* cache_v, const int32_t* __restrict__ lengths,
                                                             int* counters, T* __restrict__ out) {
  extern __shared__ float scores[];
  __shared__ float q[HD];
  __shared__ __align__(16) T k_new[HD];
  __shared__ __align__(16) T v_new[HD];
  __shared__ CachedAttentionScratch<HD> scratch;
  __shared__ bool last;
  constexpr int kParts = HD / kRowsPerPart;
  const int head = blockIdx.x, part = blockIdx.y;
  const int64_t d = k;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  // Warp w's rows: Q, K and V row 4·part + w of the head, in the packed [3d, d] weight.
  const int in_head = part * kRowsPerPart + warp;
  int rows[3];
#pragma unroll
  for (int which = 0; which < 3; ++which) rows[which] = which * static_cast<int>(d) + head * HD + in_head;
  pdl_launch_next();
  uint4 wv[3][W];
  float b[3];
#pragma unroll
  for (int which = 0; which < 3; ++which) {
    fetch_row_words<T, W>(w, k, rows[which], true, lane, wv[which]);
    b[which] = bias ? to_float(bias[rows[which]]) : 0.0f;
  }
  pdl_wait();
  const int64_t past = lengths[0];
  uint4 xv[W];
  load_row<T, W>(x, k, lane, gamma, beta, eps, xv);
#pragma unroll
  for (int which = 0; which < 3; ++which) {
    const float acc = row_dot<T, W>(wv[which], xv, k, lane);
    if (lane == 0) {
      const T v = from_float<T>(acc + b[which]);
      qkv[rows[which]] = v;
      if (which == 1) cache_k[past * d + head * HD + in_head] = v;
      if (which == 2) cache_v[past * d + head * HD + in_head] = v;
    }
  }
  // The head's last part to finish attends; the others are done.
  __threadfence();
  __syncthreads();
  if (tid == 0) {
    last = atomicAdd(counters + head, 1) == kParts - 1;
    if (last) counters[head] = 0;  // for the next launch
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  // The other parts' outputs, through L2 (never this SM's L1).
  if (tid < HD) {
    q[tid] = to_float(__ldcg(qkv + head * HD + tid)) * rsqrtf(static_cast<float>(HD));
    k_new[tid] = __ldcg(qkv + d + head * HD + tid);
    v_new[tid] = __ldcg(qkv + 2 * d + head * HD + tid);
  }
  __syncthreads();
  auto key_row = [&](int64_t j, bool value) -> const T* {
    if (j < past) return (value ? cache_v : cache_k) + j * d + head * HD;
    return value ? v_new : k_new;
  };
  attend_cached<HD, T>(q, past + 1, key_row, scores, scratch, out + head * HD);
}

}  // namespace

bool self_attention_step_applies(int k, int n_heads, int head_dim) {
  return k % 8 == 0 && k <= 2048 && (head_dim == 64 || head_dim == 32) && n_heads * head_dim == k &&
         n_heads <= kSelfStepCounters;
}

void self_attention_step(DType dt, const void* x, int k, const void* w, const void* bias, const float* gamma,
                         const float* beta, float eps, void* qkv, void* cache_k, void* cache_v, const int32_t* lengths,
                         int64_t n_ctx, int n_heads, int head_dim, int* counters, void* out, cudaStream_t stream) {
  const int per_lane = (k / 8 + 31) / 32;
  const size_t smem = static_cast<size_t>(n_ctx) * sizeof(float);
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    auto go = [&](auto hd, auto words) {
      constexpr int HD = decltype(hd)::value, W = decltype(words)::value;
      dim3 grid(static_cast<unsigned>(n_heads), static_cast<unsigned>(HD / kRowsPerPart));
      launch_kernel(self_step_kernel<HD, W, T>, grid, kThreads, smem, stream, static_cast<const T*>(x), k,
                    static_cast<const T*>(w), static_cast<const T*>(bias), gamma, beta, eps, static_cast<T*>(qkv),
                    static_cast<T*>(cache_k), static_cast<T*>(cache_v), lengths, counters, static_cast<T*>(out));
    };
    auto with_words = [&](auto hd) {
      if (per_lane <= 2) return go(hd, std::integral_constant<int, 2>{});
      if (per_lane <= 4) return go(hd, std::integral_constant<int, 4>{});
      if (per_lane <= 5) return go(hd, std::integral_constant<int, 5>{});
      return go(hd, std::integral_constant<int, 8>{});
    };
    if (head_dim == 64)
      with_words(std::integral_constant<int, 64>{});
    else
      with_words(std::integral_constant<int, 32>{});
  });
}

}  // namespace hark::cuda
