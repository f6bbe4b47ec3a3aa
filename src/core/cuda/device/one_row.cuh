// The one-row products' per-warp pieces (gemv_one_row.cu), shared with the kernels that fuse
// such a product with what follows it (decoder_self_step.cu), so that both compute every
// value with the same arithmetic, lane for lane: a warp holds its input row in registers,
// W 16-byte words per lane (word lane + 32·u), normalises it there when asked (or scales it
// by gamma for a folded norm, below), and sums each output's products over its words, then
// across the warp. Device helpers only.
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

// ---- The folded norm (gemv_one_row.cu's default for a fused layer norm) -----------------
// norm(x)·w_nᵀ + b_n = rstd·(Σ_k x_k·γ_k·w_nk − mean·Σ_k γ_k·w_nk) + (Σ_k β_k·w_nk + b_n), with
// the two sums over k that do not depend on x computed once per weight (norm_fold.cu:
// fold_scale[n] and fold_shift[n]). So the product starts on x·γ as soon as x arrives, and
// the statistics are summed from the same registers beside it: nothing waits for a
// reduction before the first product, where the unfolded norm chains two warp reductions
// and a pass over x in front of it. The variance is E[x²] − mean² from those fp32 sums: its
// error grows with mean² / variance (CudaOps.FoldedNormEqualsNormalisingFirst holds rows
// whose mean is 22 standard deviations from zero to the half types' tolerance).

// This lane's words of gamma (its 8 values of word lane + 32·u), fetched with the weights
// before the wait (gamma is a constant).
template <int W>
__device__ __forceinline__ void fetch_gamma_words(const float* __restrict__ gamma, int k, int lane,
                                                  float4 (&g)[2 * W]) {
  const int kw = k / 8;
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
#pragma unroll
  for (int u = 0; u < W; ++u) {
    const int idx = lane + u * 32;
    g[2 * u] = idx < kw ? __ldg(g4 + 2 * idx) : make_float4(0, 0, 0, 0);
    g[2 * u + 1] = idx < kw ? __ldg(g4 + 2 * idx + 1) : make_float4(0, 0, 0, 0);
  }
}

// x·γ in this lane's words, in fp32 (xg), and the lane's sums of x and x² (zeros past k).
template <class T, int W>
__device__ __forceinline__ void load_row_scaled(const T* x, int k, int lane, const float4 (&g)[2 * W],
                                                float (&xg)[8 * W], float& sum, float& sum_sq) {
  const int kw = k / 8;
  const uint4* xr = reinterpret_cast<const uint4*>(x);
  uint4 xv[W];
#pragma unroll
  for (int u = 0; u < W; ++u) {
    const int idx = lane + u * 32;
    xv[u] = idx < kw ? xr[idx] : make_uint4(0, 0, 0, 0);
  }
  // Two partial sums of each, for a shorter dependency chain.
  float s[2] = {0, 0}, q[2] = {0, 0};
#pragma unroll
  for (int u = 0; u < W; ++u) {
    float f[8];
    widen8<T>(xv[u], f);
    const float gv[8] = {g[2 * u].x, g[2 * u].y, g[2 * u].z, g[2 * u].w,
                         g[2 * u + 1].x, g[2 * u + 1].y, g[2 * u + 1].z, g[2 * u + 1].w};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      xg[8 * u + j] = f[j] * gv[j];
      s[j & 1] += f[j];
      q[j & 1] = fmaf(f[j], f[j], q[j & 1]);
    }
  }
  sum = s[0] + s[1];
  sum_sq = q[0] + q[1];
}

// A lane's share of w·(x·γ): words u with lane + 32·u below kw, in fp32, two partial sums.
template <class T, int W>
__device__ __forceinline__ float dot_words_scaled(const uint4 (&w)[W], const float (&xg)[8 * W], int lane, int kw) {
  float acc[2] = {0, 0};
#pragma unroll
  for (int u = 0; u < W; ++u)
    if (lane + u * 32 < kw) {
      float wf[8];
      widen8<T>(w[u], wf);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc[j & 1] = fmaf(wf[j], xg[8 * u + j], acc[j & 1]);
    }
  return acc[0] + acc[1];
}

// Three warp sums in one pass of shuffles (their latencies overlap).
__device__ __forceinline__ void warp_sum3(float& a, float& b, float& c) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    a += __shfl_xor_sync(0xffffffffu, a, o);
    b += __shfl_xor_sync(0xffffffffu, b, o);
    c += __shfl_xor_sync(0xffffffffu, c, o);
  }
}

// One output of the product before its epilogue: the warp's sum of w·x (every lane gets it).
template <class T, int W>
__device__ __forceinline__ float row_dot(const uint4 (&wv)[W], const uint4 (&xv)[W], int k, int lane) {
  return warp_sum(dot_words<T, W>(wv, xv, lane, k / 8));
}

}  // namespace hark::cuda::device
