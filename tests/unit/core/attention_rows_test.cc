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

// The CPU keeps fp32 cross K/V in head panels (CpuBackend::arrange_cross_kv): each
// window's rows rearranged, and cross_attention over them gives the bits it gives over the
// product's rows, for every path: one row a window (a batched step), a window's beams, a
// prompt longer than the few-row loops (sgemm), captured weights, several layers.
TEST(CrossKvPanels, SameBitsAsTheProductsRows) {
  CpuBackend be(2);
  std::mt19937 rng(11);
  const int heads = 3, hd = 64, d = heads * hd, layers = 2, tk = 45, windows = 3;
  ASSERT_EQ(be.cross_kv_panel(hd), hd);
  const Tensor rows = normal_tensor({windows * tk, 2 * layers * d}, rng);
  const Tensor panels = be.arrange_cross_kv(rows, tk, hd);
  ASSERT_NE(panels.raw(), rows.raw());
  // The layout PackedKV documents: column c of row r at (c / 64)·tk·64 + r·64 + c % 64.
  for (int64_t w = 0; w < windows; ++w)
    for (int64_t r = 0; r < tk; ++r)
      for (int64_t c = 0; c < 2 * layers * d; c += 7)
        ASSERT_EQ(panels.data<float>()[w * tk * 2 * layers * d + (c / hd) * tk * hd + r * hd + c % hd],
                  rows.data<float>()[(w * tk + r) * 2 * layers * d + c]);
  struct Case {
    std::vector<int32_t> seq;
    int n_new;
    bool weights;
  };
  const std::vector<Case> cases = {{{0, 1, 2}, 1, false}, {{2, 2, 2, 2, 2}, 1, false}, {{1, 0, 0, 2}, 1, false},
                                   {{0, 2}, 3, false},    {{1, 2}, 12, false},         {{2, 0}, 1, true},
                                   {{0, 0, 1}, 12, true}};
  for (const Case& c : cases)
    for (int layer = 0; layer < layers; ++layer) {
      const int64_t n = static_cast<int64_t>(c.seq.size());
      const Tensor q = normal_tensor({n * c.n_new, d}, rng);
      Tensor row_seq = Tensor::empty({n}, DType::I32);
      for (int64_t i = 0; i < n; ++i) row_seq.data<int32_t>()[i] = c.seq[i];
      const PackedKV by_rows{&rows, tk, 2 * layer * d, (2 * layer + 1) * d};
      const PackedKV by_panels{&panels, tk, 2 * layer * d, (2 * layer + 1) * d, hd};
      Tensor w_rows = Tensor::empty({n, heads, c.n_new, tk}), w_panels = Tensor::empty({n, heads, c.n_new, tk});
      const Tensor want = ops::cross_attention(be, q, by_rows, row_seq, c.seq, c.n_new, heads, c.weights ? &w_rows : nullptr);
      const Tensor got =
          ops::cross_attention(be, q, by_panels, row_seq, c.seq, c.n_new, heads, c.weights ? &w_panels : nullptr);
      const std::string what = "rows " + std::to_string(n) + " n_new " + std::to_string(c.n_new) + " layer " +
                               std::to_string(layer) + (c.weights ? " weights" : "");
      EXPECT_EQ(got.to_vector(), want.to_vector()) << what;
      if (c.weights) EXPECT_EQ(w_panels.to_vector(), w_rows.to_vector()) << what;
    }
  // Panels that do not fit the heads or the columns are refused.
  const Tensor q = normal_tensor({1, d}, rng);
  Tensor row_seq = Tensor::empty({1}, DType::I32);
  row_seq.data<int32_t>()[0] = 0;
  const std::vector<int32_t> seq = {0};
  EXPECT_THROW(ops::cross_attention(be, q, PackedKV{&panels, tk, 0, d, 50}, row_seq, seq, 1, heads), Error);
  EXPECT_THROW(ops::cross_attention(be, q, PackedKV{&panels, tk, 0, d, 32}, row_seq, seq, 1, heads), Error);
  EXPECT_THROW(be.arrange_cross_kv(normal_tensor({tk + 1, 2 * layers * d}, rng), tk, hd), Error);
  // f16 and q8_0 cross K/V keep the product's rows.
  EXPECT_EQ(CpuBackend(1, DType::F16).cross_kv_panel(hd), 0);
  EXPECT_EQ(CpuBackend(1, DType::Q8_0).cross_kv_panel(hd), 0);
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
