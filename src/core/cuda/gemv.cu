// The decoder's products at a few rows (batch-1 steps, beams): y = x·wᵀ + b with 16-bit
// weights. They are bound by reading w, so each warp streams one weight row with 16-byte
// loads (four in flight per lane; eight with double buffering needed 100 registers, and
// the lost occupancy made every shape slower, the logits 41 → 68 µs) while x sits in
// shared memory, and the epilogue (bias, exact GELU, residual add, fp32 logits) is
// applied before the single store. The layer norm in front of the product can run here
// too, on the staged rows, which saves a launch per norm in every decoder step. One row
// of width ≤ 2048 (the greedy step) goes to gemv_one_row.cu instead. (Eight loads per
// lane in one round trip and block-wide norm statistics were tried here for 2-8 rows:
// 5-row steps became 30 µs slower on an H200, docs/benchmarks.md.)
#include <algorithm>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kWarps = 8;
constexpr int kUnroll = 4;
constexpr int kMaxSmem = 96 * 1024;  // x of 8 rows of width 6144 in 16-bit

// x (m rows of width k in shared memory) = layer_norm(x) · gamma + beta, rounded to T as
// the separate layer-norm kernel would store it. Warp r computes row r's statistics.
template <class T>
__device__ void normalize_rows(T* xs, int m, int k, const float* gamma, const float* beta, float eps) {
  __shared__ float stats[kGemvMaxRows][2];
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  if (warp < m) {
    const T* row = xs + warp * k;
    float sum = 0;
    for (int i = lane; i < k; i += 32) sum += to_float(row[i]);
    const float mean = warp_sum(sum) / static_cast<float>(k);
    float var = 0;
    for (int i = lane; i < k; i += 32) {
      const float c = to_float(row[i]) - mean;
      var += c * c;
    }
    var = warp_sum(var);
    if (lane == 0) {
      stats[warp][0] = mean;
      stats[warp][1] = rsqrtf(var / static_cast<float>(k) + eps);
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < m * k; i += blockDim.x) {
    const int r = i / k, c = i % k;
    xs[i] = from_float<T>((to_float(xs[i]) - stats[r][0]) * stats[r][1] * gamma[c] + beta[c]);
  }
  __syncthreads();
}

template <class T, class Y>
__global__ void __launch_bounds__(kWarps * 32) gemv_kernel(const T* __restrict__ x, int m, int k,
                                                           const T* __restrict__ w, int n, const T* __restrict__ bias,
                                                           Y* y, int64_t ldy, int epilogue, const float* gamma,
                                                           const float* beta, float eps, int splits) {
  extern __shared__ uint4 xs[];
  __shared__ float partial[kWarps][kGemvMaxRows];
  const int kw = k / 8;  // 16-byte words per row
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  // `splits` warps share one weight row (wide rows: more loads in flight per row).
  const int col = blockIdx.x * (kWarps / splits) + warp / splits, part = warp % splits;
  const bool active = col < n;
  const int per_part = (kw + splits - 1) / splits;
  const int p0 = part * per_part, p1 = min(kw, p0 + per_part);
  const uint4* wrow = reinterpret_cast<const uint4*>(w + static_cast<int64_t>(active ? col : 0) * k);
  auto fetch = [&](int base, uint4 (&out)[kUnroll]) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int idx = base + u * 32;
      out[u] = active && idx < p1 ? __ldg(wrow + idx) : make_uint4(0, 0, 0, 0);
    }
  };
  // The first weights are requested before x is staged, and before the kernel that
  // writes x has finished (launch.cuh): the latencies overlap.
  pdl_launch_next();
  uint4 wv[kUnroll];
  int base = p0 + lane;
  fetch(base, wv);
  pdl_wait();
  for (int i = threadIdx.x; i < m * kw; i += blockDim.x) xs[i] = reinterpret_cast<const uint4*>(x)[i];
  __syncthreads();
  if (gamma) normalize_rows(reinterpret_cast<T*>(xs), m, k, gamma, beta, eps);
  float acc[kGemvMaxRows] = {};
  while (active && base - lane < p1) {
    if (base != p0 + lane) fetch(base, wv);  // the first batch was fetched before staging
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int idx = base + u * 32;
      if (idx < p1) {
        float wf[8];
        widen8<T>(wv[u], wf);
#pragma unroll
        for (int r = 0; r < kGemvMaxRows; ++r) {
          if (r < m) {
            float xf[8];
            widen8<T>(xs[r * kw + idx], xf);
#pragma unroll
            for (int j = 0; j < 8; ++j) acc[r] = fmaf(wf[j], xf[j], acc[r]);
          }
        }
      }
    }
    base += 32 * kUnroll;
  }
