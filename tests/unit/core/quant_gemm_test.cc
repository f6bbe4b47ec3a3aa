// Products with quantized weights, on every instruction-set path this CPU has: against
// x · dequantize(w)ᵀ in double precision, within the error that quantizing x per block
// of 32 to int8 can cause (the integer path) or fp32 rounding (the sgemm panel path).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/cpu/cpu_backend.h"
#include "core/cpu/quant_dot.h"
#include "core/cpu/quant_gemm.h"
#include "core/ops.h"
#include "core/quant_format.h"
#include "test_support.h"

namespace hark {
namespace {

struct Problem {
  int64_t m, n, k;
  std::vector<float> x, bias;
  Tensor w;
  std::vector<float> w_values;  // dequantized
};

Problem make_problem(DType dtype, int64_t m, int64_t n, int64_t k, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Problem p{m, n, k, std::vector<float>(m * k), std::vector<float>(n), Tensor::empty({n, k}, dtype), {}};
  for (auto& v : p.x) v = normal(rng);
  for (int64_t i = 0; i < m; ++i) p.x[i * k + 5] *= 8.0f;  // an outlier per row, as activations have
  for (auto& v : p.bias) v = normal(rng);
  std::vector<float> w(n * k);
  for (auto& v : w) v = 0.05f * normal(rng);
  quant::quantize_row(dtype, w.data(), p.w.raw(), n * k);
  p.w_values = p.w.to_vector();
  return p;
}

// |exact − got| may reach Σ over blocks of (largest |x| in the block / 254) · Σ |w| there.
void expect_close(const Problem& p, const std::vector<float>& y, bool integer_path, const std::string& what) {
  for (int64_t r = 0; r < p.m; ++r) {
    for (int64_t j = 0; j < p.n; ++j) {
      double exact = p.bias[j], bound = 1e-4 * (1 + std::fabs(p.bias[j]));
      for (int64_t b = 0; b < p.k; b += 32) {
        double amax = 0, wsum = 0;
        for (int64_t i = b; i < b + 32; ++i) {
          exact += static_cast<double>(p.x[r * p.k + i]) * p.w_values[j * p.k + i];
          amax = std::max(amax, static_cast<double>(std::fabs(p.x[r * p.k + i])));
          wsum += std::fabs(p.w_values[j * p.k + i]);
        }
        bound += (integer_path ? amax / 254.0 : amax * 1e-6) * wsum * 1.01;
      }
      ASSERT_NEAR(y[r * p.n + j], exact, bound) << what << " row " << r << " col " << j;
    }
  }
}

class QuantGemm : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (!set_quant_isa(GetParam())) GTEST_SKIP() << "this CPU has no " << GetParam();
  }
  void TearDown() override {  // back to the best path
    if (!set_quant_isa("avx512-vnni") && !set_quant_isa("avx2")) set_quant_isa("scalar");
  }
};

TEST_P(QuantGemm, EveryFormatAndRowCountMatchesTheDequantizedProduct) {
  ThreadPool pool(2);
  for (const quant::BlockInfo& f : quant::formats()) {
    // An odd number of 32-blocks (224 = 7 · 32) as well as an even one.
    for (int64_t k : {f.elems == 32 ? int64_t{224} : int64_t{256}, int64_t{512}}) {
      for (int64_t m : {1, 2, 3, 4, 5, 8, 13, 40}) {
        const Problem p = make_problem(f.dtype, m, 37, k, static_cast<unsigned>(m * 100 + k + f.ggml_type));
        // Output rows 3 values apart more than n (packed products write column blocks).
        const int64_t ldy = p.n + 3;
        std::vector<float> strided(m * ldy, -7.0f), y(m * p.n);
        quant_linear(pool, p.x.data(), m, p.k, p.w, p.bias.data(), strided.data(), ldy);
        for (int64_t r = 0; r < m; ++r) {
          std::copy_n(strided.data() + r * ldy, p.n, y.data() + r * p.n);
          for (int64_t j = p.n; j < ldy; ++j) ASSERT_EQ(strided[r * ldy + j], -7.0f) << "wrote past a row";
        }
        // Many rows on VNNI quantize x as the few-row integer path does (the formats it takes).
        const bool integer =
            m <= 2 * kQuantGemvMaxRows || (quant::vnni_tiles_take(f.dtype) && std::string(GetParam()) == "avx512-vnni");
        expect_close(p, y, integer, std::string(f.name) + " m=" + std::to_string(m) + " k=" + std::to_string(k));
      }
    }
  }
}

