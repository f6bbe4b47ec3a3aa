// The greedy decoder step's products: one activation row, y[n] = x[k]·w[n, k]ᵀ + b, with
// an optional layer norm of x first, for k ≤ 2048 (every Whisper width d; the MLP's 4·d
// input of the larger sizes goes to gemv.cu). At one row these products are bound by the
// latency of the weight reads, not by their bandwidth, so the kernel avoids every wait it
// can:
//  - a warp holds all of x in registers (at most eight 16-byte words per lane), so the
//    norm's statistics and the dot products need no shared memory and no block barrier
//    (gemv.cu stages x in shared memory for up to eight rows and synchronises the block);
//  - the first weight row and the bias are requested before waiting for the kernel that
//    writes x (launch.cuh), and each warp serves several output rows with the next row's
//    weights in flight while the current one is summed, so that the grid is one wave and
//    no block waits for a second one;
//  - the norm repeats layer_norm.cu's arithmetic lane for lane (same words per lane, same
//    sums, same rounding to T), so a fused norm gives the separate kernel's values.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device/one_row.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = 256;

template <class T, class Y, int W, bool kNorm, bool kEvictFirst>
__global__ void __launch_bounds__(kThreads) gemv_one_row_kernel(const T* __restrict__ x, int k,
                                                                const T* __restrict__ w, int n,
                                                                const T* __restrict__ bias, Y* y, int epilogue,
                                                                const float* __restrict__ gamma,
                                                                const float* __restrict__ beta, float eps,
                                                                int rows_per_warp) {
  const int lane = threadIdx.x & 31;
  const int warp = static_cast<int>((blockIdx.x * blockDim.x + threadIdx.x) >> 5);
  const int first = warp * rows_per_warp, end = min(n, first + rows_per_warp);
  auto fetch = [&](int row, uint4 (&out)[W]) { fetch_row_words<T, W, kEvictFirst>(w, k, row, row < end, lane, out); };
  pdl_launch_next();
  uint4 wv[W];
  fetch(first, wv);
  float b = bias && first < end ? to_float(bias[first]) : 0.0f;
  pdl_wait();
  if (first >= end) return;

  uint4 xv[W];
  load_row<T, W>(x, k, lane, kNorm ? gamma : nullptr, beta, eps, xv);

  for (int row = first; row < end; ++row) {
    uint4 next[W];
    fetch(row + 1, next);  // zeros past this warp's rows
    const float next_bias = bias && row + 1 < end ? to_float(bias[row + 1]) : 0.0f;
    const float acc = row_dot<T, W>(wv, xv, k, lane);
    if (lane == 0) {
      float v = acc + b;
      if (epilogue == static_cast<int>(GemvEpilogue::Gelu)) v = gelu_erf(v);
      if (epilogue == static_cast<int>(GemvEpilogue::Residual)) v += to_float(y[row]);
      y[row] = from_float<Y>(v);
    }
#pragma unroll
    for (int u = 0; u < W; ++u) wv[u] = next[u];
    b = next_bias;
  }
}

int multiprocessors() {
  int device = 0, count = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device), "multiprocessor count");
  return std::max(1, count);
}

// Warps of `kernel` resident on the whole GPU at once (its registers decide).
template <class Kernel>
int resident_warps(Kernel kernel) {
  int blocks_per_sm = 0;
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, 0), "occupancy");
  return multiprocessors() * std::max(1, blocks_per_sm) * (kThreads / 32);
}

template <class T, class Y, int W, bool kNorm, bool kEvictFirst>
void launch(const void* x, int k, const void* w, int n, const void* bias, void* y, int epilogue, const GemvNorm* norm,
            cudaStream_t stream) {
  auto kernel = gemv_one_row_kernel<T, Y, W, kNorm, kEvictFirst>;
  // Every GPU of one process is the same model in practice: asked once per kernel.
  static const int capacity = resident_warps(kernel);
  // Rows spread so that the whole grid is resident at once (one wave).
  const int rows_per_warp = std::max(1, (n + capacity - 1) / capacity);
  const int warps = (n + rows_per_warp - 1) / rows_per_warp;
  const unsigned blocks = static_cast<unsigned>((warps + kThreads / 32 - 1) / (kThreads / 32));
  launch_kernel(kernel, blocks, kThreads, 0, stream, static_cast<const T*>(x), k, static_cast<const T*>(w), n,
                static_cast<const T*>(bias), static_cast<Y*>(y), epilogue, norm ? norm->gamma : nullptr,
                norm ? norm->beta : nullptr, norm ? norm->eps : 0.0f, rows_per_warp);
}

template <class T, class Y, int W>
void launch(const void* x, int k, const void* w, int n, const void* bias, void* y, int epilogue, const GemvNorm* norm,
            cudaStream_t stream) {
  const bool hints = l2_hints();
  if (norm)
    hints ? launch<T, Y, W, true, true>(x, k, w, n, bias, y, epilogue, norm, stream)
          : launch<T, Y, W, true, false>(x, k, w, n, bias, y, epilogue, norm, stream);
  else
    hints ? launch<T, Y, W, false, true>(x, k, w, n, bias, y, epilogue, norm, stream)
          : launch<T, Y, W, false, false>(x, k, w, n, bias, y, epilogue, norm, stream);
}

}  // namespace

bool l2_hints() {
  static const bool on = [] {
    const char* env = std::getenv("HARK_CUDA_L2_HINTS");
    return !(env && std::string(env) == "0");
  }();
  return on;
}

bool gemv_one_row_applies(int m, int k) {
  // Measurement switch HARK_CUDA_GEMV_ONE_ROW=0: every few-row product through gemv.cu.
  static const bool enabled = [] {
    const char* env = std::getenv("HARK_CUDA_GEMV_ONE_ROW");
    return !(env && std::string(env) == "0");
  }();
  return enabled && m == 1 && k % 8 == 0 && k <= 2048;
}

void gemv_one_row(DType dt, const void* x, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
                  GemvEpilogue epilogue, cudaStream_t stream, const GemvNorm* norm) {
  if (n <= 0) return;
  const int per_lane = (k / 8 + 31) / 32;
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    auto go = [&](auto y_tag) {
      using Y = decltype(y_tag);
      const int e = static_cast<int>(epilogue);
      if (per_lane <= 2) return launch<T, Y, 2>(x, k, w, n, bias, y, e, norm, stream);
      if (per_lane <= 4) return launch<T, Y, 4>(x, k, w, n, bias, y, e, norm, stream);
      if (per_lane <= 5) return launch<T, Y, 5>(x, k, w, n, bias, y, e, norm, stream);
      return launch<T, Y, 8>(x, k, w, n, bias, y, e, norm, stream);
    };
    if (y_dt == DType::F32)
      go(float{});
    else
      go(T{});
  });
}

}  // namespace hark::cuda
