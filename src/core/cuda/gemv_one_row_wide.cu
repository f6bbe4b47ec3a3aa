// One activation row wider than one warp can hold (2048 < k ≤ 8192: the MLP's second
// product, 4·d wide): gemv_one_row.cu's design with S warps sharing each weight row. Each
// warp of a group holds its 1/S of x in registers and reads that part of every row its
// group serves; the parts' sums meet in shared memory once, after all of the group's
// rows, and the group's first warp adds them up, one row per lane, with the epilogue.
// There is no layer norm here (no norm precedes a product this wide in Whisper).
//
// The default for those products since it measured faster than cuBLASLt's split-K kernel
// and its reduction (0.264 → 0.253 ms per large-v3-turbo step on an H200, run-all.sh ab);
// HARK_CUDA_GEMV_ONE_ROW=narrow sends them back there.
#include <algorithm>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxRowsPerGroup = 32;  // one row per lane in the final sum
constexpr int kMaxWords = 8;          // 16-byte words of x (and of each weight row) per lane

// S warps per weight row (a group); rows [first, first + rows) of the output per group.
// W: 16-byte words per lane (5 for the 5120-wide products of the large sizes, else 8).
template <class T, class Y, int S, int W, bool kEvictFirst>
__global__ void __launch_bounds__(kThreads) gemv_wide_kernel(const T* __restrict__ x, int k, const T* __restrict__ w,
                                                             int n, const T* __restrict__ bias, Y* y, int epilogue,
                                                             int rows_per_group) {
  static_assert(kWarps % S == 0, "a block holds whole groups");
  __shared__ float partial[kWarps][kMaxRowsPerGroup];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int group = blockIdx.x * (kWarps / S) + warp / S, part = warp % S;
  const int kw = k / 8;
  const int per_part = (kw + S - 1) / S;
  const int p0 = part * per_part, p1 = min(kw, p0 + per_part);
  const int first = group * rows_per_group, end = min(n, first + rows_per_group);
  auto fetch = [&](int row, uint4 (&out)[W]) {
    const uint4* wr = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(row) * k);
    [[maybe_unused]] uint64_t policy = 0;
    if constexpr (kEvictFirst) policy = l2_policy_evict_first();
#pragma unroll
    for (int u = 0; u < W; ++u) {
      const int idx = p0 + lane + u * 32;
      const bool valid = row < end && idx < p1;
      if constexpr (kEvictFirst)
        out[u] = valid ? load_policy(wr + idx, policy) : make_uint4(0, 0, 0, 0);
      else
        out[u] = valid ? __ldg(wr + idx) : make_uint4(0, 0, 0, 0);
    }
  };
  pdl_launch_next();
  uint4 wv[W];
  fetch(first, wv);
  pdl_wait();

  uint4 xv[W];
  const uint4* xr = reinterpret_cast<const uint4*>(x);
#pragma unroll
  for (int u = 0; u < W; ++u) {
    const int idx = p0 + lane + u * 32;
    xv[u] = idx < p1 ? xr[idx] : make_uint4(0, 0, 0, 0);
  }
  for (int row = first; row < end; ++row) {
    uint4 next[W];
    fetch(row + 1, next);  // zeros past this group's rows
    const float acc = warp_sum(dot_words<T, W>(wv, xv, p0 + lane, p1));
    if (lane == 0) partial[warp][row - first] = acc;
#pragma unroll
    for (int u = 0; u < W; ++u) wv[u] = next[u];
  }
  __syncthreads();  // every warp of the block reaches it: no early return above
  if (part != 0 || first + lane >= end) return;
  const int row = first + lane;
  float v = bias ? to_float(bias[row]) : 0.0f;
  for (int p = 0; p < S; ++p) v += partial[warp + p][lane];
  if (epilogue == static_cast<int>(GemvEpilogue::Gelu)) v = gelu_erf(v);
  if (epilogue == static_cast<int>(GemvEpilogue::Residual)) v += to_float(y[row]);
  y[row] = from_float<Y>(v);
}

int resident_groups(const void* kernel, int warps_per_group) {
  int device = 0, sms = 0, blocks_per_sm = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "multiprocessor count");
  check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, kernel, kThreads, 0), "occupancy");
  return std::max(1, sms) * std::max(1, blocks_per_sm) * (kWarps / warps_per_group);
}

template <class T, class Y, int S, int W, bool kEvictFirst>
void launch_with(const void* x, int k, const void* w, int n, const void* bias, void* y, int epilogue,
                 cudaStream_t stream) {
  auto kernel = gemv_wide_kernel<T, Y, S, W, kEvictFirst>;
  static const int capacity = resident_groups(reinterpret_cast<const void*>(kernel), S);
  // One resident wave where the rows allow it, at most one row per lane of the final sum.
  const int rows_per_group = std::clamp((n + capacity - 1) / capacity, 1, kMaxRowsPerGroup);
  const int groups = (n + rows_per_group - 1) / rows_per_group;
  const unsigned blocks = static_cast<unsigned>((groups + kWarps / S - 1) / (kWarps / S));
  launch_kernel(kernel, blocks, kThreads, 0, stream, static_cast<const T*>(x), k, static_cast<const T*>(w), n,
                static_cast<const T*>(bias), static_cast<Y*>(y), epilogue, rows_per_group);
}

template <class T, class Y, int S, int W>
void launch(const void* x, int k, const void* w, int n, const void* bias, void* y, int epilogue, cudaStream_t stream) {
  if (l2_hints())
    launch_with<T, Y, S, W, true>(x, k, w, n, bias, y, epilogue, stream);
  else
    launch_with<T, Y, S, W, false>(x, k, w, n, bias, y, epilogue, stream);
}

}  // namespace

bool gemv_one_row_wide_applies(int m, int k) { return m == 1 && k % 8 == 0 && k > 2048 && k <= 8192; }

void gemv_one_row_wide(DType dt, const void* x, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
                       GemvEpilogue epilogue, cudaStream_t stream) {
  if (n <= 0) return;
  if (!gemv_one_row_wide_applies(1, k))
    throw Error(ErrorCode::Internal, "[cuda] the wide one-row product takes widths 2056..8192 (multiples of 8)");
  // Warps per row: each lane holds at most eight words of x (k ≤ 4096: 2 warps; ≤ 8192: 4).
  const int words = k / 8;
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    auto go = [&](auto y_tag) {
      using Y = decltype(y_tag);
      const int e = static_cast<int>(epilogue);
      if (words <= 2 * 32 * kMaxWords) {
        if (words <= 2 * 32 * 5) return launch<T, Y, 2, 5>(x, k, w, n, bias, y, e, stream);
        return launch<T, Y, 2, 8>(x, k, w, n, bias, y, e, stream);
      }
      if (words <= 4 * 32 * 5) return launch<T, Y, 4, 5>(x, k, w, n, bias, y, e, stream);
      return launch<T, Y, 4, 8>(x, k, w, n, bias, y, e, stream);
    };
    if (y_dt == DType::F32)
      go(float{});
    else
      go(T{});
  });
}

}  // namespace hark::cuda
