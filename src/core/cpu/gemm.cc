#include "core/cpu/gemm.h"

#include <string>

#include "hark/error.h"

#if HARK_GEMM_DNNL
#include <oneapi/dnnl/dnnl.h>
// oneDNN's Debian build uses OpenMP threads; each calling thread asks it for a team of one.
extern "C" void omp_set_num_threads(int);
#else
#include <cblas.h>
#endif

namespace hark {
namespace {

// Below this many multiply-adds a product is cheaper than waking the pool.
constexpr int64_t kSerialWork = int64_t{1} << 17;

#if HARK_GEMM_DNNL
void single_threaded() {
  thread_local bool done = false;
  if (!done) {
    omp_set_num_threads(1);
    done = true;
  }
}
#else
void single_threaded() {
  static const bool done = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)done;
}
#endif

}  // namespace

void sgemm_serial(Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  single_threaded();
#if HARK_GEMM_DNNL
  const dnnl_status_t st = dnnl_sgemm(trans_a == Trans::Yes ? 'T' : 'N', trans_b == Trans::Yes ? 'T' : 'N', m, n, k,
                                      alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success)
    throw Error(ErrorCode::Internal, "[cpu] oneDNN sgemm failed (status " + std::to_string(static_cast<int>(st)) +
                                         ") for " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                                         std::to_string(k));
#else
  cblas_sgemm(CblasRowMajor, trans_a == Trans::Yes ? CblasTrans : CblasNoTrans,
              trans_b == Trans::Yes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
}

void sgemm(ThreadPool& pool, Trans trans_a, Trans trans_b, int64_t m, int64_t n, int64_t k, float alpha,
           const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (pool.size() == 1 || m * n * k < kSerialWork) {
    sgemm_serial(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (m >= n) {
    // Row blocks of op(A) and C; B is shared.
    pool.parallel_for(m, [&](int64_t begin, int64_t end) {
      const float* a_block = trans_a == Trans::Yes ? a + begin : a + begin * lda;
      sgemm_serial(trans_a, trans_b, end - begin, n, k, alpha, a_block, lda, b, ldb, beta, c + begin * ldc, ldc);
    }, 16);
  } else {
    // Column blocks of op(B) and C; A is shared (the decoder's weight-heavy products).
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      const float* b_block = trans_b == Trans::Yes ? b + begin * ldb : b + begin;
      sgemm_serial(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_block, ldb, beta, c + begin, ldc);
    }, 64);
  }
}

const char* gemm_library() {
#if HARK_GEMM_DNNL
  static const std::string name = [] {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  }();
  return name.c_str();
#else
  return "OpenBLAS";
#endif
}

}  // namespace hark
