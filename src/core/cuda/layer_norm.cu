// Layer norm, one warp per row: mean, then the variance of the centred values (two
// passes, as PyTorch computes it), in fp32 whatever the activation dtype.
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kWarps = 8;

template <class T>
__global__ void layer_norm_kernel(const T* x, const float* gamma, const float* beta, T* y, int64_t rows, int64_t d,
                                  float eps) {
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
    layer_norm_kernel<<<blocks_for(rows, kWarps), kWarps * 32, 0, stream>>>(static_cast<const T*>(x), gamma, beta,
                                                                             static_cast<T*>(y), rows, d, eps);
  });
}

}  // namespace hark::cuda
