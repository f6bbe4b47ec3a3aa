// Encoder self-attention on Hopper's warpgroup MMA (wgmma, sm_90a), head dim 64: the
// flash-attention scheme of flash_attention.cu with both products issued per warpgroup.
//
// Why: the mma.sync kernel reads each K and V fragment from shared memory into every
// warp's registers (ldmatrix), so a warp of 32 query rows moves 16 KB through shared memory
// per 64-key tile for 262 144 multiply-adds — as many cycles of shared-memory bandwidth as
// of tensor-core work — and mma.sync does not reach Hopper's full tensor rate. wgmma reads
// B straight from shared memory once per warpgroup of 64 rows: half the traffic per
// product, issued asynchronously. The kernel at 128 rows per block ran at ~240 TFLOP/s on
// an H200 (1.52 ms of a batch-32 large-v3-turbo window's 4.4 ms of kernels, 2026-12-01).
//
// Layout: a block of two warpgroups (256 threads) owns 128 query rows of one head, each
// warpgroup 64. Q waits in shared memory and is read into registers (the A fragments of
// S = Q·Kᵀ) at every tile; K and V tiles of 64 keys stream through shared memory in two
// stages (cp.async), stored with the 128-byte swizzle that the wgmma descriptors name;
// S (64 × 64 per warpgroup, fp32) is four m64n64k16 products over the head dim with K as
// a K-major B; the softmax runs on S in registers with the same arithmetic as the mma.sync
// kernel (device/online_softmax.cuh); P, converted in registers, is the A of O += P·V,
// V an MN-major B (its rows are keys). Keys past the end arrive as zeros and are masked on
// the last tile; query rows past the end are computed on zeros and not stored.
#include <cuda_runtime.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/cuda/cuda_check.h"
#include "core/cuda/device/mma.cuh"
#include "core/cuda/device/online_softmax.cuh"
#include "core/cuda/device/pdl.cuh"
#include "core/cuda/device/swizzled_tile.cuh"
#include "core/cuda/device/wgmma.cuh"
#include "core/cuda/dispatch.cuh"
#include "core/cuda/kernels.cuh"
#include "core/cuda/launch.cuh"

