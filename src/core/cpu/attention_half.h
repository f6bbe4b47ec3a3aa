// Attention over keys and values stored in f16: the cross-attention of decoder steps,
// whose K/V (1500 rows per layer) are read once per step. Half the bytes of fp32 K/V;
// scores, softmax and sums stay fp32.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace hark {

// Query rows at most for this path (decoder steps, beams); longer queries widen K/V.
constexpr int64_t kHalfAttentionMaxRows = 16;

// Whether the vectorised loops handle this head size (multiples of 8).
bool attention_half_supported(int64_t head_dim);

// out[tq, d] = softmax(scale · q Kᵀ) V per head, K and V [tk, d] in f16; `weights`
// (optional) receives the softmax [n_heads, tq, tk]. Causal: row i sees keys up to
// i + causal_offset.
void attention_half_kv(ThreadPool& pool, const float* q, int64_t tq, const uint16_t* k, const uint16_t* v, int64_t tk,
                       int64_t d, int n_heads, bool causal, int64_t causal_offset, float* out, float* weights);

}  // namespace hark
