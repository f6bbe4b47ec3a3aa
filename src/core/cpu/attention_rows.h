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

// Query rows at most for this path; longer queries go through sgemm.
constexpr int64_t kAttentionRowsMax = 16;

// Whether the vectorised loops handle this head size (multiples of 8).
bool attention_rows_supported(int64_t head_dim);

// out[tq, d] = softmax(scale · q Kᵀ) V per head, K and V [tk, d] in f32 or f16
// (`kv_dtype`); `weights` (optional) receives the softmax [n_heads, tq, tk]. Causal: row i
// sees keys up to i + causal_offset.
void attention_rows(ThreadPool& pool, const float* q, int64_t tq, const void* k, const void* v, DType kv_dtype,
                    int64_t tk, int64_t d, int n_heads, bool causal, int64_t causal_offset, float* out,
                    float* weights);

}  // namespace hark
