#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/cpu/vector_math.h"
#include "core/tensor.h"

namespace hark {

TEST(VectorMath, FastExpIsAccurate) {
  double worst = 0;
  for (float x = -87.0f; x <= 87.0f; x += 0.0137f) {
    double ref = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::fabs(fast_exp(x) - ref) / ref);
  }
  EXPECT_LT(worst, 5e-7);
  EXPECT_LT(fast_exp(-1000.0f), 1e-37f);  // saturates like a masked softmax entry needs
}

TEST(VectorMath, GeluMatchesErfFormula) {
  std::vector<float> x;
  for (float v = -12.0f; v <= 12.0f; v += 0.001f) x.push_back(v);
  std::vector<float> y = x;
  gelu_inplace(y.data(), static_cast<int64_t>(y.size()));
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i];
    double ref = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
    worst = std::max(worst, std::fabs(y[i] - ref));
  }
  EXPECT_LT(worst, 2e-6);
}

TEST(VectorMath, SoftmaxMasksAndNormalises) {
  std::vector<float> x = {1.0f, 2.0f, 3.0f, 100.0f, -5.0f};
  softmax_row(x.data(), 3, 5);
  double e1 = std::exp(1.0), e2 = std::exp(2.0), e3 = std::exp(3.0), s = e1 + e2 + e3;
  EXPECT_NEAR(x[0], e1 / s, 1e-6);
  EXPECT_NEAR(x[2], e3 / s, 1e-6);
  EXPECT_EQ(x[3], 0.0f);
  EXPECT_EQ(x[4], 0.0f);
}

TEST(VectorMath, LayerNormRow) {
  std::vector<float> x = {1, 2, 3, 4}, g = {1, 1, 2, 1}, b = {0, 0, 0, 1}, y(4);
  layer_norm_row(x.data(), g.data(), b.data(), 4, 1e-5f, y.data());
  const double inv = 1.0 / std::sqrt(1.25 + 1e-5);
  EXPECT_NEAR(y[0], -1.5 * inv, 1e-5);
  EXPECT_NEAR(y[2], 2 * 0.5 * inv, 1e-5);
  EXPECT_NEAR(y[3], 1.5 * inv + 1, 1e-5);
}

TEST(VectorMath, FloatsToHalfEqualsTheScalarRounding) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<uint32_t> bits;
  std::vector<float> x(1003);
  for (auto& v : x) {
    const uint32_t b = bits(rng);  // every exponent: subnormal halves, overflow to infinity
    std::memcpy(&v, &b, 4);
    if (std::isnan(v)) v = 1.0f;   // NaN payloads may differ
  }
  x[1] = 65520.0f;                   // rounds up to infinity
  x[2] = 5.96e-8f;                   // the smallest subnormal
  x[3] = 1.0f + 1.0f / 4096;         // a tie
  x[4] = -std::numeric_limits<float>::infinity();
  std::vector<uint16_t> h(x.size());
  floats_to_half(x.data(), h.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(h[i], float_to_half(x[i])) << x[i];
}

}  // namespace hark
