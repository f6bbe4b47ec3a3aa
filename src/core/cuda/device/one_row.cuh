// The one-row products' per-warp pieces (gemv_one_row.cu), shared with the kernels that fuse
// such a product with what follows it (decoder_self_step.cu), so that both compute every
// value with the same arithmetic, lane for lane: a warp holds its input row in registers,
// W 16-byte words per lane (word lane + 32·u), normalises it there when asked, and sums each
// output's products over its words, then across the warp. Device helpers only.
#pragma once

#include <cstdint>

#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/types.cuh"

namespace hark::cuda::device {

// Weight row `row` of w[·, k] (16-byte words lane + 32·u), or zeros where !valid;
// kEvictFirst: loaded with L2's evict-first policy (on unless HARK_CUDA_L2_HINTS=0, mma.cuh).
template <class T, int W, bool kEvictFirst = false>
__device__ __forceinline__ void fetch_row_words(const T* __restrict__ w, int k, int row, bool valid, int lane,
                                                uint4 (&out)[W]) {
  const int kw = k / 8;
  const uint4* wr = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(row) * k);
  [[maybe_unused]] uint64_t policy = 0;
  if constexpr (kEvictFirst) policy = l2_policy_evict_first();
#pragma unroll
  for (int u = 0; u < W; ++u) {
    const int idx = lane + u * 32;
    if constexpr (kEvictFirst)
      out[u] = valid && idx < kw ? load_policy(wr + idx, policy) : make_uint4(0, 0, 0, 0);
    else
      out[u] = valid && idx < kw ? __ldg(wr + idx) : make_uint4(0, 0, 0, 0);
  }
}

// The input row x[k] in this lane's words; with gamma, layer-normalised (layer_norm.cu's
// arithmetic: same words per lane, same sums, rounded to T).
template <class T, int W>
__device__ __forceinline__ void load_row(const T* x, int k, int lane, const float* __restrict__ gamma,
                                         const float* __restrict__ beta, float eps, uint4 (&xv)[W]) {
  const int kw = k / 8;
  const uint4* xr = reinterpret_cast<const uint4*>(x);
#pragma unroll
  for (int u = 0; u < W; ++u) {
    const int idx = lane + u * 32;
    xv[u] = idx < kw ? xr[idx] : make_uint4(0, 0, 0, 0);
  }
  if (!gamma) return;
  float sum = 0;
#pragma unroll
  for (int u = 0; u < W; ++u)
    if (lane + u * 32 < kw) {
      float f[8];
      widen8<T>(xv[u], f);
#pragma unroll
      for (int j = 0; j < 8; ++j) sum += f[j];
    }
  const float mean = warp_sum(sum) / static_cast<float>(k);
  float var = 0;
#pragma unroll
  for (int u = 0; u < W; ++u)
    if (lane + u * 32 < kw) {
      float f[8];
      widen8<T>(xv[u], f);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float c = f[j] - mean;
        var += c * c;
      }
    }
  const float inv = rsqrtf(warp_sum(var) / static_cast<float>(k) + eps);
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* b4 = reinterpret_cast<const float4*>(beta);
#pragma unroll
  for (int u = 0; u < W; ++u) {
    const int idx = lane + u * 32;
    if (idx < kw) {
      float f[8];
      widen8<T>(xv[u], f);
      T* e = reinterpret_cast<T*>(&xv[u]);
#pragma unroll
      for (int j = 0; j < 8; j += 4) {
        const float4 g = g4[(idx * 8 + j) / 4], be = b4[(idx * 8 + j) / 4];
        e[j] = from_float<T>((f[j] - mean) * inv * g.x + be.x);
        e[j + 1] = from_float<T>((f[j + 1] - mean) * inv * g.y + be.y);
        e[j + 2] = from_float<T>((f[j + 2] - mean) * inv * g.z + be.z);
        e[j + 3] = from_float<T>((f[j + 3] - mean) * inv * g.w + be.w);
      }
    }
  }
}

// One output of the product before its epilogue: the warp's sum of w·x (every lane gets it).
template <class T, int W>
__device__ __forceinline__ float row_dot(const uint4 (&wv)[W], const uint4 (&xv)[W], int k, int lane) {
  return warp_sum(dot_words<T, W>(wv, xv, lane, k / 8));
}

}  // namespace hark::cuda::device
