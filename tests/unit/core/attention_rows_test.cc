// Cross-attention over f16 K/V (--compute-type int8 / f16 on the CPU): the same result as
// fp32 attention over the same (f16-rounded) values, with and without the causal mask,
// capturing the weights, for the head sizes Whisper and the test models use.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/cpu/cpu_backend.h"
#include "core/ops.h"
#include "test_support.h"

namespace hark {
namespace {

Tensor normal_tensor(Shape shape, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

TEST(HalfKvAttention, EqualsFp32AttentionOnTheSameValues) {
  CpuBackend be(2, DType::F16);
  EXPECT_EQ(be.cross_kv_dtype(), DType::F16);
  std::mt19937 rng(5);
  for (int hd : {8, 32, 64}) {
    for (int tq : {1, 3, 5, 20}) {
      for (bool causal : {false, true}) {
        const int heads = 3, d = heads * hd, tk = 37;
        const Tensor q = normal_tensor({tq, d}, rng);
        const Tensor k16 = ops::cast(be, normal_tensor({tk, d}, rng), DType::F16);
        const Tensor v16 = ops::cast(be, normal_tensor({tk, d}, rng), DType::F16);
        ASSERT_EQ(k16.dtype(), DType::F16);
        Tensor w_half = Tensor::empty({heads, tq, tk}), w_full = Tensor::empty({heads, tq, tk});
        const Tensor half = ops::attention(be, q, k16, v16, heads, causal, 4, &w_half);
        const Tensor full = ops::attention(be, q, k16.to_f32(), v16.to_f32(), heads, causal, 4, &w_full);
        const std::string what = "hd " + std::to_string(hd) + " tq " + std::to_string(tq) + (causal ? " causal" : "");
        for (int64_t i = 0; i < full.numel(); ++i)
          ASSERT_NEAR(half.data<float>()[i], full.data<float>()[i], 2e-5) << what << " out " << i;
        for (int64_t i = 0; i < w_full.numel(); ++i)
          ASSERT_NEAR(w_half.data<float>()[i], w_full.data<float>()[i], 2e-6) << what << " weight " << i;
      }
    }
  }
}

// q8_0 K/V (--compute-type int8): against fp32 attention over the same (dequantized)
// values; the queries are quantized per block of 32 for the integer scores, so the
// tolerance is that of an int8 activation, not of rounding.
TEST(Q8KvAttention, CloseToFp32AttentionOnTheSameValues) {
  CpuBackend be(2, DType::Q8_0);
  EXPECT_EQ(be.cross_kv_dtype(), DType::Q8_0);
  std::mt19937 rng(8);
  for (int hd : {32, 64}) {
    for (int tq : {1, 5, 20}) {
      for (bool causal : {false, true}) {
        const int heads = 3, d = heads * hd, tk = 37;
        const Tensor q = normal_tensor({tq, d}, rng);
        const Tensor k8 = ops::cast(be, normal_tensor({tk, d}, rng), DType::Q8_0);
        const Tensor v8 = ops::cast(be, normal_tensor({tk, d}, rng), DType::Q8_0);
        ASSERT_EQ(k8.dtype(), DType::Q8_0);
        Tensor w_q8 = Tensor::empty({heads, tq, tk}), w_full = Tensor::empty({heads, tq, tk});
        const Tensor got = ops::attention(be, q, k8, v8, heads, causal, 4, &w_q8);
        const Tensor want = ops::attention(be, q, k8.to_f32(), v8.to_f32(), heads, causal, 4, &w_full);
        const std::string what = "hd " + std::to_string(hd) + " tq " + std::to_string(tq) + (causal ? " causal" : "");
        for (int64_t i = 0; i < want.numel(); ++i)
          ASSERT_NEAR(got.data<float>()[i], want.data<float>()[i], 0.03) << what << " out " << i;
        for (int64_t i = 0; i < w_full.numel(); ++i)
          ASSERT_NEAR(w_q8.data<float>()[i], w_full.data<float>()[i], 0.01) << what << " weight " << i;
        EXPECT_LT(test::relative_l2(got, want), 0.01) << what;
      }
    }
  }
}

TEST(HalfKvAttention, CastRoundsToNearestHalf) {
  CpuBackend be(2);
  EXPECT_EQ(be.cross_kv_dtype(), DType::F32);
  const Tensor x = Tensor::from_vector({1.0f, 1.0f / 3, -65504.0f, 1e-8f}, {2, 2});
  const Tensor h = ops::cast(be, x, DType::F16);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(h.data<uint16_t>()[i], float_to_half(x.data<float>()[i]));
  EXPECT_EQ(ops::cast(be, x, DType::F32).raw(), x.raw());  // no copy when already there
  EXPECT_THROW(CpuBackend(1, DType::BF16), Error);
  // f32 → q8_0: the format's own quantizer, row by row.
  const Tensor row = Tensor::from_vector(std::vector<float>(64, 0.5f), {2, 32});
  const Tensor q8 = ops::cast(be, row, DType::Q8_0);
  for (float v : q8.to_vector()) EXPECT_NEAR(v, 0.5f, 0.5f / 127);
}

}  // namespace
}  // namespace hark
