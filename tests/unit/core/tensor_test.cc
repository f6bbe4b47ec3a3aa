#include <gtest/gtest.h>

#include <cmath>

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
