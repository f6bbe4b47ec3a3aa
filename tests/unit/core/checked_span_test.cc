// The sanitizer build runs the hot kernels uninstrumented and checks their spans instead
// (core/checked_span.h): a kernel handed a buffer shorter than its arguments say must
// still stop with AddressSanitizer's report. In other builds these tests skip.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/checked_span.h"
#include "core/cpu/cpu_backend.h"
#include "core/cpu/gemv_half.h"
#include "core/cpu/quant_gemm.h"
#include "core/cpu/vector_math.h"
#include "core/thread_pool.h"

namespace hark {
namespace {

#if defined(HARK_ADDRESS_SANITIZER)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

class CheckedSpanDeath : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kSanitized) GTEST_SKIP() << "only the AddressSanitizer build checks spans";
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
};

TEST(CheckedSpan, AddressableSpansPass) {
  std::vector<float> v(100, 1.0f);
  check_span(v.data(), 100);
  check_span(v.data() + 99, 1);
  check_span(v.data(), 0);
  check_strided(v.data(), 10, 10, 10);
  check_strided(v.data() + 4, 10, 10, 6);  // the last row's slice ends at element 99
  float on_stack[8] = {};
  check_span(on_stack, 8);
}

TEST_F(CheckedSpanDeath, HeapOverflowByOneElementIsReported) {
  auto v = std::make_unique<float[]>(16);
  EXPECT_DEATH(check_span(v.get(), 17), "heap-buffer-overflow");
}

TEST_F(CheckedSpanDeath, StridedSliceOverflowIsReported) {
  auto v = std::make_unique<float[]>(100);
  // 10 rows of stride 10, a slice of 6 starting at column 5: the last row ends at 101.
  EXPECT_DEATH(check_strided(v.get() + 5, 10, 10, 6), "heap-buffer-overflow");
}

TEST_F(CheckedSpanDeath, FreedMemoryIsReported) {
  float* p = new float[8];
  delete[] p;
  EXPECT_DEATH(check_span(p, 8), "heap-use-after-free");
}

// The kernels themselves: each checks what it will read and write before its loop.
TEST_F(CheckedSpanDeath, SoftmaxLongerThanItsBufferIsReported) {
  auto v = std::make_unique<float[]>(30);
  for (int i = 0; i < 30; ++i) v[i] = static_cast<float>(i);
  EXPECT_DEATH(softmax_row(v.get(), 30, 32), "heap-buffer-overflow");
}

TEST_F(CheckedSpanDeath, LayerNormWithAShortGammaIsReported) {
  std::vector<float> x(64, 1.0f), beta(64, 0.0f), y(64);
  auto gamma = std::make_unique<float[]>(63);
  EXPECT_DEATH(layer_norm_row(x.data(), gamma.get(), beta.data(), 64, 1e-5f, y.data()), "heap-buffer-overflow");
}

TEST_F(CheckedSpanDeath, GeluPastTheEndIsReported) {
  auto v = std::make_unique<float[]>(40);
  EXPECT_DEATH(gelu_inplace(v.get(), 41), "heap-buffer-overflow");
}

// The decoder's GEMV: weights one row short of n rows of k.
TEST_F(CheckedSpanDeath, GemvOverShortWeightsIsReported) {
  constexpr int64_t k = 64, n = 16;
  std::vector<float> x(k, 0.5f), y(n);
  auto w = std::make_unique<float[]>((n - 1) * k);
  ThreadPool pool(1);
  EXPECT_DEATH(gemv_rows(pool, x.data(), 1, k, w.get(), DType::F32, n, nullptr, y.data()), "heap-buffer-overflow");
}

// Attention of one decoder row (the direct loops of a few-query call): a value cache one
// row short of the keys.
TEST_F(CheckedSpanDeath, AttentionOverAShortValueCacheIsReported) {
  constexpr int n_heads = 2;
  constexpr int64_t hd = 64, tk = 24, width = n_heads * hd;
  std::vector<float> q(width, 0.1f), k(tk * width, 0.1f), out(width);
  auto v = std::make_unique<float[]>((tk - 1) * width);
  const AttentionRows a{q.data(), width, k.data(), width, v.get(), width, out.data(), width, 1, tk};
  ThreadPool pool(1);
  EXPECT_DEATH(cpu_attend(pool, a, n_heads, hd, false, 0, nullptr), "heap-buffer-overflow");
}

// The int8 dot products, whose instruction-set files the sanitizer build compiles without
// instrumentation: q8_0 weights one row short, on every instruction set this machine has.
TEST_F(CheckedSpanDeath, QuantizedDotOverShortWeightsIsReported) {
  constexpr int64_t k = 64, n = 8;
  const size_t row_bytes = dtype_nbytes(DType::Q8_0, k);
  std::vector<float> x(k, 0.5f), y(n);
  auto w = std::make_unique<uint8_t[]>((n - 1) * row_bytes);
  const std::string chosen = quant_isa();
  for (const char* isa : {"avx512-vnni", "avx2", "scalar"}) {
    if (!set_quant_isa(isa)) continue;
    EXPECT_DEATH(quant_dot_serial(x.data(), k, DType::Q8_0, w.get(), row_bytes, n, y.data()), "heap-buffer-overflow")
        << isa;
  }
  set_quant_isa(chosen);
}

}  // namespace
}  // namespace hark
