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
// Products of at most this many rows (decoder steps of a batch) use gemv_rows on the CPU.
constexpr int64_t kRowExactMaxRows = 32;

// The same for fp32, fp16 or bf16 weights. Every (row of x, row of w) dot product has its
// own accumulator and summation order, so a row's result is the same bit for bit whatever
// the other rows are and however many there are: a sequence decoded in a batch gets
// exactly the logits it gets alone.
void gemv_rows(ThreadPool& pool, const float* x, int64_t m, int64_t k, const void* w, DType w_dtype, int64_t n,
               const float* bias, float* y);

void gemv_half(ThreadPool& pool, const float* x, int64_t m, int64_t k, const uint16_t* w, DType w_dtype, int64_t n,
               const float* bias, float* y);

}  // namespace hark
