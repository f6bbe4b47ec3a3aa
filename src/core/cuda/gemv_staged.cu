// The greedy step's one-row products with their weights brought into shared memory by the
// copy engine (Hopper's bulk copies), all of a block's weights requested before the kernel
// waits for the kernel that writes its input row.
//
// Why: a step is ~37 short dependent kernels that together read ~300 MB of weights
// (large-v3-turbo). The register kernels (gemv_one_row.cu, gemv_one_row_wide.cu) can only
// request the rows their resident warps hold in registers, and the next kernel's warps
// become resident only as the current kernel's exit (registers are the limit), so each
// product's reads start when the product before it ends: ~1.3 TB/s over a step where
// the H200 streams 4 TB/s. Here a block is one per multiprocessor with ≤ 100 KB of shared
// memory and few registers, so the next product's block fits beside the running one: its
// one thread issues bulk copies of the block's whole slice of rows (a ring of stages for
// the logits' larger slices) as soon as the kernel before it lets it launch (launch.cuh),
// and the weights stream while the previous product finishes.
//
// Arithmetic: every output is computed as the register kernels compute it — the same words
// per lane (lane + 32·u within a row, or within a row's part for the wide rows), the same
// fp32 sums in the same order, the same layer norm (device/one_row.cuh), the same epilogue
// — so the outputs equal theirs bit for bit (CudaOps.StagedOneRowProductsEqualTheRegisterKernels).
// HARK_CUDA_GEMV_STAGED=0 goes back to the register kernels.
#include <algorithm>
#include <cstdlib>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device/bulk_copy.cuh"
#include "core/cuda/device/one_row.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/types.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kStageTarget = 16 * 1024;  // bytes a stage holds, about
constexpr int kRingBytes = 96 * 1024;    // all stages: two blocks of two products fit one SM
constexpr int kMaxStages = 8;
constexpr int kMaxStageRows = 64;
constexpr int kMaxColumns = 131072;      // the bias and residual values of a block fit beside the ring
constexpr int kMaxSmem = 112 * 1024;

// Shared memory: the stages' barriers, then bias and residual values of the block's rows
// (fp32), then the wide rows' partial sums (two stages' worth), then the ring.
__host__ __device__ constexpr int ring_offset(int rows_per_block, int stage_rows, int parts) {
  const int floats = 2 * rows_per_block + 2 * stage_rows * parts;
  return 128 + (floats * 4 + 127) / 128 * 128;
}

