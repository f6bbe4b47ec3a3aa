// Attention for a few query rows (decoder steps, beams) with direct loops instead of
// sgemm calls: the cross-attention over 1500 keys is bound by reading K and V (kept in
// f16 they are half the bytes; each head's slice is prefetched, a stride the hardware
// does not follow), and the self-attention over the short cache costs less than a GEMM
// library call. Scores, softmax and sums are fp32.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace hark {

// Query rows at most for the direct loops; longer queries go through sgemm.
constexpr int64_t kAttentionRowsMax = 16;

// One attention call over cached rows: query row i at q + i·ldq, key / value row t at
// k / v + t·ldk / t·ldv (in values of kv_dtype: f32, f16, or q8_0 for attention_q8), output
// row i at out + i·ldo. Heads are column blocks of head_dim.
struct CachedRows {
  const float* q;
  int64_t ldq;
  const void* k;
  int64_t ldk;
  const void* v;
  int64_t ldv;
  DType kv_dtype;
  float* out;
  int64_t ldo;
  int64_t tq, tk;
};

// Whether the vectorised loops handle this head size (multiples of 8).
bool attention_rows_supported(int64_t head_dim);

// out = softmax(scale · q Kᵀ) V per head for f32 or f16 K/V; `weights` (optional) receives
// the softmax [n_heads, tq, tk]. Causal: row i sees keys up to i + causal_offset.
void attention_rows(ThreadPool& pool, const CachedRows& a, int n_heads, int64_t head_dim, bool causal,
                    int64_t causal_offset, float* weights);

}  // namespace hark
