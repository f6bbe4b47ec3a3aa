// Encoder self-attention without a score matrix in memory (the flash-attention scheme):
// a block of 4 warps owns 64·M query rows of one head, each warp M tiles of 16 rows; K/V
// tiles of 64 keys stream through shared memory (cp.async, two stages), S = QKᵀ and
// O += PV run on the tensor cores (mma m16n8k16, fp32 accumulators; each K and V fragment
// read from shared memory serves the warp's M row tiles) and the softmax is kept online
// per row in registers. Head dim 64 (every Whisper size) or 32 (small custom checkpoints).
// Shared-memory rows are XOR-swizzled in 16-byte chunks so that ldmatrix reads 8 rows of
// one column block without bank conflicts (with 32 dims, two rows share a bank set: 2-way
// at most).
// M = 2 is the default: 128 query rows per block, 242 registers, two blocks per SM. M = 1
// (HARK_CUDA_FLASH=narrow, a measurement switch, the default until 2026-12-01) takes 64
// rows and 161 registers, three blocks per SM. Both compute each output with the same
// products in the same order (CudaOps.EncoderSelfAttention expects them equal bit for bit).
// On an H200 (2026-12-01, large-v3-turbo f16, both with the softmax below since reverted)
// the 128-row kernel measured 5.26-5.42 ms per encoder window at batch 1 against 5.62 with
// 64 rows (one call, docs/benchmarks.md). Measured and left out: the softmax at one FMA and one
// ftz EX2 per score (5.64 ms a window at batch 1 with 64 rows, where the call before had
// 5.70-5.75 without it: not an A/B in one call; and its bf16 rounding flipped the bundled
// model's silence-15 clip from empty to a hallucination in the fast-path test — the
// arithmetic here is the one that test was judged on), 4 blocks per SM by a register cap
// at 161 registers (spills: 64 → 71 µs per turbo layer), exps on half2 (64 → 68.5 µs).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/online_softmax.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/swizzled_tile.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kKeys = 64;  // keys per tile
constexpr int kThreads = 128;

// M 16-row tiles per warp: a block owns 64·M query rows.
template <int HD, int M, int kMinBlocks, class T>
__global__ void __launch_bounds__(kThreads, kMinBlocks) flash_kernel(const T* __restrict__ qkv, T* __restrict__ out, int64_t t,
                                                         int64_t d, float scale_log2) {
  pdl_enter();
  constexpr int kSteps = HD / 16, kTiles = HD / 8;  // k-steps of Q·Kᵀ, n-tiles of O
  constexpr int kRows = 64 * M;                     // query rows per block
  // At HD = 64 and M = 2, 48 KB: Q 16 KB, K and V 2 × 8 KB each (the static limit).
  __shared__ __align__(128) T qs[kRows * HD];
  __shared__ __align__(128) T ks[2][kKeys * HD];
  __shared__ __align__(128) T vs[2][kKeys * HD];
  const QkvHead<T> head = block_qkv_head<HD>(qkv, t, d);
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;

  load_tile<HD, kRows, kThreads>(qs, head.q, head.ld, q0, t);
  load_tile<HD, kKeys, kThreads>(ks[0], head.k, head.ld, 0, t);
  load_tile<HD, kKeys, kThreads>(vs[0], head.v, head.ld, 0, t);
  cp_async_commit();

  unsigned qa[M][kSteps][4];
  float o[M][kTiles][4] = {};
  // Running max and sum per row: [tile][upper or lower 8 rows of the 16].
  float m_run[M][2], l_run[M][2];
#pragma unroll
  for (int m = 0; m < M; ++m) m_run[m][0] = m_run[m][1] = -INFINITY, l_run[m][0] = l_run[m][1] = 0.0f;
  const int tiles = static_cast<int>((t + kKeys - 1) / kKeys);
  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile & 1;
    if (tile + 1 < tiles) {
      load_tile<HD, kKeys, kThreads>(ks[stage ^ 1], head.k, head.ld, static_cast<int64_t>(tile + 1) * kKeys, t);
      load_tile<HD, kKeys, kThreads>(vs[stage ^ 1], head.v, head.ld, static_cast<int64_t>(tile + 1) * kKeys, t);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (tile == 0) {
#pragma unroll
      for (int m = 0; m < M; ++m)
#pragma unroll
        for (int kk = 0; kk < kSteps; ++kk)
          ldmatrix_x4(qa[m][kk],
                      qs + swz<HD>(warp * 16 * M + m * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8));
    }
    // S = Q Kᵀ for this warp's rows and the tile's 64 keys: each K fragment serves every
    // row tile.
    float s[M][8][4] = {};
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        unsigned b[4];
        ldmatrix_x4(b, ks[stage] + swz<HD>(np * 16 + (lane & 7) + (lane >> 4) * 8, kk * 16 + ((lane >> 3) & 1) * 8));
#pragma unroll
        for (int m = 0; m < M; ++m) {
          mma_16816<T>(s[m][2 * np], qa[m][kk], b[0], b[1]);
          mma_16816<T>(s[m][2 * np + 1], qa[m][kk], b[2], b[3]);
        }
      }
    }
    // Online softmax in the log2 domain, per row tile (device/online_softmax.cuh).
    const int64_t key0 = static_cast<int64_t>(tile) * kKeys;
    const bool partial = key0 + kKeys > t;
