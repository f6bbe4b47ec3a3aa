// Attention over keys and values stored in q8_0 (blocks of 32 int8 values with an f16
// scale; --compute-type int8 keeps the cross-attention K/V so): a quarter of the bytes of
// fp32 K/V. Scores are integer dot products over each key's blocks (quant_gemm's
// kernels), the values are summed in fp32.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace hark {

// Query rows at most for this path (decoder steps, beams); longer queries widen K/V.
constexpr int64_t kQ8AttentionMaxRows = 16;

// Whether this head size is whole blocks of 32.
bool attention_q8_supported(int64_t head_dim);

// out[tq, d] = softmax(scale · q Kᵀ) V per head, K and V [tk, d] in q8_0; `weights`
// (optional) receives the softmax [n_heads, tq, tk]. Causal: row i sees keys up to
// i + causal_offset.
void attention_q8_kv(ThreadPool& pool, const float* q, int64_t tq, const uint8_t* k, const uint8_t* v, int64_t tk,
                     int64_t d, int n_heads, bool causal, int64_t causal_offset, float* out, float* weights);

}  // namespace hark
