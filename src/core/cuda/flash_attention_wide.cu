// flash_attention.cu's scheme with twice the query rows per warp: a block of 4 warps owns
// 128 query rows of one head, each warp two 16-row tiles, so every K and V fragment read
// from shared memory (ldmatrix) feeds two tensor-core products instead of one, each K/V
// tile is loaded once for 128 rows instead of 64, and each warp has two independent
// accumulator chains in flight. The softmax and the masking are the same, per tile of rows.
//
// Measurement switch, not yet the default: HARK_CUDA_FLASH=wide. Written without a GPU at
// hand (the baseline kernel runs at about 180 TFLOP/s on an H200 at 1500 × 1500, 20 heads:
// 2 ms of the 5.7 ms turbo window); to be tested (CudaOps.EncoderSelfAttention runs both)
// and timed (run-all.sh ab with AB_SWITCHES=HARK_CUDA_FLASH=wide) in the next GPU session.
#include <cmath>

#include "core/cuda/device/flash_tile.cuh"
#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kRows = 128;  // query rows per block (32 per warp: two 16-row tiles)
constexpr int kKeys = 64;   // keys per tile
constexpr int kThreads = 128;
constexpr int kM = 2;       // 16-row tiles per warp

template <int HD, class T>
__global__ void __launch_bounds__(kThreads) flash_wide_kernel(const T* __restrict__ qkv, T* __restrict__ out,
                                                              int64_t t, int64_t d, float scale_log2) {
  pdl_enter();
  constexpr int kSteps = HD / 16, kTiles = HD / 8;  // k-steps of Q·Kᵀ, n-tiles of O
  // 48 KB at HD = 64: Q 16 KB, K and V 2 × 8 KB each (the static limit).
  __shared__ __align__(128) T qs[kRows * HD];
  __shared__ __align__(128) T ks[2][kKeys * HD];
  __shared__ __align__(128) T vs[2][kKeys * HD];
  const int head = blockIdx.y;
  const int64_t ld = 3 * d;
  const T* base = qkv + blockIdx.z * t * ld + head * HD;
  const T* k_src = base + d;
  const T* v_src = base + 2 * d;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;

  load_tile<HD, kRows, kThreads>(qs, base, ld, q0, t);
  load_tile<HD, kKeys, kThreads>(ks[0], k_src, ld, 0, t);
  load_tile<HD, kKeys, kThreads>(vs[0], v_src, ld, 0, t);
  cp_async_commit();

  unsigned qa[kM][kSteps][4];
  float o[kM][kTiles][4] = {};
  // Running max and sum per row: [tile][upper or lower 8 rows of the 16].
  float m_run[kM][2], l_run[kM][2];
#pragma unroll
  for (int m = 0; m < kM; ++m) m_run[m][0] = m_run[m][1] = -INFINITY, l_run[m][0] = l_run[m][1] = 0.0f;
  const int tiles = static_cast<int>((t + kKeys - 1) / kKeys);
  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile & 1;
    if (tile + 1 < tiles) {
      load_tile<HD, kKeys, kThreads>(ks[stage ^ 1], k_src, ld, static_cast<int64_t>(tile + 1) * kKeys, t);
      load_tile<HD, kKeys, kThreads>(vs[stage ^ 1], v_src, ld, static_cast<int64_t>(tile + 1) * kKeys, t);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();
    if (tile == 0) {
#pragma unroll
      for (int m = 0; m < kM; ++m)
#pragma unroll
        for (int kk = 0; kk < kSteps; ++kk)
          ldmatrix_x4(qa[m][kk],
                      qs + swz<HD>(warp * 32 + m * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8));
    }
    // S = Q Kᵀ for this warp's 32 rows and the tile's 64 keys: each K fragment serves both
    // row tiles.
    float s[kM][8][4] = {};
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        unsigned b[4];
        ldmatrix_x4(b, ks[stage] + swz<HD>(np * 16 + (lane & 7) + (lane >> 4) * 8, kk * 16 + ((lane >> 3) & 1) * 8));
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          mma_16816<T>(s[m][2 * np], qa[m][kk], b[0], b[1]);
          mma_16816<T>(s[m][2 * np + 1], qa[m][kk], b[2], b[3]);
        }
      }
    }
    // Online softmax in the log2 domain, per row tile; keys past the end get −∞.
    const int64_t key0 = static_cast<int64_t>(tile) * kKeys;