namespace hark::cuda {
namespace {

using namespace device;
constexpr int kHd = 64;                    // head dim: a K/V row is 128 bytes, one swizzle atom wide
constexpr int kKeys = 64;                  // keys per tile
constexpr int kRows = 128;                 // query rows per block
constexpr int kThreads = 256;              // two warpgroups
constexpr int kTileBytes = kKeys * kHd * 2;  // one K or V stage: 8 KB
// Q 16 KB + K and V 2 × 8 KB each, and room to start the tiles on a 1024-byte boundary.
constexpr int kSmemBytes = kRows * kHd * 2 + 4 * kTileBytes + 1024;

// What both kernels below share: the shared-memory tiles (Q, then two stages of K and of
// V, each starting on a 1024-byte boundary as the swizzle needs: it is applied to address
// bits), this block's head and first query row, and the thread's place in the accumulator
// layout. Stage s of K is at ks + s·kTile, of V at vs + s·kTile (no array of pointers: a
// run-time index into one would put it on the stack).
constexpr int kTile = kKeys * kHd;
template <class T>
struct BlockTiles {
  T* qs;
  T* ks;
  T* vs;
  QkvHead<T> head;
  int64_t q0;
  int warp, lane, g, tig;
  // This warp's 16 rows within the block: warpgroup warp / 4 owns rows 64·(warp / 4) ..,
  // its warp w % 4 the 16 from 16·(w % 4), as the wgmma accumulator layout has them.
  int row_in_block;
};
template <class T>
__device__ __forceinline__ BlockTiles<T> block_tiles(unsigned char* smem_raw, const T* qkv, int64_t t, int64_t d) {
  T* qs = reinterpret_cast<T*>(smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023));
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  return {qs,       qs + kRows * kHd, qs + kRows * kHd + 2 * kTile, block_qkv_head<kHd>(qkv, t, d),
          static_cast<int64_t>(blockIdx.x) * kRows, warp, lane, lane >> 2, lane & 3, warp * 16};
}

// HARK_CUDA_FLASH=wgmma (the default until its overlapped form below replaced it): a
// warpgroup waits for S = Q·Kᵀ, runs the softmax, then waits for P·V.
template <class T>
__global__ void __launch_bounds__(kThreads, 2) flash_wgmma_kernel(const T* __restrict__ qkv, T* __restrict__ out,
                                                                 int64_t t, int64_t d, float scale_log2) {
#ifdef HARK_WGMMA
  pdl_enter();
  extern __shared__ unsigned char smem_raw[];
  const BlockTiles<T> b = block_tiles(smem_raw, qkv, t, d);
  const QkvHead<T>& h = b.head;
  load_tile<kHd, kRows, kThreads>(b.qs, h.q, h.ld, b.q0, t);
  load_tile<kHd, kKeys, kThreads>(b.ks, h.k, h.ld, 0, t);
  load_tile<kHd, kKeys, kThreads>(b.vs, h.v, h.ld, 0, t);
  cp_async_commit();

  unsigned qa[kHd / 16][4];
  float o[8][4] = {};
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  const int tiles = static_cast<int>((t + kKeys - 1) / kKeys);
  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile & 1;
    if (tile + 1 < tiles) {
      const int64_t next = static_cast<int64_t>(tile + 1) * kKeys;
      load_tile<kHd, kKeys, kThreads>(b.ks + (stage ^ 1) * kTile, h.k, h.ld, next, t);
      load_tile<kHd, kKeys, kThreads>(b.vs + (stage ^ 1) * kTile, h.v, h.ld, next, t);
      cp_async_commit();
      cp_async_wait<1>();
    } else {
      cp_async_wait<0>();
    }
    fence_proxy_async_shared();  // the tile's cp.async writes, for wgmma's reads
    __syncthreads();
    // Q's A fragments, read again at every tile. Read once and kept in registers across
    // the tiles, they came out wrong on an H200 (2026-12-02): every length past one tile
    // differed from the mma.sync kernel by 0.58-0.92 relative L2, one tile was bit-identical,
    // and reading them at every tile made every case bit-identical (the registers that
    // wgmma reads asynchronously are not kept across the loop; the cause in the generated
    // code was not established). 2 KB of shared memory a warp per tile, beside 16 KB of K/V.
#pragma unroll
    for (int kk = 0; kk < kHd / 16; ++kk)
      ldmatrix_x4(qa[kk],
                  b.qs + swz<kHd>(b.row_in_block + (b.lane & 7) + ((b.lane >> 3) & 1) * 8, kk * 16 + (b.lane >> 4) * 8));
    // S = Q Kᵀ: K's rows are the keys (B is K-major); each k-step of 16 head dims is 32
    // bytes further along the rows.
    float s[8][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHd / 16; ++kk)
      wgmma_64x64x16<T, false>(s, qa[kk], wgmma_desc_sw128(b.ks + stage * kTile + kk * 16, 16, 1024), kk > 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(s);

    const int64_t key0 = static_cast<int64_t>(tile) * kKeys;
    online_softmax_16x64(s, m_run, l_run, o, scale_log2, key0, key0 + kKeys > t, b.tig, t);

    // O += P V: P's accumulators are the A fragments; V's rows are keys (B is MN-major),
    // each k-step of 16 keys 16 rows (2 KB) further on.
    unsigned pa[4][4];
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) p_fragment<T>(s, kk, pa[kk]);
    fence_registers(o);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_64x64x16<T, true>(o, pa[kk], wgmma_desc_sw128(b.vs + stage * kTile + kk * 16 * kHd, 1024, 1024), true);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(o);
    __syncthreads();  // every warpgroup is done with this stage before it is refilled
  }
  store_rows_16<T>(out + blockIdx.z * t * d + blockIdx.y * kHd, d, o, l_run, b.q0 + b.row_in_block, b.g, b.tig, t);
#else
  __trap();  // launched only where the module holds sm_90a code (flash_attention_wgmma below)
#endif
}