// S warps per row (parts of 1/S of k each, as gemv_one_row_wide.cu splits them), W 16-byte
// words per lane and part. Block b serves rows [b·rows_per_block, +rows_per_block) of y.
template <class T, class Y, int S, int W, int kThreads>
__global__ void __launch_bounds__(kThreads, 2)  // two blocks an SM: this product and the next
    gemv_staged_kernel(const T* __restrict__ x, int k, const T* __restrict__ w, int n, const T* __restrict__ bias,
                       Y* y, int epilogue, const float* __restrict__ gamma, const float* __restrict__ beta, float eps,
                       int rows_per_block, int stage_rows, int stages, int evict_first) {
  constexpr int kWarps = kThreads / 32;
  static_assert(kWarps % S == 0, "a block holds whole rows");
  extern __shared__ __align__(128) unsigned char smem[];
  uint64_t* full = reinterpret_cast<uint64_t*>(smem);
  float* add = reinterpret_cast<float*>(smem + 128);  // bias [rows_per_block], residual [rows_per_block]
  float* partial = add + 2 * rows_per_block;          // [2][stage_rows · S]
  unsigned char* ring = smem + ring_offset(rows_per_block, stage_rows, S);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, part = warp % S;
  const int first = blockIdx.x * rows_per_block, rows = min(n, first + rows_per_block) - first;
  const int chunks = (rows + stage_rows - 1) / stage_rows;
  const int kw = k / 8;
  const int64_t row_bytes = static_cast<int64_t>(k) * sizeof(T), stage_bytes = stage_rows * row_bytes;
  const unsigned char* slice = reinterpret_cast<const unsigned char*>(w) + first * row_bytes;
  auto issue = [&](int c) {
    const int s = c % stages;
    const unsigned bytes = static_cast<unsigned>(min(stage_rows, rows - c * stage_rows) * row_bytes);
    barrier_expect_bytes(&full[s], bytes);
    bulk_copy_to_shared(ring + s * stage_bytes, slice + c * stage_bytes, bytes, &full[s], evict_first != 0);
  };

  pdl_launch_next();
  if (tid == 0) {
    for (int s = 0; s < stages; ++s) barrier_init(&full[s], 1);
    barrier_init_fence();
    for (int c = 0; c < min(stages, chunks); ++c) issue(c);  // weights: no kernel of a step writes them
  }
  for (int i = tid; i < rows; i += kThreads) add[i] = bias ? to_float(bias[first + i]) : 0.0f;
  pdl_wait();

  const bool residual = epilogue == static_cast<int>(GemvEpilogue::Residual);
  if (residual)
    for (int i = tid; i < rows; i += kThreads) add[rows_per_block + i] = to_float(y[first + i]);
  const int per_part = (kw + S - 1) / S, p0 = part * per_part, p1 = min(kw, p0 + per_part);
  uint4 xv[W];
  if constexpr (S == 1) {
    load_row<T, W>(x, k, lane, gamma, beta, eps, xv);
  } else {
    const uint4* xr = reinterpret_cast<const uint4*>(x);
#pragma unroll
    for (int u = 0; u < W; ++u) {
      const int idx = p0 + lane + u * 32;
      xv[u] = idx < p1 ? xr[idx] : make_uint4(0, 0, 0, 0);
    }
  }
  __syncthreads();  // barriers initialised, bias and residual values in shared memory

  auto finish = [&](int local, float v) {
    if (epilogue == static_cast<int>(GemvEpilogue::Gelu)) v = gelu_erf(v);
    if (residual) v += add[rows_per_block + local];
    y[first + local] = from_float<Y>(v);
  };
  for (int c = 0; c < chunks; ++c) {
    const int s = c % stages, in_stage = min(stage_rows, rows - c * stage_rows);
    barrier_wait(&full[s], static_cast<unsigned>((c / stages) & 1));
    const uint4* stage = reinterpret_cast<const uint4*>(ring + s * stage_bytes);
    float* sums = partial + (c & 1) * stage_rows * S;
    for (int r = warp / S; r < in_stage; r += kWarps / S) {
      const uint4* wr = stage + static_cast<int64_t>(r) * kw;
      uint4 wv[W];
#pragma unroll
      for (int u = 0; u < W; ++u) {
        const int idx = p0 + lane + u * 32;
        wv[u] = idx < p1 ? wr[idx] : make_uint4(0, 0, 0, 0);
      }
      const float acc = warp_sum(dot_words<T, W>(wv, xv, p0 + lane, p1));
      if (lane == 0) {
        if constexpr (S == 1)
          finish(c * stage_rows + r, acc + add[c * stage_rows + r]);
        else
          sums[r * S + part] = acc;
      }
    }
    __syncthreads();  // stage s read by every warp, the parts' sums written
    if constexpr (S > 1) {
      if (tid < in_stage) {
        const int local = c * stage_rows + tid;
        float v = add[local];
        for (int p = 0; p < S; ++p) v += sums[tid * S + p];
        finish(local, v);
      }
    }
    if (tid == 0 && c + stages < chunks) issue(c + stages);
  }
}

int multiprocessors() {
  static const int count = [] {
    int device = 0, sms = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "multiprocessor count");
    return std::max(1, sms);
  }();
  return count;
}

struct Plan {
  int rows_per_block, blocks, stage_rows, stages;
  size_t smem;
};

// Measurement switches (read once): HARK_CUDA_GEMV_STAGED_RING=KB, the ring's size (default
// 96), and HARK_CUDA_GEMV_STAGED_BLOCKS=N, blocks per multiprocessor (default 1).
int env_int(const char* name, int fallback, int lo, int hi) {
  const char* env = std::getenv(name);
  return env ? std::clamp(std::atoi(env), lo, hi) : fallback;
}
int ring_bytes() {
  static const int bytes = env_int("HARK_CUDA_GEMV_STAGED_RING", kRingBytes / 1024, 4, 104) * 1024;
  return bytes;
}
int blocks_per_sm() {
  static const int blocks = env_int("HARK_CUDA_GEMV_STAGED_BLOCKS", 1, 1, 4);
  return blocks;
}
// HARK_CUDA_GEMV_STAGED_THREADS=512: 16 warps a block (registers capped at 64) instead of 8.
int threads_per_block() {
  static const int threads = env_int("HARK_CUDA_GEMV_STAGED_THREADS", 256, 256, 512) >= 512 ? 512 : 256;
  return threads;
}

Plan plan(int n, int k, int parts, int threads) {
  Plan p{};
  const int64_t row_bytes = static_cast<int64_t>(k) * 2;
  const int per_round = threads / 32 / parts;
  const int blocks = multiprocessors() * blocks_per_sm();
  p.rows_per_block = (n + blocks - 1) / blocks;
  p.blocks = (n + p.rows_per_block - 1) / p.rows_per_block;
  const int rounds = std::max<int64_t>(1, kStageTarget / (per_round * row_bytes));
  p.stage_rows = std::min({per_round * rounds, kMaxStageRows / parts, p.rows_per_block});
  const int chunks = (p.rows_per_block + p.stage_rows - 1) / p.stage_rows;
  const int64_t stage_bytes = p.stage_rows * row_bytes;
  p.stages = static_cast<int>(std::clamp<int64_t>(ring_bytes() / stage_bytes, 1, kMaxStages));
  p.stages = std::min(p.stages, chunks);
  const int head = ring_offset(p.rows_per_block, p.stage_rows, parts);
  while (p.stages > 1 && head + p.stages * stage_bytes > kMaxSmem) --p.stages;
  p.smem = static_cast<size_t>(head + p.stages * stage_bytes);
  return p;
}