#pragma unroll
    for (int m = 0; m < kM; ++m) {
      float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool valid = key0 + j * 8 + tig * 2 + (e & 1) < t;
          s[m][j][e] = valid ? s[m][j][e] * scale_log2 : -INFINITY;
          mx[e >> 1] = fmaxf(mx[e >> 1], s[m][j][e]);
        }
      }
      float corr[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
        mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
        const float m_new = fmaxf(m_run[m][r], mx[r]);
        corr[r] = exp2f(m_run[m][r] - m_new);
        m_run[m][r] = m_new;
        l_run[m][r] *= corr[r];
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          s[m][j][e] = exp2f(s[m][j][e] - m_run[m][e >> 1]);
          l_run[m][e >> 1] += s[m][j][e];
        }
      }
#pragma unroll
      for (int j = 0; j < kTiles; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) o[m][j][e] *= corr[e >> 1];
      }
    }
    // O += P V: P's accumulator layout is the A-fragment layout of the next product; each
    // V fragment serves both row tiles.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      unsigned pa[kM][4];
#pragma unroll
      for (int m = 0; m < kM; ++m) {
        pa[m][0] = pack2<T>(s[m][2 * kk][0], s[m][2 * kk][1]);
        pa[m][1] = pack2<T>(s[m][2 * kk][2], s[m][2 * kk][3]);
        pa[m][2] = pack2<T>(s[m][2 * kk + 1][0], s[m][2 * kk + 1][1]);
        pa[m][3] = pack2<T>(s[m][2 * kk + 1][2], s[m][2 * kk + 1][3]);
      }
#pragma unroll
      for (int dp = 0; dp < kTiles / 2; ++dp) {
        unsigned b[4];
        ldmatrix_x4_trans(b, vs[stage] + swz<HD>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dp * 16 + (lane >> 4) * 8));
#pragma unroll
        for (int m = 0; m < kM; ++m) {
          mma_16816<T>(o[m][2 * dp], pa[m], b[0], b[1]);
          mma_16816<T>(o[m][2 * dp + 1], pa[m], b[2], b[3]);
        }
      }
    }
    __syncthreads();
  }
  T* dst = out + blockIdx.z * t * d + head * HD;
#pragma unroll
  for (int m = 0; m < kM; ++m) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[m][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = 1.0f / l;
      const int64_t row = q0 + warp * 32 + m * 16 + g + r * 8;
      if (row >= t) continue;
#pragma unroll
      for (int j = 0; j < kTiles; ++j)
        *reinterpret_cast<unsigned*>(dst + row * d + j * 8 + tig * 2) =
            pack2<T>(o[m][j][2 * r] * inv, o[m][j][2 * r + 1] * inv);
    }
  }
}

}  // namespace

void flash_attention_wide(DType dt, const void* qkv, void* out, int batch, int64_t t, int n_heads, int head_dim,
                          cudaStream_t stream) {
  if (batch <= 0 || t <= 0) return;
  const int64_t d = static_cast<int64_t>(n_heads) * head_dim;
  const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(head_dim));  // log2(e) / sqrt(hd)
  dim3 grid(static_cast<unsigned>((t + kRows - 1) / kRows), static_cast<unsigned>(n_heads), static_cast<unsigned>(batch));
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    if (head_dim == 64)
      launch_kernel(flash_wide_kernel<64, T>, grid, kThreads, 0, stream, static_cast<const T*>(qkv),
                    static_cast<T*>(out), t, d, scale_log2);
    else if (head_dim == 32)
      launch_kernel(flash_wide_kernel<32, T>, grid, kThreads, 0, stream, static_cast<const T*>(qkv),
                    static_cast<T*>(out), t, d, scale_log2);
    else
      throw Error(ErrorCode::Unavailable, "[cuda] flash attention supports head dims 32 and 64");
  });
}

}  // namespace hark::cuda
