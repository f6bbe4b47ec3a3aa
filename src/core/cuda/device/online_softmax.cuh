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

// Scales the tile's scores, masks keys at or past t (checked only on the last, partial
// tile: every earlier tile is whole), updates the running maximum and sum, turns the
// scores into exp2(s - max) and rescales the output accumulators o by the change of max.
template <int kTiles>
__device__ __forceinline__ void online_softmax_16x64(float (&s)[8][4], float (&m_run)[2], float (&l_run)[2],
                                                     float (&o)[kTiles][4], float scale_log2, int64_t key0,
                                                     bool partial, int tig, int64_t t) {
  float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const bool valid = !partial || key0 + j * 8 + tig * 2 + (e & 1) < t;
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

}  // namespace hark::cuda::device
