// Row-major single-precision matrix product for the CPU backend:
//   C[m×n] = alpha · op(A)[m×k] · op(B)[k×n] + beta · C.
// hark cuts each product into row (or column) blocks over its own ThreadPool and has the
// BLAS library run every block on one thread. Then only one set of worker threads exists:
// no OpenMP or OpenBLAS team sits spinning on the cores while the pool runs the layer
// norms, softmaxes and GELUs between two products.
#pragma once

#include <cstdint>

#include "core/thread_pool.h"

namespace hark {

enum class Trans { No, Yes };

// Splits the product over `pool` when it is big enough to be worth it.
void sgemm(ThreadPool& pool, Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The same product on the calling thread only (for callers that already run in parallel).
void sgemm_serial(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The library behind sgemm, for logs and `hark bench`: "oneDNN 2.6.3" or "OpenBLAS".
const char* gemm_library();

}  // namespace hark