template <class T, class Y, int S, int W, int kThreads>
void launch(const void* x, int k, const void* w, int n, const void* bias, void* y, int epilogue, const GemvNorm* norm,
            cudaStream_t stream) {
  const Plan p = plan(n, k, S, kThreads);
  launch_kernel(gemv_staged_kernel<T, Y, S, W, kThreads>, p.blocks, kThreads, p.smem, stream, static_cast<const T*>(x), k,
                static_cast<const T*>(w), n, static_cast<const T*>(bias), static_cast<Y*>(y), epilogue,
                norm ? norm->gamma : nullptr, norm ? norm->beta : nullptr, norm ? norm->eps : 0.0f, p.rows_per_block,
                p.stage_rows, p.stages, l2_hints() ? 1 : 0);
}

template <int kS, int kW>
struct Shape {
  static constexpr int S = kS, W = kW;
};

// Calls fn(Shape<S, W>{}) for the kernel that serves width k (the register kernels' choice
// of S and W, so the sums split the same way).
template <class Fn>
void with_shape(int k, Fn&& fn) {
  const int words = k / 8;
  if (words <= 32 * 2) return fn(Shape<1, 2>{});
  if (words <= 32 * 4) return fn(Shape<1, 4>{});
  if (words <= 32 * 5) return fn(Shape<1, 5>{});
  if (words <= 32 * 8) return fn(Shape<1, 8>{});
  if (words <= 2 * 32 * 5) return fn(Shape<2, 5>{});
  if (words <= 2 * 32 * 8) return fn(Shape<2, 8>{});
  if (words <= 4 * 32 * 5) return fn(Shape<4, 5>{});
  return fn(Shape<4, 8>{});
}

template <class T, class Y>
void raise_smem_limits() {
  for (int k : {256, 1024, 1280, 2048, 2560, 4096, 5120, 8192})  // one width per shape below
    with_shape(k, [&](auto shape) {
      using Sh = decltype(shape);
      check(cudaFuncSetAttribute(gemv_staged_kernel<T, Y, Sh::S, Sh::W, 256>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem),
            "gemv_staged");
      check(cudaFuncSetAttribute(gemv_staged_kernel<T, Y, Sh::S, Sh::W, 512>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxSmem),
            "gemv_staged");
    });
}

}  // namespace

bool gemv_staged_supported() {
  static const bool supported = [] {
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    return major >= 9;
  }();
  return supported;
}

bool gemv_staged_applies(int m, int k, int n, bool norm) {
  return m == 1 && k % 8 == 0 && k >= 8 && k <= 8192 && n >= 1 && n <= kMaxColumns && (!norm || k <= 2048) &&
         gemv_staged_supported();
}

void gemv_staged_setup() {
  if (!gemv_staged_supported()) return;
  raise_smem_limits<__half, __half>();
  raise_smem_limits<__half, float>();
  raise_smem_limits<__nv_bfloat16, __nv_bfloat16>();
  raise_smem_limits<__nv_bfloat16, float>();
}

void gemv_staged(DType dt, const void* x, int k, const void* w, int n, const void* bias, DType y_dt, void* y,
                 GemvEpilogue epilogue, cudaStream_t stream, const GemvNorm* norm) {
  if (n <= 0) return;
  if (!gemv_staged_applies(1, k, n, norm != nullptr))
    throw Error(ErrorCode::Internal, "[cuda] the staged one-row product takes widths 8..8192 (multiples of 8, a norm "
                                     "only up to 2048), at most 131072 outputs, on compute capability 9.0 or later");
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    const int e = static_cast<int>(epilogue);
    auto go = [&](auto y_tag) {
      using Y = decltype(y_tag);
      with_shape(k, [&](auto shape) {
        using Sh = decltype(shape);
        if (threads_per_block() == 512)
          launch<T, Y, Sh::S, Sh::W, 512>(x, k, w, n, bias, y, e, norm, stream);
        else
          launch<T, Y, Sh::S, Sh::W, 256>(x, k, w, n, bias, y, e, norm, stream);
      });
    };
    if (y_dt == DType::F32)
      go(float{});
    else
      go(T{});
  });
}

}  // namespace hark::cuda
