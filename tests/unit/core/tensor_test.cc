#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/tensor.h"

namespace hark {

TEST(Tensor, HalfRoundTripIsExactForRepresentableValues) {
  for (float v : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.9604645e-08f}) {
    EXPECT_EQ(half_to_float(float_to_half(v)), v) << v;
  }
}

TEST(Tensor, HalfRoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.0f + 1.0f / 4096)), 1.0f);  // halfway: ties to even
  EXPECT_EQ(half_to_float(float_to_half(70000.0f)), INFINITY);
}

TEST(Tensor, Bf16RoundTrip) {
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.5f)), 1.5f);
  EXPECT_NEAR(bf16_to_float(float_to_bf16(3.14159f)), 3.14159f, 0.02f);
}

// e4m3 (OCP FP8): 4 exponent bits biased by 7, 3 mantissa bits, no infinities.
TEST(Tensor, E4m3Decodes) {
  EXPECT_EQ(e4m3_to_float(0x00), 0.0f);
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);            // 0 0111 000
  EXPECT_EQ(e4m3_to_float(0xC4), -3.0f);           // 1 1000 100: -(1 + 4/8) · 2
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);          // the largest finite value
  EXPECT_EQ(e4m3_to_float(0xFE), -448.0f);
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // the smallest normal
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // the smallest subnormal
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xFF)));
  EXPECT_EQ(dtype_size(DType::F8_E4M3), 1u);
  EXPECT_FALSE(dtype_is_quantized(DType::F8_E4M3));
  Tensor t = Tensor::empty({3}, DType::F8_E4M3);
  const uint8_t bytes[3] = {0x38, 0x40, 0xB8};  // 1, 2, -1
  std::memcpy(t.raw(), bytes, 3);
  const Tensor f = t.to_f32();
  EXPECT_EQ(f.data<float>()[0], 1.0f);
  EXPECT_EQ(f.data<float>()[1], 2.0f);
  EXPECT_EQ(f.data<float>()[2], -1.0f);
}

TEST(Tensor, ReshapeAndRowsShareStorage) {
  Tensor t = Tensor::zeros({4, 3});
  Tensor r = t.rows(1, 3);
  r.data<float>()[0] = 7.0f;
  EXPECT_EQ(t.data<float>()[3], 7.0f);
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_THROW(t.reshape({5, 3}), Error);
  EXPECT_THROW(t.rows(2, 5), Error);
}

}  // namespace hark
