// The decoder self-attention's arithmetic over a KV cache, for one query of one head and a
// block of kDecoderAttentionThreads threads; shared by decoder_attention.cu's cached
// kernel, its cross-attention kernels (dot, block_reduce), and decoder_self_step.cu's
// fused step, so every one of them computes the same numbers. Device helpers only.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/cuda/device/types.cuh"

namespace hark::cuda::device {

constexpr int kDecoderAttentionThreads = 128;

// q (HD fp32 values in shared memory) · k (HD values of T, 16-byte aligned).
template <int HD, class T>
__device__ __forceinline__ float dot(const float* q, const T* k) {
  float acc = 0.0f;
  if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int c = 0; c < HD / 8; ++c) {
      float kf[8];
      widen8<T>(reinterpret_cast<const uint4*>(k)[c], kf);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc = fmaf(q[c * 8 + j], kf[j], acc);
    }
  } else {
#pragma unroll
    for (int c = 0; c < HD / 4; ++c) {
      const float4 kf = reinterpret_cast<const float4*>(k)[c];
      acc = fmaf(q[c * 4], kf.x, acc);
      acc = fmaf(q[c * 4 + 1], kf.y, acc);
      acc = fmaf(q[c * 4 + 2], kf.z, acc);
      acc = fmaf(q[c * 4 + 3], kf.w, acc);
    }
  }
  return acc;
}

// Block-wide max or sum for kDecoderAttentionThreads threads; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  constexpr int kWarps = kDecoderAttentionThreads / 32;
  v = kMax ? warp_max(v) : warp_sum(v);
  if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = v;
  __syncthreads();
  float r = scratch[0];
#pragma unroll
  for (int w = 1; w < kWarps; ++w) r = kMax ? fmaxf(r, scratch[w]) : r + scratch[w];
  __syncthreads();
  return r;
}

template <int HD>
struct CachedAttentionScratch {
  float partial[kDecoderAttentionThreads / 32][HD];
  float red[kDecoderAttentionThreads / 32];
};

// out[0..HD) = softmax(q · keys) · values over n_keys keys, q already scaled by
// 1/sqrt(HD) (fp32, in shared memory); key_row(j, value) points at key j's (value: value
// j's) HD elements, 16-byte aligned. `scores` holds n_keys floats of shared memory.
template <int HD, class T, class KeyRow>
__device__ __forceinline__ void attend_cached(const float* q, int64_t n_keys, const KeyRow& key_row, float* scores,
                                              CachedAttentionScratch<HD>& s, T* out) {
  constexpr int kThreads = kDecoderAttentionThreads;
  const int tid = threadIdx.x;
  float m = -INFINITY;
  for (int64_t j = tid; j < n_keys; j += kThreads) {
    scores[j] = dot<HD, T>(q, key_row(j, false));
    m = fmaxf(m, scores[j]);
  }
  m = block_reduce<true>(m, s.red);
  float l = 0.0f;
  for (int64_t j = tid; j < n_keys; j += kThreads) {
    scores[j] = __expf(scores[j] - m);
    l += scores[j];
  }
  l = block_reduce<false>(l, s.red);  // its barriers also publish `scores`
  // Output: warp w sums keys w, w + 4, ...; each lane owns HD / 32 dimensions, so every
  // value row is one coalesced read per warp.
  constexpr int kDims = HD / 32;
  const int warp = tid >> 5, lane = tid & 31;
  float acc[kDims] = {};
#pragma unroll 4
  for (int64_t j = warp; j < n_keys; j += kThreads / 32) {
    const T* v = key_row(j, true) + lane * kDims;
#pragma unroll
    for (int e = 0; e < kDims; ++e) acc[e] = fmaf(scores[j], to_float(v[e]), acc[e]);
  }
#pragma unroll
  for (int e = 0; e < kDims; ++e) s.partial[warp][lane * kDims + e] = acc[e];
  __syncthreads();
  if (tid < HD) {
    float sum = 0.0f;
#pragma unroll
    for (int w = 0; w < kThreads / 32; ++w) sum += s.partial[w][tid];
    out[tid] = from_float<T>(sum / l);
  }
}

}  // namespace hark::cuda::device
