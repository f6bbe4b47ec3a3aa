// e4m3 (fp8) operands for cuBLASLt's fp8 products (--compute-type fp8): each row of an
// activation, and each output channel of a weight (a row of [n, k]), is scaled so that its
// largest magnitude becomes e4m3's largest finite value, then rounded to nearest with
// saturation. The product multiplies the scales back in (cuBLASLt's outer-vector scaling):
// y[i, j] = sx[i] · sw[j] · Σ qx[i, ·] · qw[j, ·]. Device helpers only.
#pragma once

#include <cuda_fp8.h>

#include <cstdint>

namespace hark::cuda::device {

inline constexpr float kE4m3Max = 448.0f;

// The factor that takes a row whose largest magnitude is `amax` onto e4m3's range, and the
// scale the product multiplies back in (an all-zero row: 1 and 1).
__device__ __forceinline__ float e4m3_inverse_scale(float amax) { return amax > 0.0f ? kE4m3Max / amax : 1.0f; }
__device__ __forceinline__ float e4m3_scale(float amax) { return amax > 0.0f ? amax / kE4m3Max : 1.0f; }

// Eight values times `inv`, as eight e4m3 bytes in order (the first in the lowest byte).
__device__ __forceinline__ uint2 to_e4m3x8(const float (&v)[8], float inv) {
  uint32_t word[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(v[4 * h] * inv, v[4 * h + 1] * inv), __NV_SATFINITE, __NV_E4M3);
    const uint32_t hi =
        __nv_cvt_float2_to_fp8x2(make_float2(v[4 * h + 2] * inv, v[4 * h + 3] * inv), __NV_SATFINITE, __NV_E4M3);
    word[h] = (lo & 0xFFFFu) | (hi << 16);
  }
  return make_uint2(word[0], word[1]);
}

}  // namespace hark::cuda::device