#pragma unroll
    for (int m = 0; m < M; ++m) online_softmax_16x64(s[m], m_run[m], l_run[m], o[m], scale_log2, key0, partial, tig, t);
    // O += P V: P's accumulator layout is the A-fragment layout of the next product; each
    // V fragment serves every row tile.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      unsigned pa[M][4];
#pragma unroll
      for (int m = 0; m < M; ++m) p_fragment<T>(s[m], kk, pa[m]);
#pragma unroll
      for (int dp = 0; dp < kTiles / 2; ++dp) {
        unsigned b[4];
        ldmatrix_x4_trans(b, vs[stage] + swz<HD>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dp * 16 + (lane >> 4) * 8));
#pragma unroll
        for (int m = 0; m < M; ++m) {
          mma_16816<T>(o[m][2 * dp], pa[m], b[0], b[1]);
          mma_16816<T>(o[m][2 * dp + 1], pa[m], b[2], b[3]);
        }
      }
    }
    __syncthreads();
  }
  T* dst = out + blockIdx.z * t * d + blockIdx.y * HD;
#pragma unroll
  for (int m = 0; m < M; ++m) store_rows_16<T>(dst, d, o[m], l_run[m], q0 + warp * 16 * M + m * 16, g, tig, t);
}

}  // namespace

void flash_attention(DType dt, const void* qkv, void* out, int batch, int64_t t, int n_heads, int head_dim,
                     cudaStream_t stream) {
  if (batch <= 0 || t <= 0) return;
  // Measurement switch, read at each launch so that a test can run every kernel: unset,
  // the warpgroup (wgmma) kernel of Hopper GPUs (flash_attention_wgmma.cu) with a tile's
  // two products overlapped, where it applies (head dim 64, compute capability 9.0, a
  // module with sm_90a code), else the 128-row mma.sync kernel; "wgmma-pipe" that kernel
  // or an error where it does not apply; "wgmma" the warpgroup kernel without the overlap
  // (the default 2026-12-02, 00:00-04:30 UTC); "wide" the 128-row mma.sync kernel;
  // "narrow" the 64-row one. All are bit-identical on every test case. Measured on an H200
  // (large-v3-turbo f16, runs alternating, docs/benchmarks.md): mma.sync → wgmma 5.05 →
  // 4.78-4.90 ms a window at encoder batch 32; wgmma → wgmma-pipe 4.81 → 4.76 at batch 32
  // and 5.16 → 5.10 ms at batch 1 (means of six alternating pairs).
  const char* env = std::getenv("HARK_CUDA_FLASH");
  const auto is = [env](const char* name) { return env && std::strcmp(env, name) == 0; };
  const bool forced = is("wgmma") || is("wgmma-pipe");
  if (forced || !env) {
    if (flash_attention_wgmma_applies(head_dim)) {
      flash_attention_wgmma(dt, qkv, out, batch, t, n_heads, stream,
                            is("wgmma") ? WgmmaFlash::kSerial : WgmmaFlash::kPipelined);
      return;
    }
    if (forced)
      throw Error(ErrorCode::Unavailable,
                  std::string("[cuda] HARK_CUDA_FLASH=") + env +
                      ": the warpgroup kernel needs head dim 64, a GPU of compute capability 9.0 and a CUDA module "
                      "built for sm_90a (CMAKE_CUDA_ARCHITECTURES naming 90a, the default)");
  }
  const bool wide = !is("narrow");
  const int64_t d = static_cast<int64_t>(n_heads) * head_dim, rows = wide ? 128 : 64;
  const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(head_dim));  // log2(e) / sqrt(hd)
  dim3 grid(static_cast<unsigned>((t + rows - 1) / rows), static_cast<unsigned>(n_heads), static_cast<unsigned>(batch));
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    auto go = [&](auto kernel) {
      launch_kernel(kernel, grid, kThreads, 0, stream, static_cast<const T*>(qkv), static_cast<T*>(out), t, d, scale_log2);
    };
    if (head_dim == 64)
      wide ? go(flash_kernel<64, 2, 2, T>) : go(flash_kernel<64, 1, 1, T>);
    else if (head_dim == 32)
      wide ? go(flash_kernel<32, 2, 2, T>) : go(flash_kernel<32, 1, 1, T>);
    else
      throw Error(ErrorCode::Unavailable, "[cuda] flash attention supports head dims 32 and 64");
  });
}

}  // namespace hark::cuda
