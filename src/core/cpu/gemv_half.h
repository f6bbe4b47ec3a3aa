// y[m, n] = x[m, k] · w[n, k]ᵀ (+ bias) for a few rows of x (decoder steps, beams) with
// half-precision weights read directly: at batch 1 the decoder is bound by weight reads,
// and fp16 weights are half the bytes of an fp32 copy. Arithmetic is fp32.
#pragma once

#include <cstdint>

#include "core/tensor.h"
#include "core/thread_pool.h"

namespace hark {

// Rows of x processed together per pass over w (larger m is split into passes).
constexpr int64_t kHalfGemvMaxRows = 8;

void gemv_half(ThreadPool& pool, const float* x, int64_t m, int64_t k, const uint16_t* w, DType w_dtype, int64_t n,
               const float* bias, float* y);

}  // namespace hark
