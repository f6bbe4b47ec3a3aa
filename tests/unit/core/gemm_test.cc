// The CPU sgemm wrapper against a double-precision loop: every transpose combination,
// row and column splits over pools of several sizes, strided operands and beta.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/cpu/gemm.h"

namespace hark {
namespace {

struct Case {
  Trans ta, tb;
  int64_t m, n, k;
  int threads;
};

class GemmTest : public ::testing::TestWithParam<Case> {};

TEST_P(GemmTest, MatchesDoubleReference) {
  const Case c = GetParam();
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 7 + c.k));
  std::uniform_real_distribution<float> u(-1, 1);
  // Leading dimensions wider than the matrices, as for one head's columns of Q, K and V.
  const int64_t a_rows = c.ta == Trans::Yes ? c.k : c.m, a_cols = c.ta == Trans::Yes ? c.m : c.k;
  const int64_t b_rows = c.tb == Trans::Yes ? c.n : c.k, b_cols = c.tb == Trans::Yes ? c.k : c.n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = c.n + 2;
  std::vector<float> a(a_rows * lda), b(b_rows * ldb), out(c.m * ldc);
  for (auto& v : a) v = u(rng);
  for (auto& v : b) v = u(rng);
  for (auto& v : out) v = u(rng);
  const std::vector<float> before = out;
  const float alpha = 0.75f, beta = 0.5f;
  ThreadPool pool(c.threads);
  sgemm(pool, c.ta, c.tb, c.m, c.n, c.k, alpha, a.data(), lda, b.data(), ldb, beta, out.data(), ldc);
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double av = c.ta == Trans::Yes ? a[p * lda + i] : a[i * lda + p];
        const double bv = c.tb == Trans::Yes ? b[j * ldb + p] : b[p * ldb + j];
        s += av * bv;
      }
      const double want = alpha * s + beta * before[i * ldc + j];
      ASSERT_NEAR(out[i * ldc + j], want, 1e-4 * (1 + std::abs(want))) << "at " << i << "," << j;
    }
    // The padding between rows of C is not touched.
    for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[i * ldc + j], before[i * ldc + j]);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmTest,
    ::testing::Values(Case{Trans::No, Trans::Yes, 300, 70, 90, 2},    // row split (encoder linear)
                      Case{Trans::No, Trans::Yes, 1, 5000, 64, 2},    // column split (decoder gemv)
                      Case{Trans::No, Trans::No, 40, 900, 50, 3},     // column split, B not transposed
                      Case{Trans::Yes, Trans::No, 200, 60, 30, 4},    // A transposed, row split
                      Case{Trans::Yes, Trans::Yes, 33, 47, 29, 1},    // serial
                      Case{Trans::No, Trans::No, 7, 3, 5, 8},         // too small to split
                      Case{Trans::No, Trans::Yes, 0, 10, 10, 2}));    // empty

}  // namespace
}  // namespace hark
