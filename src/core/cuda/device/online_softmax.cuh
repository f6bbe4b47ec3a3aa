// The flash-attention softmax of one warp's 16 query rows, shared by the encoder's
// attention kernels (flash_attention.cu with mma.sync, flash_attention_wgmma.cu with
// wgmma) so that both compute every score with the same arithmetic. Scores of a 64-key
// tile arrive in the m16n8 accumulator layout (s[j][e]: row g + 8·(e / 2), key
// 8j + 2·tig + e % 2, with g = lane / 4, tig = lane % 4); the running maximum and sum of
// each of the thread's two rows stay in registers, in the log2 domain. Device helpers only.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/cuda/device/mma.cuh"

namespace hark::cuda::device {

// 2^x on the special-function unit, with results below 2^-126 flushed to zero. exp2f
// compiles (without fast math) to the same unit plus a range test and two predicated
// multiplies that keep such results as denormals: three more instructions per score, for
// probabilities that the 16-bit P of P·V cannot hold in f16 and that add nothing to a row
// sum of at least 1.
__device__ __forceinline__ float exp2_flush(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// The first half of a tile's online softmax: scales the scores, masks keys at or past t
// (kPartial: only the last tile of a row can be partial, and every earlier one is whole),
// updates the running maximum and sum, turns the scores into exp2(s - max), and gives each
// row's factor for the output accumulators (corr: 1 where the maximum did not move). The
// maximum is taken as a tree (the same value as a chain: max is exact), 4 dependent steps
// deep instead of 16.
template <bool kPartial>
__device__ __forceinline__ void softmax_tile_16x64(float (&s)[8][4], float (&m_run)[2], float (&l_run)[2],
                                                   float (&corr)[2], float scale_log2, int64_t key0, int tig,
                                                   int64_t t) {
  // Keys of this thread at or past `valid` are masked (kPartial only; a tile is 64 keys).
  const int valid = kPartial ? static_cast<int>(t - key0) - tig * 2 : 0;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[j][e] *= scale_log2;
      if constexpr (kPartial)
        if (j * 8 + (e & 1) >= valid) s[j][e] = -INFINITY;
    }
  }
  float mx[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float m[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) m[j] = fmaxf(s[j][2 * r], s[j][2 * r + 1]);
#pragma unroll
    for (int j = 0; j < 4; ++j) m[j] = fmaxf(m[j], m[j + 4]);
    mx[r] = fmaxf(fmaxf(m[0], m[2]), fmaxf(m[1], m[3]));
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    const float m_new = fmaxf(m_run[r], mx[r]);
    corr[r] = exp2_flush(m_run[r] - m_new);
    m_run[r] = m_new;
    l_run[r] *= corr[r];
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      s[j][e] = exp2_flush(s[j][e] - m_run[e >> 1]);
      l_run[e >> 1] += s[j][e];
    }
  }
}

// The same with the tile's kind decided at run time: one uniform branch a tile, so that
// whole tiles run without the mask's compares and selects.
__device__ __forceinline__ void softmax_tile_16x64(float (&s)[8][4], float (&m_run)[2], float (&l_run)[2],
                                                   float (&corr)[2], float scale_log2, int64_t key0, bool partial,
                                                   int tig, int64_t t) {
  if (partial)
    softmax_tile_16x64<true>(s, m_run, l_run, corr, scale_log2, key0, tig, t);
  else
    softmax_tile_16x64<false>(s, m_run, l_run, corr, scale_log2, key0, tig, t);
}

// The second half: o *= corr per row. Skipped where no row of the warp changed its
// maximum (every factor exactly 1, so the product would change nothing): after the first
// tiles of a row that is most tiles, and the multiply is one instruction per score.
template <int kTiles>
__device__ __forceinline__ void rescale_output(float (&o)[kTiles][4], const float (&corr)[2]) {
  if (!__any_sync(0xffffffffu, corr[0] != 1.0f || corr[1] != 1.0f)) return;
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) o[j][e] *= corr[e >> 1];
  }
}

// Both halves, for kernels that do not issue a product between them.
template <int kTiles>
__device__ __forceinline__ void online_softmax_16x64(float (&s)[8][4], float (&m_run)[2], float (&l_run)[2],
                                                     float (&o)[kTiles][4], float scale_log2, int64_t key0,
                                                     bool partial, int tig, int64_t t) {
  float corr[2];
  softmax_tile_16x64(s, m_run, l_run, corr, scale_log2, key0, partial, tig, t);
  rescale_output(o, corr);
}

// The probabilities of keys 16·kk .. 16·kk + 15 as the A fragment of P·V's k-step kk: the
// accumulator layout of S is the A-fragment layout of the next product.
template <class T>
__device__ __forceinline__ void p_fragment(const float (&s)[8][4], int kk, unsigned (&pa)[4]) {
  pa[0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
  pa[1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
  pa[2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
  pa[3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
}

// 1 / (the full softmax sum) of the thread's row r (0: row g, 1: row g + 8), from the
// partial sums that the quad's four threads hold.
__device__ __forceinline__ float softmax_inverse_sum(const float (&l_run)[2], int r) {
  float l = l_run[r];
  l += __shfl_xor_sync(0xffffffffu, l, 1);
  l += __shfl_xor_sync(0xffffffffu, l, 2);
  return 1.0f / l;
}

// Stores one warp's 16 output rows from row0 on (the thread's rows row0 + g and row0 + g + 8,
// rows at or past t skipped), each divided by its softmax sum, in T: kTiles blocks of 8
// head dims, rows `d` apart from dst.
template <class T, int kTiles>
__device__ __forceinline__ void store_rows_16(T* dst, int64_t d, const float (&o)[kTiles][4],
                                              const float (&l_run)[2], int64_t row0, int g, int tig, int64_t t) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const float inv = softmax_inverse_sum(l_run, r);
    const int64_t row = row0 + g + r * 8;
    if (row >= t) continue;
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
      *reinterpret_cast<unsigned*>(dst + row * d + j * 8 + tig * 2) = pack2<T>(o[j][2 * r] * inv, o[j][2 * r + 1] * inv);
  }
}

}  // namespace hark::cuda::device