// The same attention with the two products of a tile overlapped: the default on sm_90
// since 2026-12-02. In the kernel above a warpgroup waits for S = Q·Kᵀ, runs the softmax,
// then waits for P·V: its tensor cores idle during its softmax, which at head dim 64 costs
// about as many cycles as both products. Here tile j issues S_j = Q·K_jᵀ and
// O += P_{j-1}·V_{j-1} together, runs the softmax of S_j while the second product still
// runs, and waits for it only before rescaling O. Every output sees the same operations in
// the same order as above (O ← O·corr_j + P_j·V_j), so the results are the same bit for
// bit. Q is read by wgmma from shared memory (no A registers to keep while P's are live).
// K_j and V_{j-1} are read in tile j, so V runs a tile behind K in the two-stage ring, and
// one block barrier per tile both publishes the tile's loads and frees the stages that the
// next loads fill.
template <class T>
__global__ void __launch_bounds__(kThreads, 2) flash_wgmma_pipelined_kernel(const T* __restrict__ qkv,
                                                                           T* __restrict__ out, int64_t t, int64_t d,
                                                                           float scale_log2) {
#ifdef HARK_WGMMA
  pdl_enter();
  extern __shared__ unsigned char smem_raw[];
  const BlockTiles<T> b = block_tiles(smem_raw, qkv, t, d);
  const QkvHead<T>& h = b.head;
  const T* q_warpgroup = b.qs + (b.warp / 4) * 64 * kHd;  // this warpgroup's 64 rows, a K-major A
  load_tile<kHd, kRows, kThreads>(b.qs, h.q, h.ld, b.q0, t);
  load_tile<kHd, kKeys, kThreads>(b.ks, h.k, h.ld, 0, t);
  cp_async_commit();

  float o[8][4] = {};
  unsigned pa[4][4] = {};
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.0f, 0.0f};
  const int tiles = static_cast<int>((t + kKeys - 1) / kKeys);
  for (int tile = 0; tile < tiles; ++tile) {
    const int stage = tile & 1;
    // K_tile and V_{tile-1}, loaded during the tile before, are in; and every warpgroup is
    // past that tile, so K_{tile-1}'s and V_{tile-2}'s stages are free for the next loads.
    cp_async_wait<0>();
    fence_proxy_async_shared();
    __syncthreads();
    if (tile + 1 < tiles)
      load_tile<kHd, kKeys, kThreads>(b.ks + (stage ^ 1) * kTile, h.k, h.ld, static_cast<int64_t>(tile + 1) * kKeys, t);
    load_tile<kHd, kKeys, kThreads>(b.vs + stage * kTile, h.v, h.ld, static_cast<int64_t>(tile) * kKeys, t);
    cp_async_commit();

    float s[8][4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kHd / 16; ++kk)
      wgmma_64x64x16_ss<T>(s, wgmma_desc_sw128(q_warpgroup + kk * 16, 16, 1024),
                           wgmma_desc_sw128(b.ks + stage * kTile + kk * 16, 16, 1024), kk > 0);
    wgmma_commit();
    if (tile > 0) {
      const T* v_prev = b.vs + (stage ^ 1) * kTile;
      wgmma_fence();  // ptxas would add it (C7519): the branch hides the fence above from it
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        wgmma_64x64x16<T, true>(o, pa[kk], wgmma_desc_sw128(v_prev + kk * 16 * kHd, 1024, 1024), true);
      wgmma_commit();
      wgmma_wait<1>();  // S_tile is done; P_{tile-1}·V_{tile-1} may still run
    } else {
      wgmma_wait<0>();
    }
    fence_registers(s);
    const int64_t key0 = static_cast<int64_t>(tile) * kKeys;
    float corr[2];
    softmax_tile_16x64(s, m_run, l_run, corr, scale_log2, key0, key0 + kKeys > t, b.tig, t);
    wgmma_wait<0>();
    fence_registers(o);
    rescale_output(o, corr);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) p_fragment<T>(s, kk, pa[kk]);
  }
  // The last tile's P·V, once its V is in.
  cp_async_wait<0>();
  fence_proxy_async_shared();
  __syncthreads();
  const T* v_last = b.vs + ((tiles - 1) & 1) * kTile;
  fence_registers(o);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    wgmma_64x64x16<T, true>(o, pa[kk], wgmma_desc_sw128(v_last + kk * 16 * kHd, 1024, 1024), true);
  wgmma_commit();
  wgmma_wait<0>();
  fence_registers(o);
  store_rows_16<T>(out + blockIdx.z * t * d + blockIdx.y * kHd, d, o, l_run, b.q0 + b.row_in_block, b.g, b.tig, t);