TEST_P(QuantGemm, AgreesWithThePortablePath) {
  ThreadPool pool(1);
  for (const quant::BlockInfo& f : quant::formats()) {
    const Problem p = make_problem(f.dtype, 5, 70, f.elems == 32 ? 480 : 768, 7);  // 15 blocks of 32
    std::vector<float> mine(5 * 70), portable(5 * 70);
    quant_linear(pool, p.x.data(), 5, p.k, p.w, nullptr, mine.data(), 70);
    ASSERT_TRUE(set_quant_isa("scalar"));
    quant_linear(pool, p.x.data(), 5, p.k, p.w, nullptr, portable.data(), 70);
    ASSERT_TRUE(set_quant_isa(GetParam()));
    // Same integer sums; only the order of the fp32 accumulation differs.
    for (size_t i = 0; i < mine.size(); ++i)
      ASSERT_NEAR(mine[i], portable[i], 1e-4f * (1 + std::fabs(portable[i]))) << f.name << " " << i;
  }
}

// Many rows on AVX-512 VNNI (the encoder's products, quant_gemm_avx512.cc), every format it
// takes: each row as the few-row integer path computes it alone (the same quantized x, the
// same integer sums; only the fp32 accumulation's order differs), for row counts that end
// mid-tile and mid-block of rows, columns that end mid-panel, and strided output.
TEST_P(QuantGemm, ManyRowsEqualEachRowAlone) {
  if (std::string(GetParam()) != "avx512-vnni") GTEST_SKIP() << "the many-row integer kernel is AVX-512 VNNI's";
  ThreadPool pool(2);
  int formats = 0;
  for (const quant::BlockInfo& f : quant::formats()) {
    if (!quant::vnni_tiles_take(f.dtype)) continue;
    ++formats;
    const int64_t k = f.elems == 32 ? 224 : 512;
    for (int64_t m : {17, 37, 64, 131}) {
      for (int64_t n : {32, 70}) {
        const Problem p = make_problem(f.dtype, m, n, k, static_cast<unsigned>(m + n + f.ggml_type));
        const int64_t ldy = n + 5;
        std::vector<float> many(m * ldy, -7.0f), alone(n);
        quant_linear(pool, p.x.data(), m, p.k, p.w, p.bias.data(), many.data(), ldy);
        for (int64_t r = 0; r < m; ++r) {
          quant_linear(pool, p.x.data() + r * p.k, 1, p.k, p.w, p.bias.data(), alone.data(), n);
          for (int64_t j = 0; j < n; ++j)
            ASSERT_NEAR(many[r * ldy + j], alone[j], 1e-4f * (1 + std::fabs(alone[j])))
                << f.name << " m " << m << " row " << r << " col " << j;
          for (int64_t j = n; j < ldy; ++j) ASSERT_EQ(many[r * ldy + j], -7.0f) << "wrote past a row";
        }
      }
    }
  }
  EXPECT_EQ(formats, 7) << "q4_0, q4_1, q5_0, q5_1, q8_0, q4_K, q5_K";
}

// The VNNI kernel's own quantizer (vectorised, unsigned codes) against the integer
// kernels' quantize_activations: the same codes (+ 128), scales and block sums, bit for bit
// — zeros, one value, ties of the rounding (values at exact halves of a code), outliers.
TEST(QuantGemm, VnniQuantizerEqualsTheActivationQuantizer) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw"))
    GTEST_SKIP() << "no AVX-512 VNNI here";
  const int64_t rows = 5, k = 256, blocks = k / 32;
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = normal(rng);
  std::fill_n(x.begin(), 32, 0.0f);                            // an all-zero block
  x[40] = 3.0f;                                                // a block of one value
  for (int i = 41; i < 64; ++i) x[i] = 0.0f;
  // A block whose scale is exactly 1 (its largest |x| 127), the rest at halves: ties.
  x[k] = 127.0f;
  for (int i = 1; i < 32; ++i) x[k + i] = static_cast<float>(i - 16) + 0.5f;
  x[2 * k + 7] = 1e4f;                                         // an outlier
  std::vector<int8_t> q(rows * k);
  std::vector<float> d(rows * blocks), half_sums(2 * rows * blocks);
  std::vector<int32_t> lanes(8 * rows * blocks);
  quant::quantize_activations(x.data(), rows, k, q.data(), d.data(), half_sums.data(), lanes.data());
  std::vector<uint8_t> u(rows * k);
  std::vector<float> du(rows * blocks), sx(rows * blocks);
  quant::quantize_rows_unsigned(x.data(), rows, k, u.data(), du.data(), sx.data());
  for (int64_t i = 0; i < rows * k; ++i) ASSERT_EQ(static_cast<int>(u[i]), q[i] + 128) << "value " << i;
  for (int64_t b = 0; b < rows * blocks; ++b) {
    ASSERT_EQ(std::memcmp(&du[b], &d[b], 4), 0) << "block " << b;
    int sum = 0;
    for (int i = 0; i < 32; ++i) sum += q[b * 32 + i];
    ASSERT_EQ(sx[b], d[b] * static_cast<float>(sum)) << "block " << b;
  }
}

