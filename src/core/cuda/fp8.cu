// Rows of a 16-bit matrix to e4m3 with one fp32 scale per row (device/e4m3.cuh): the
// activations that enter an fp8 product without a layer norm before them (the attention's
// output, the MLP's hidden layer, the convolution's columns), and the weights, once, when
// they are first used. One warp per row, held in registers between the two passes (its
// largest magnitude, then the conversion), 16-byte loads and 8-byte stores.
#include "core/cuda/device/e4m3.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kWarps = 2;

template <class T, int kSlots>
__global__ void __launch_bounds__(kWarps * 32) quantize_rows_kernel(const T* __restrict__ x, int64_t rows, int d,
                                                                    uint8_t* __restrict__ q, float* __restrict__ scale) {
  pdl_enter();
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarps) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const uint4* in = reinterpret_cast<const uint4*>(x + row * d);
  const int chunks = d / 8;
  uint4 raw[kSlots];
  float amax = 0.0f;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int c = lane + s * 32;
    if (c < chunks) {
      raw[s] = in[c];
      float f[8];
      widen8<T>(raw[s], f);
#pragma unroll
      for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(f[j]));
    }
  }
  amax = warp_max(amax);
  const float inv = e4m3_inverse_scale(amax);
  uint2* out = reinterpret_cast<uint2*>(q + row * d);
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int c = lane + s * 32;
    if (c < chunks) {
      float f[8];
      widen8<T>(raw[s], f);
      out[c] = to_e4m3x8(f, inv);
    }
  }
  if (lane == 0) scale[row] = e4m3_scale(amax);
}

}  // namespace

void quantize_rows_e4m3(DType dt, const void* x, int64_t rows, int64_t d, void* q, float* scale, cudaStream_t stream) {
  if (rows <= 0) return;
  if (d % 8 != 0 || d > kE4m3MaxWidth || reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(q) % 8 != 0)
    throw Error(ErrorCode::Internal, "[cuda] e4m3 rows need a width that is a multiple of 8, at most " +
                                         std::to_string(kE4m3MaxWidth) + ", and aligned rows (got " + std::to_string(d) + ")");
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    auto* out = static_cast<uint8_t*>(q);
    constexpr int kNarrowSlots = 8;  // 16-byte loads per lane: rows up to 8 · 32 lanes · 8 values = 2048
    if (d <= kNarrowSlots * 32 * 8)
      launch_kernel(quantize_rows_kernel<T, kNarrowSlots>, blocks_for(rows, kWarps), kWarps * 32, 0, stream, static_cast<const T*>(x),
                    rows, static_cast<int>(d), out, scale);
    else  // up to kE4m3MaxWidth (8192)
      launch_kernel(quantize_rows_kernel<T, kE4m3MaxWidth / (32 * 8)>, blocks_for(rows, kWarps), kWarps * 32, 0, stream,
                    static_cast<const T*>(x), rows, static_cast<int>(d), out, scale);
  });
}

}  // namespace hark::cuda
