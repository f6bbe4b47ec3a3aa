// Layer norm, one warp per row: the row is read once into registers with 16-byte loads,
// then mean and the variance of the centred values (two passes over the registers, as
// PyTorch computes them) in fp32 whatever the activation dtype, then one store. A first
// version read the row three times with 2-byte loads: 20 µs for one decoder row and
// 19 µs per encoder window (latency-bound), against ~2 µs now.
#include "core/cuda/device/e4m3.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kWarps = 2;  // small blocks: 1500 rows spread evenly over the SMs
constexpr int kMaxWidth = kLayerNormMaxRegisterWidth;  // widest row held in registers (Whisper's is 1280)

// kToE4m3: the normalised row is written as e4m3 with its scale (device/e4m3.cuh) to q and
// scale instead of to y, for an fp8 product: it is already in registers, so its largest
// magnitude costs one more warp reduction and no second read.
template <class T, bool kToE4m3 = false>
__global__ void __launch_bounds__(kWarps * 32) layer_norm_kernel(const T* __restrict__ x, const float* __restrict__ gamma,
                                                                 const float* __restrict__ beta, T* __restrict__ y,
                                                                 int64_t rows, int d, float eps,
                                                                 uint8_t* __restrict__ q, float* __restrict__ scale) {
  pdl_enter();
  constexpr int kVec = 16 / sizeof(T);                 // elements per 16-byte load
  constexpr int kSlots = kMaxWidth / (32 * kVec);      // loads per lane at the widest row
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarps) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const uint4* in = reinterpret_cast<const uint4*>(x + row * d);
  const int chunks = d / kVec;
  float v[kSlots][kVec];
  float sum = 0;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int c = lane + s * 32;
    if (c < chunks) {
      const uint4 raw = in[c];
      const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        v[s][j] = to_float(e[j]);
        sum += v[s][j];
      }
    }
  }
  const float mean = warp_sum(sum) / static_cast<float>(d);
  float var = 0;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    if (lane + s * 32 < chunks) {
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        const float c = v[s][j] - mean;
        var += c * c;
      }
    }
  }
  const float inv = rsqrtf(warp_sum(var) / static_cast<float>(d) + eps);
  const float4* g4 = reinterpret_cast<const float4*>(gamma);
  const float4* b4 = reinterpret_cast<const float4*>(beta);
  // Normalised in place, gamma and beta read four at a time; both outputs store from v.
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int c = lane + s * 32;
    if (c < chunks) {
#pragma unroll
      for (int j = 0; j < kVec; j += 4) {
        const float4 g = g4[(c * kVec + j) / 4], b = b4[(c * kVec + j) / 4];
        v[s][j] = (v[s][j] - mean) * inv * g.x + b.x;
        v[s][j + 1] = (v[s][j + 1] - mean) * inv * g.y + b.y;
        v[s][j + 2] = (v[s][j + 2] - mean) * inv * g.z + b.z;
        v[s][j + 3] = (v[s][j + 3] - mean) * inv * g.w + b.w;
      }
    }
  }
  if constexpr (kToE4m3) {
    static_assert(kVec == 8, "e4m3 rows are written eight values at a time");
    float amax = 0.0f;
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      if (lane + s * 32 < chunks)
#pragma unroll
        for (int j = 0; j < kVec; ++j) amax = fmaxf(amax, fabsf(v[s][j]));
    amax = warp_max(amax);
    const float to_range = e4m3_inverse_scale(amax);
    uint2* out = reinterpret_cast<uint2*>(q + row * d);
#pragma unroll
    for (int s = 0; s < kSlots; ++s)
      if (lane + s * 32 < chunks) out[lane + s * 32] = to_e4m3x8(v[s], to_range);
    if (lane == 0) scale[row] = e4m3_scale(amax);
  } else {
    uint4* out = reinterpret_cast<uint4*>(y + row * d);
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int c = lane + s * 32;
      if (c < chunks) {
        uint4 raw;
        T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
        for (int j = 0; j < kVec; ++j) e[j] = from_float<T>(v[s][j]);
        out[c] = raw;
      }
    }
  }
}

// Any width: the row read three times, element by element (rows wider than kMaxWidth or
// not a multiple of 16 bytes; no Whisper size).
template <class T>
__global__ void layer_norm_any_kernel(const T* x, const float* gamma, const float* beta, T* y, int64_t rows, int64_t d,
                                      float eps) {
  pdl_enter();
  const int64_t row = blockIdx.x * static_cast<int64_t>(kWarps) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const T* in = x + row * d;
  T* out = y + row * d;
  float sum = 0;
  for (int64_t i = lane; i < d; i += 32) sum += to_float(in[i]);
  const float mean = warp_sum(sum) / static_cast<float>(d);
  float var = 0;
  for (int64_t i = lane; i < d; i += 32) {
    const float c = to_float(in[i]) - mean;
    var += c * c;
  }
  const float inv = rsqrtf(warp_sum(var) / static_cast<float>(d) + eps);
  for (int64_t i = lane; i < d; i += 32) out[i] = from_float<T>((to_float(in[i]) - mean) * inv * gamma[i] + beta[i]);
}

}  // namespace

void layer_norm(DType dt, const void* x, const float* gamma, const float* beta, void* y, int64_t rows, int64_t d,
                float eps, cudaStream_t stream) {
  if (rows <= 0) return;
  dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    const bool vectorised = d <= kMaxWidth && (d * static_cast<int64_t>(sizeof(T))) % 16 == 0 && d % 4 == 0 &&
                            reinterpret_cast<uintptr_t>(gamma) % 16 == 0 && reinterpret_cast<uintptr_t>(beta) % 16 == 0 &&
                            reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    if (vectorised)
      launch_kernel(layer_norm_kernel<T>, blocks_for(rows, kWarps), kWarps * 32, 0, stream, 
          static_cast<const T*>(x), gamma, beta, static_cast<T*>(y), rows, static_cast<int>(d), eps,
          static_cast<uint8_t*>(nullptr), static_cast<float*>(nullptr));
    else
      launch_kernel(layer_norm_any_kernel<T>, blocks_for(rows, kWarps), kWarps * 32, 0, stream, 
          static_cast<const T*>(x), gamma, beta, static_cast<T*>(y), rows, d, eps);
  });
}

void layer_norm_e4m3(DType dt, const void* x, const float* gamma, const float* beta, void* q, float* scale, int64_t rows,
                     int64_t d, float eps, cudaStream_t stream) {
  if (rows <= 0) return;
  const bool aligned = reinterpret_cast<uintptr_t>(gamma) % 16 == 0 && reinterpret_cast<uintptr_t>(beta) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(q) % 8 == 0;
  if (d % 8 != 0 || d > kMaxWidth || !aligned)
    throw Error(ErrorCode::Internal, "[cuda] the e4m3 layer norm needs a width that is a multiple of 8, at most " +
                                         std::to_string(kMaxWidth) + ", and aligned rows (got " +
                                         std::to_string(d) + ")");
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    launch_kernel(layer_norm_kernel<T, true>, blocks_for(rows, kWarps), kWarps * 32, 0, stream, static_cast<const T*>(x),
                  gamma, beta, static_cast<T*>(nullptr), rows, static_cast<int>(d), eps, static_cast<uint8_t*>(q), scale);
  });
}

}  // namespace hark::cuda