// The encoder's panels widen weight rows with SIMD code: it must give the definition's
// bits, checked on ggml's own random blocks (tests/data/quant).
TEST_P(QuantGemm, WidenedRowsEqualTheDefinitionBitForBit) {
  const std::string isa = GetParam();
  const quant::WidenRowFn widen = isa == "avx512-vnni" ? quant::widen_row_avx512
                                  : isa == "avx2"      ? quant::widen_row_avx2
                                                       : quant::widen_row_scalar;
  for (const quant::BlockInfo& f : quant::formats()) {
    const std::string blocks = test::read_file(test::data_path(std::string("quant/") + f.name + ".blocks.bin"));
    const std::string values = test::read_file(test::data_path(std::string("quant/") + f.name + ".values.bin"));
    const int64_t n = static_cast<int64_t>(values.size() / 4);
    std::vector<float> got(n), want(n);
    std::memcpy(want.data(), values.data(), values.size());
    widen(f.dtype, reinterpret_cast<const uint8_t*>(blocks.data()), n, got.data());
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << f.name << " value " << i << ": " << got[i] << " vs " << want[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, QuantGemm, ::testing::Values("scalar", "avx2", "avx512-vnni"));

TEST(QuantGemm, BackendLinearRunsQuantizedWeights) {
  CpuBackend be(2);
  const Problem p = make_problem(DType::Q8_0, 3, 40, 256, 11);
  Tensor x = Tensor::from_vector(p.x, {3, 256});
  Tensor bias = Tensor::from_vector(p.bias, {40});
  const Tensor y = ops::linear(be, x, p.w, &bias);
  expect_close(p, y.to_vector(), true, "backend");
  // Packed with another product (the decoder's Q/K/V): each writes its column block.
  const Tensor* ws[] = {&p.w, &p.w};
  const Tensor* bs[] = {&bias, nullptr};
  const Tensor packed = ops::linear_packed(be, x, ws, bs);
  ASSERT_EQ(packed.shape(), (Shape{3, 80}));
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t j = 0; j < 40; ++j) {
      ASSERT_EQ(packed.data<float>()[r * 80 + j], y.data<float>()[r * 40 + j]);
      ASSERT_NEAR(packed.data<float>()[r * 80 + 40 + j], y.data<float>()[r * 40 + j] - p.bias[j], 1e-4f);
    }
  // The token embedding of a quantized checkpoint: rows are dequantized on lookup.
  Tensor ids = Tensor::empty({2}, DType::I32), lengths = Tensor::zeros({2}, DType::I32);
  ids.data<int32_t>()[0] = 3;
  ids.data<int32_t>()[1] = 39;
  const Tensor positions = Tensor::zeros({4, 256});
  const Tensor e = ops::embedding(be, p.w, positions, ids, lengths, 1);
  for (int i = 0; i < 2; ++i)
    for (int64_t j = 0; j < p.k; ++j)
      ASSERT_EQ(e.data<float>()[i * p.k + j], p.w_values[ids.data<int32_t>()[i] * p.k + j]);
}

TEST(QuantGemm, ReportsAnInstructionSet) {
  const std::string isa = quant_isa();
  EXPECT_TRUE(isa == "avx512-vnni" || isa == "avx2" || isa == "scalar") << isa;
  EXPECT_FALSE(set_quant_isa("sse9"));
}

}  // namespace
}  // namespace hark
