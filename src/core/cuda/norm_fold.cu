// The constants of a layer norm folded into a one-row product (GemvNorm::fold_scale and
// fold_shift; the arithmetic is in device/one_row.cuh, "The folded norm"): made once per
// weight, on its first greedy step, and kept by the backend beside the weight.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = 256;

// One warp per output row n: Σ_k gamma_k·w[n, k] and Σ_k beta_k·w[n, k] (+ bias[n]), in
// double, so that the constants carry no more error than the weights' own rounding.
template <class T>
__global__ void __launch_bounds__(kThreads) fold_kernel(const T* __restrict__ w, int n, int k,
                                                        const float* __restrict__ gamma,
                                                        const float* __restrict__ beta, const T* __restrict__ bias,
                                                        float* __restrict__ scale, float* __restrict__ shift) {
  const int row = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= n) return;
  const T* wr = w + static_cast<int64_t>(row) * k;
  double sg = 0, sb = 0;
  for (int i = lane; i < k; i += 32) {
    const double v = to_float(wr[i]);
    sg += v * gamma[i];
    sb += v * beta[i];
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    sg += __shfl_xor_sync(0xffffffffu, sg, o);
    sb += __shfl_xor_sync(0xffffffffu, sb, o);
  }
  if (lane == 0) {
    scale[row] = static_cast<float>(sg);
    shift[row] = static_cast<float>(sb + (bias ? to_float(bias[row]) : 0.0f));
  }
}

}  // namespace

void norm_fold_constants(DType dt, const void* w, int n, int k, const float* gamma, const float* beta,
                         const void* bias, float* scale, float* shift, cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    const unsigned blocks = static_cast<unsigned>((static_cast<int64_t>(n) * 32 + kThreads - 1) / kThreads);
    fold_kernel<T><<<blocks, kThreads, 0, stream>>>(static_cast<const T*>(w), n, k, gamma, beta,
                                                    static_cast<const T*>(bias), scale, shift);
  });
  check_launch("norm fold constants");
}

}  // namespace hark::cuda
