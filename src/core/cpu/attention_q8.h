// Attention over keys and values stored in q8_0 (blocks of 32 int8 values with an f16
// scale; --compute-type int8 keeps the cross-attention K/V so): a quarter of the bytes of
// fp32 K/V. Scores are integer dot products over each key's blocks (quant_gemm's
// kernels), the values are summed in fp32.
#pragma once

#include <cstdint>

#include "core/cpu/attention_rows.h"
#include "core/thread_pool.h"

namespace hark {

// Whether this head size is whole blocks of 32.
bool attention_q8_supported(int64_t head_dim);

// out = softmax(scale · q Kᵀ) V per head, K and V rows in q8_0 (a.k / a.v point at the
// first block of the K / V columns; a.ldk / a.ldv count values); `weights` (optional)
// receives the softmax [n_heads, tq, tk]. Causal: row i sees keys up to i + causal_offset.
void attention_q8(ThreadPool& pool, const CachedRows& a, int n_heads, int64_t head_dim, bool causal,
                  int64_t causal_offset, float* weights);

}  // namespace hark