#else
  __trap();
#endif
}

// Whether this process's current GPU runs the kernel: compute capability 9.0 exactly (the
// sm_90a code is not forward compatible) and a module built with sm_90a code.
bool wgmma_device() {
#ifdef HARK_CUDA_SM90A
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) return false;
  return major == 9 && minor == 0;
#else
  return false;
#endif
}

// Launches one of the kernels above, first giving it the shared memory it needs: over the
// 48 KB a block gets without asking, set once per kernel (the attribute is the function's,
// for every device).
template <auto kKernel, class T>
void launch_flash(dim3 grid, cudaStream_t stream, const T* qkv, T* out, int64_t t, int64_t d, float scale_log2) {
  static const bool sized = [] {
    check(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes),
          "flash attention shared memory");
    return true;
  }();
  (void)sized;
  launch_kernel(kKernel, grid, kThreads, kSmemBytes, stream, qkv, out, t, d, scale_log2);
}

}  // namespace

bool flash_attention_wgmma_applies(int head_dim) {
  if (head_dim != kHd) return false;
  // Per device, asked once each (a process may drive GPUs of different kinds).
  constexpr int kDevices = 64;
  static std::atomic<int8_t> known[kDevices] = {};  // 0 not asked yet, 1 yes, -1 no
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0 || device >= kDevices) return false;
  int8_t v = known[device].load(std::memory_order_relaxed);
  if (v == 0) known[device].store(v = wgmma_device() ? 1 : -1, std::memory_order_relaxed);
  return v > 0;
}

void flash_attention_wgmma(DType dt, const void* qkv, void* out, int batch, int64_t t, int n_heads,
                           cudaStream_t stream, WgmmaFlash variant) {
  const int64_t d = static_cast<int64_t>(n_heads) * kHd;
  const float scale_log2 = 1.4426950408889634f / std::sqrt(static_cast<float>(kHd));  // log2(e) / sqrt(hd)
  dim3 grid(static_cast<unsigned>((t + kRows - 1) / kRows), static_cast<unsigned>(n_heads), static_cast<unsigned>(batch));
  dispatch_half(dt, [&](auto tag) {
    using T = decltype(tag);
    const T* in = static_cast<const T*>(qkv);
    T* o = static_cast<T*>(out);
    switch (variant) {
      case WgmmaFlash::kSerial:
        launch_flash<flash_wgmma_kernel<T>>(grid, stream, in, o, t, d, scale_log2);
        break;
      case WgmmaFlash::kPipelined:
        launch_flash<flash_wgmma_pipelined_kernel<T>>(grid, stream, in, o, t, d, scale_log2);
        break;
    }
  });
}

}  // namespace hark::cuda
