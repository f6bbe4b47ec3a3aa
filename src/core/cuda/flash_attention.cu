// Encoder self-attention without a score matrix in memory (the flash-attention scheme):
// a block of 4 warps owns 64 query rows of one head; K/V tiles of 64 keys stream through
// shared memory (cp.async, two stages), S = QKᵀ and O += PV run on the tensor cores
// (mma m16n8k16, fp32 accumulators) and the softmax is kept online per row in registers.
// Head dim 64 (every Whisper size) or 32 (hark's bundled model). Shared-memory rows are
// XOR-swizzled in 16-byte chunks so that ldmatrix reads 8 rows of one column block
// without bank conflicts (with 32 dims, two rows share a bank set: 2-way at most).
// Measured on an H200 and left out: 4 blocks per SM by a register cap (spills: 64 → 71 µs
// per turbo layer) and exps on half2 (161 registers: 64 → 68.5 µs).
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/cuda/device/flash_tile.cuh"
#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kRows = 64;  // query rows per block (16 per warp)
constexpr int kKeys = 64;  // keys per tile
constexpr int kThreads = 128;

template <int HD, class T>
__global__ void __launch_bounds__(kThreads) flash_kernel(const T* __restrict__ qkv, T* __restrict__ out, int64_t t,
                                                         int64_t d, float scale_log2) {
  pdl_enter();
  constexpr int kHeadDim = HD, kSteps = HD / 16, kTiles = HD / 8;  // k-steps of Q·Kᵀ, n-tiles of O
  __shared__ __align__(128) T qs[kRows * kHeadDim];
  __shared__ __align__(128) T ks[2][kKeys * kHeadDim];
  __shared__ __align__(128) T vs[2][kKeys * kHeadDim];
  const int head = blockIdx.y;
  const int64_t ld = 3 * d;
  const T* base = qkv + blockIdx.z * t * ld + head * kHeadDim;
  const T* q_src = base;
  const T* k_src = base + d;
  const T* v_src = base + 2 * d;
  const int64_t q0 = static_cast<int64_t>(blockIdx.x) * kRows;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, tig = lane & 3;

  load_tile<HD, kRows, kThreads>(qs, q_src, ld, q0, t);
  load_tile<HD, kKeys, kThreads>(ks[0], k_src, ld, 0, t);
  load_tile<HD, kKeys, kThreads>(vs[0], v_src, ld, 0, t);
  cp_async_commit();

  unsigned qa[kSteps][4];
  float o[kTiles][4] = {};
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
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
      for (int kk = 0; kk < kSteps; ++kk)
        ldmatrix_x4(qa[kk], qs + swz<HD>(warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, kk * 16 + (lane >> 4) * 8));
    }
    // S = Q Kᵀ for this warp's 16 rows and the tile's 64 keys (8 tiles of 8 keys).
    float s[8][4] = {};
#pragma unroll
    for (int kk = 0; kk < kSteps; ++kk) {
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        unsigned b[4];
        ldmatrix_x4(b, ks[stage] + swz<HD>(np * 16 + (lane & 7) + (lane >> 4) * 8, kk * 16 + ((lane >> 3) & 1) * 8));
        mma_16816<T>(s[2 * np], qa[kk], b[0], b[1]);
        mma_16816<T>(s[2 * np + 1], qa[kk], b[2], b[3]);
      }
    }
    // Online softmax in the log2 domain; keys past the end get −∞.
    const int64_t key0 = static_cast<int64_t>(tile) * kKeys;
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const bool valid = key0 + j * 8 + tig * 2 + (e & 1) < t;
        s[j][e] = valid ? s[j][e] * scale_log2 : -INFINITY;
        mx[e >> 1] = fmaxf(mx[e >> 1], s[j][e]);
      }
    }
    float corr[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(m_run[r], mx[r]);
      corr[r] = exp2f(m_run[r] - m_new);
      m_run[r] = m_new;
      l_run[r] *= corr[r];
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[j][e] = exp2f(s[j][e] - m_run[e >> 1]);
        l_run[e >> 1] += s[j][e];
      }
    }
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) o[j][e] *= corr[e >> 1];
    }
    // O += P V: P's accumulator layout is the A-fragment layout of the next product.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const unsigned pa[4] = {pack2<T>(s[2 * kk][0], s[2 * kk][1]), pack2<T>(s[2 * kk][2], s[2 * kk][3]),
                              pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]), pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < kTiles / 2; ++dp) {
        unsigned b[4];
        ldmatrix_x4_trans(b, vs[stage] + swz<HD>(kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8, dp * 16 + (lane >> 4) * 8));
        mma_16816<T>(o[2 * dp], pa, b[0], b[1]);
        mma_16816<T>(o[2 * dp + 1], pa, b[2], b[3]);
      }
    }
    __syncthreads();
  }
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_run[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[r] = 1.0f / l;
  }
  T* dst = out + blockIdx.z * t * d + head * kHeadDim;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int64_t row = q0 + warp * 16 + g + r * 8;
    if (row >= t) continue;
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
      *reinterpret_cast<unsigned*>(dst + row * d + j * 8 + tig * 2) =
          pack2<T>(o[j][2 * r] * inv[r], o[j][2 * r + 1] * inv[r]);
  }
}

}  // namespace

void flash_attention(DType dt, const void* qkv, void* out, int batch, int64_t t, int n_heads, int head_dim,
                     cudaStream_t stream) {
  if (batch <= 0 || t <= 0) return;
  // Measurement switch (read at each launch, so a test can run both):
  // HARK_CUDA_FLASH=wide runs flash_attention_wide.cu's 128-row blocks.
  if (const char* env = std::getenv("HARK_CUDA_FLASH"); env && std::strcmp(env, "wide") == 0)
    return flash_attention_wide(dt, qkv, out, batch, t, n_heads, head_dim, stream);
  const int64_t d = static_cast<int64_t>(n_heads) * head_dim;
  const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(head_dim));  // log2(e) / sqrt(hd)
  dim3 grid(static_cast<unsigned>((t + kRows - 1) / kRows), static_cast<unsigned>(n_heads), static_cast<unsigned>(batch));
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    if (head_dim == 64)
      launch_kernel(flash_kernel<64, T>, grid, kThreads, 0, stream, static_cast<const T*>(qkv), static_cast<T*>(out), t, d, scale_log2);
    else if (head_dim == 32)
      launch_kernel(flash_kernel<32, T>, grid, kThreads, 0, stream, static_cast<const T*>(qkv), static_cast<T*>(out), t, d, scale_log2);
    else
      throw Error(ErrorCode::Unavailable, "[cuda] flash attention supports head dims 32 and 64");
  });
}

}  // namespace hark::cuda