#pragma unroll
  for (int r = 0; r < kGemvMaxRows; ++r)
    if (r < m) acc[r] = warp_sum(acc[r]);
  if (splits > 1) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < kGemvMaxRows; ++r) partial[warp][r] = acc[r];
    __syncthreads();
    if (part != 0) return;
#pragma unroll
    for (int r = 0; r < kGemvMaxRows; ++r)
      for (int p = 1; p < splits; ++p) acc[r] += partial[warp + p][r];
  }
  if (!active) return;
  const float b = bias ? to_float(bias[col]) : 0.0f;
#pragma unroll
  for (int r = 0; r < kGemvMaxRows; ++r) {
    if (r < m && lane == r) {
      float v = acc[r] + b;
      Y* dst = y + r * ldy + col;
      if (epilogue == static_cast<int>(GemvEpilogue::Gelu)) v = gelu_erf(v);
      if (epilogue == static_cast<int>(GemvEpilogue::Residual)) v += to_float(*dst);
      *dst = from_float<Y>(v);
    }
  }
}

template <class T, class Y>
void launch(const void* x, int m, int k, const void* w, int n, const void* bias, void* y, int64_t ldy, int epilogue,
            const GemvNorm* norm, cudaStream_t stream) {
  const int rows_per_pass = std::max(1, std::min(kGemvMaxRows, kMaxSmem / (k * 2)));
  // Warps per weight row: one up to 2048 wide; the MLP's 5120-wide rows are shared by
  // four warps (more loads in flight per row).
  int splits = 1;
  if (k >= 4096) splits = 4;
  for (int r0 = 0; r0 < m; r0 += rows_per_pass) {
    const int rows = std::min(rows_per_pass, m - r0);
    const size_t smem = static_cast<size_t>(rows) * k * 2;
    launch_kernel(gemv_kernel<T, Y>, blocks_for(n, kWarps / splits), kWarps * 32, smem, stream,
                  static_cast<const T*>(x) + static_cast<int64_t>(r0) * k, rows, k, static_cast<const T*>(w), n,
                  static_cast<const T*>(bias), static_cast<Y*>(y) + r0 * ldy, ldy, epilogue,
                  norm ? norm->gamma : nullptr, norm ? norm->beta : nullptr, norm ? norm->eps : 0.0f, splits);
  }
}

}  // namespace

void gemv_setup() {
  check(cudaFuncSetAttribute(gemv_kernel<__half, __half>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem), "gemv");
  check(cudaFuncSetAttribute(gemv_kernel<__half, float>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem), "gemv");
  check(cudaFuncSetAttribute(gemv_kernel<__nv_bfloat16, __nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kMaxSmem),
        "gemv");
  check(cudaFuncSetAttribute(gemv_kernel<__nv_bfloat16, float>, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem),
        "gemv");
}

void gemv(DType dt, const void* x, int m, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
          int64_t ldy, GemvEpilogue epilogue, cudaStream_t stream, const GemvNorm* norm, bool wide_one_row) {
  if (m <= 0 || n <= 0) return;
  if (k % 8 != 0) throw Error(ErrorCode::Internal, "[cuda] gemv needs a width divisible by 8");
  if (gemv_one_row_applies(m, k)) return gemv_one_row(dt, x, k, w, n, bias, y_dt, y, epilogue, stream, norm);
  if (wide_one_row && !norm && gemv_one_row_wide_applies(m, k))
    return gemv_one_row_wide(dt, x, k, w, n, bias, y_dt, y, epilogue, stream);
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    if (y_dt == DType::F32)
      launch<T, float>(x, m, k, w, n, bias, y, ldy, static_cast<int>(epilogue), norm, stream);
    else
      launch<T, T>(x, m, k, w, n, bias, y, ldy, static_cast<int>(epilogue), norm, stream);
  });
}

}  // namespace hark::cuda
