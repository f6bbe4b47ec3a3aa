// Element types of activations on the device and their conversions; dispatch from a
// run-time DType to a kernel template. Device helpers only: includes nothing of hark's.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace hark::cuda::device {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Eight 16-bit values (one 16-byte load) widened to fp32.
template <class T>
__device__ __forceinline__ void widen8(const uint4& raw, float (&out)[8]) {
  const T* h = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < 8; ++i) out[i] = to_float(h[i]);
}

// A lane's share of a dot product held in registers: words u whose index first + 32·u is
// below limit, eight 16-bit products each, summed in order in fp32 (the one-row kernels).
template <class T, int W>
__device__ __forceinline__ float dot_words(const uint4 (&w)[W], const uint4 (&x)[W], int first, int limit) {
  float acc = 0;
#pragma unroll
  for (int u = 0; u < W; ++u)
    if (first + u * 32 < limit) {
      float wf[8], xf[8];
      widen8<T>(w[u], wf);
      widen8<T>(x[u], xf);
#pragma unroll
      for (int j = 0; j < 8; ++j) acc = fmaf(wf[j], xf[j], acc);
    }
  return acc;
}

__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

}  // namespace hark::cuda::device
