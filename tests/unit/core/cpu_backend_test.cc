// CPU kernels against straightforward double-precision loops on random data.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/cpu/attention_rows.h"
#include "core/cpu/cpu_backend.h"
#include "core/ops.h"
#include "core/thread_pool.h"
#include "core/token_select.h"

namespace hark {
namespace {

Tensor random_tensor(Shape shape, std::mt19937& rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> u(-scale, scale);
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// Uniform values in [-1, 1) from a 64-bit xorshift: for the large K/V tensors of the
// attention tests, where std::uniform_real_distribution costs seconds in the sanitizer build.
Tensor quick_random_tensor(Shape shape, uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.numel(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    t.data<float>()[i] = static_cast<float>(static_cast<int64_t>(x >> 40) - (1 << 23)) / (1 << 23);
  }
  return t;
}

Tensor to_dtype(const Tensor& t, DType dtype) {
  Tensor out = Tensor::empty(t.shape(), dtype);
  for (int64_t i = 0; i < t.numel(); ++i)
    out.data<uint16_t>()[i] = dtype == DType::F16 ? float_to_half(t.data<float>()[i]) : float_to_bf16(t.data<float>()[i]);
  return out;
}

double linear_ref(const Tensor& x, const Tensor& w, const Tensor& b, int64_t row, int64_t col) {
  const int64_t k = x.dim(1);
  std::vector<float> wf = w.to_vector();
  double s = b.data<float>()[col];
  for (int64_t i = 0; i < k; ++i) s += static_cast<double>(x.data<float>()[row * k + i]) * wf[col * k + i];
  return s;
}

class LinearTest : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(LinearTest, MatchesDoubleReference) {
  auto [dtype, m] = GetParam();
  std::mt19937 rng(42 + m);
  auto be = make_cpu_backend({2});
  Tensor x = random_tensor({m, 100}, rng), w32 = random_tensor({37, 100}, rng), b = random_tensor({37}, rng);
  Tensor w = dtype == DType::F32 ? w32 : to_dtype(w32, dtype);
  Tensor y = ops::linear(*be, x, w, &b);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < 37; ++c) EXPECT_NEAR(y.data<float>()[r * 37 + c], linear_ref(x, w, b, r, c), 2e-4);
}

INSTANTIATE_TEST_SUITE_P(DTypesAndRows, LinearTest,
                         ::testing::Combine(::testing::Values(DType::F32, DType::F16, DType::BF16),
                                            ::testing::Values(1, 2, 3, 4, 5, 7, 8, 9, 40)));

class AttentionTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

// Head sizes 8 (256-bit loops) and 64 (Whisper's, 512-bit loops); 3 query rows take the
// direct loops (attention_rows.h), 20 the sgemm path.
TEST_P(AttentionTest, CausalAttentionMatchesReference) {
  const auto [hd, tq] = GetParam();
  std::mt19937 rng(7);
  auto be = make_cpu_backend({2});
  const int heads = 2, tk = 25, d = heads * hd;
  Tensor q = random_tensor({tq, d}, rng), k = random_tensor({tk, d}, rng), v = random_tensor({tk, d}, rng);
  const int64_t offset = 2;  // query i sees keys 0..i+2
  Tensor weights = Tensor::empty({heads, tq, tk});
  Tensor out = ops::attention(*be, q, k, v, heads, true, offset, &weights);
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < tq; ++i) {
      std::vector<double> s(tk, 0);
      double mx = -1e30, sum = 0;
      const int visible = std::min<int>(tk, i + offset + 1);
      for (int j = 0; j < visible; ++j) {
        for (int c = 0; c < hd; ++c) s[j] += q.data<float>()[i * d + h * hd + c] * k.data<float>()[j * d + h * hd + c];
        s[j] /= std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, s[j]);
      }
      for (int j = 0; j < visible; ++j) sum += (s[j] = std::exp(s[j] - mx));
      for (int c = 0; c < hd; ++c) {
        double o = 0;
        for (int j = 0; j < visible; ++j) o += s[j] / sum * v.data<float>()[j * d + h * hd + c];
        EXPECT_NEAR(out.data<float>()[i * d + h * hd + c], o, 1e-5);
      }
      // Captured weights: the softmax row itself, zero past the causal limit.
      const float* row = weights.data<float>() + (h * tq + i) * tk;
      double row_sum = 0;
      for (int j = 0; j < tk; ++j) {
        if (j >= visible) EXPECT_EQ(row[j], 0.0f) << "masked key " << j;
        else EXPECT_NEAR(row[j], s[j] / sum, 1e-6);
        row_sum += row[j];
      }
      EXPECT_NEAR(row_sum, 1.0, 1e-5);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HeadSizesAndRows, AttentionTest, ::testing::Combine(::testing::Values(8, 64),
                                                                            ::testing::Values(3, 20)));

// softmax(q Kᵀ/√hd) V of head h, query row i, in double precision (row strides ld*).
std::vector<double> attention_ref(const AttentionRows& a, int64_t h, int64_t i, int64_t hd, int64_t visible) {
  std::vector<double> s(visible), o(hd, 0.0);
  double mx = -1e300, sum = 0;
  for (int64_t j = 0; j < visible; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < hd; ++c) dot += double(a.q[i * a.ldq + h * hd + c]) * a.k[j * a.ldk + h * hd + c];
    s[j] = dot / std::sqrt(double(hd));
    mx = std::max(mx, s[j]);
  }
  for (double& x : s) sum += (x = std::exp(x - mx));
  for (int64_t j = 0; j < visible; ++j)
    for (int64_t c = 0; c < hd; ++c) o[c] += s[j] / sum * a.v[j * a.ldv + h * hd + c];
  return o;
}

// The decoder step's attention loop: one parallel loop over the calls of several windows
// (cross-attention: one row, or a window's beams) or rows (self-attention over each row's
// cache). Every call must give the numbers it gives alone, whatever its companions — the
// batching server's "same tokens as alone" rests on it — and be right. Head sizes 64
// (512-bit loops), 24 (256-bit loops); key counts that leave a tail past the blocks of 8.
class AttendManyTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(AttendManyTest, EachCallAsAloneAndRight) {
  const auto [hd, causal] = GetParam();
  const int heads = 3;
  const int64_t d = heads * hd;
  std::mt19937 rng(11 + hd + causal);
  ThreadPool pool(2);
  // (query rows, keys): few-row calls (1, 5, 8 rows) and one long enough for the sgemm path.
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 203}, {5, 1500}, {8, 37}, {1, 1}, {12, 64}};
  std::vector<Tensor> qs, ks, vs, outs, alone;
  std::vector<AttentionRows> calls, solo;
  std::vector<int64_t> offsets;
  for (auto [tq, tk] : shapes) {
    qs.push_back(random_tensor({tq, d}, rng));
    // K and V interleaved in one tensor, as the packed cross K/V is.
    ks.push_back(random_tensor({tk, 2 * d}, rng));
    outs.push_back(Tensor::zeros({tq, d}));
    alone.push_back(Tensor::zeros({tq, d}));
    const float* kv = ks.back().data<float>();
    calls.push_back({qs.back().data<float>(), d, kv, 2 * d, kv + d, 2 * d, outs.back().data<float>(), d, tq, tk});
    solo.push_back(calls.back());
    solo.back().out = alone.back().data<float>();
    offsets.push_back(causal ? std::max<int64_t>(0, tk - tq) : 0);
  }
  cpu_attend_many(pool, calls, heads, hd, causal, causal ? std::span<const int64_t>(offsets) : std::span<const int64_t>(),
                  {});
  for (size_t c = 0; c < calls.size(); ++c) {
    cpu_attend(pool, solo[c], heads, hd, causal, offsets[c], nullptr);
    const int64_t tq = calls[c].tq, tk = calls[c].tk;
    for (int64_t i = 0; i < tq * d; ++i)
      ASSERT_EQ(outs[c].data<float>()[i], alone[c].data<float>()[i]) << "call " << c << " value " << i;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < tq; ++i) {
        const int64_t visible = causal ? std::min(tk, i + offsets[c] + 1) : tk;
        const std::vector<double> ref = attention_ref(calls[c], h, i, hd, visible);
        for (int64_t j = 0; j < hd; ++j)
          EXPECT_NEAR(outs[c].data<float>()[i * d + h * hd + j], ref[j], 1e-5) << "call " << c << " head " << h;
      }
  }
  // The 5-row call with other companions (and none) gives the same bits again.
  std::vector<AttentionRows> other = {calls[1], calls[3]};
  Tensor again = Tensor::zeros({5, d});
  other[0].out = again.data<float>();
  const std::vector<int64_t> other_offsets = {offsets[1], offsets[3]};
  cpu_attend_many(pool, other, heads, hd, causal,
                  causal ? std::span<const int64_t>(other_offsets) : std::span<const int64_t>(), {});
  for (int64_t i = 0; i < 5 * d; ++i) ASSERT_EQ(again.data<float>()[i], outs[1].data<float>()[i]) << i;
}

INSTANTIATE_TEST_SUITE_P(HeadSizesCausal, AttendManyTest,
                         ::testing::Combine(::testing::Values(64, 24), ::testing::Bool()));

// A batched step's cross-attention reads several heads of a key row in one pass (head
// groups, sized by how many rows the step has): every window's output and captured weights
// must equal what the window gives alone, bit for bit (alone: a task a head for 6 and 7
// heads, groups of 3 for 20). Head counts that
// the groups do not divide, head sizes 64 and 128 (the fused 512-bit value loop) and 80
// (a head at a time), and step sizes from two to nine windows.
TEST(AttendManyGroups, GroupedHeadsGiveTheBitsOfTheWindowAlone) {
  ThreadPool pool(2);
  std::mt19937 rng(29);
  for (const int heads : {6, 7, 20})
    for (const int64_t hd : {64, 128, 80})
      for (const int windows : {2, 3, 5, 9}) {
        const int64_t d = heads * hd, tk = windows == 5 && heads == 6 ? 1500 : 203;  // one step of tiny's real shape
        std::vector<Tensor> qs, kvs, outs, alone, w_many, w_alone;
        std::vector<AttentionRows> calls;
        std::vector<float*> weights;
        for (int w = 0; w < windows; ++w) {
          qs.push_back(random_tensor({1, d}, rng));
          kvs.push_back(quick_random_tensor({tk, 2 * d}, rng()));
          outs.push_back(Tensor::zeros({1, d}));
          alone.push_back(Tensor::zeros({1, d}));
          w_many.push_back(Tensor::zeros({heads, 1, tk}));
          w_alone.push_back(Tensor::zeros({heads, 1, tk}));
          const float* kv = kvs.back().data<float>();
          calls.push_back({qs.back().data<float>(), d, kv, 2 * d, kv + d, 2 * d, outs.back().data<float>(), d, 1, tk});
          weights.push_back(w_many.back().data<float>());
        }
        cpu_attend_many(pool, calls, heads, hd, false, {}, weights);
        for (int w = 0; w < windows; ++w) {
          AttentionRows solo = calls[w];
          solo.out = alone[w].data<float>();
          cpu_attend(pool, solo, heads, hd, false, 0, w_alone[w].data<float>());
          for (int64_t i = 0; i < d; ++i)
            ASSERT_EQ(outs[w].data<float>()[i], alone[w].data<float>()[i])
                << heads << " heads of " << hd << ", " << windows << " windows: window " << w << " value " << i;
          for (int64_t i = 0; i < heads * tk; ++i)
            ASSERT_EQ(w_many[w].data<float>()[i], w_alone[w].data<float>()[i])
                << heads << " heads of " << hd << ", " << windows << " windows: window " << w << " weight " << i;
        }
        const std::vector<double> ref = attention_ref(calls[0], heads - 1, 0, hd, tk);
        for (int64_t j = 0; j < hd; ++j) EXPECT_NEAR(outs[0].data<float>()[(heads - 1) * hd + j], ref[j], 1e-5);
      }
}

// A window's beams (several query rows over the same keys, not causal) are a task a head
// that reads each key once for all rows: each row's output and weights must be bit for bit
// what that row gives as a call of its own. Rows 2-8 (the fused 512-bit value loop holds
// up to 6 rows of 64 or 3 of 128; more go a row at a time), head sizes 64, 128 and 80.
TEST(AttendManyGroups, RowsOverOneWindowGiveTheBitsOfEachRowAlone) {
  std::mt19937 rng(31);
  for (const int threads : {2, 8})  // 8: 6 heads get two runs of rows each
  for (const int heads : {6, 20})
    for (const int64_t hd : {64, 128, 80})
      for (const int64_t tq : {2, 3, 5, 6, 8}) {
        ThreadPool pool(threads);
        const int64_t d = heads * hd, tk = tq == 5 && heads == 6 ? 1500 : 203;
        Tensor q = random_tensor({tq, d}, rng), kv = quick_random_tensor({tk, 2 * d}, rng());
        Tensor out = Tensor::zeros({tq, d}), w = Tensor::zeros({heads, tq, tk});
        const float* k = kv.data<float>();
        const AttentionRows call{q.data<float>(), d, k, 2 * d, k + d, 2 * d, out.data<float>(), d, tq, tk};
        cpu_attend(pool, call, heads, hd, false, 0, w.data<float>());
        for (int64_t i = 0; i < tq; ++i) {
          Tensor one = Tensor::zeros({1, d}), w1 = Tensor::zeros({heads, 1, tk});
          const AttentionRows row{q.data<float>() + i * d, d, k, 2 * d, k + d, 2 * d, one.data<float>(), d, 1, tk};
          cpu_attend(pool, row, heads, hd, false, 0, w1.data<float>());
          for (int64_t j = 0; j < d; ++j)
            ASSERT_EQ(out.data<float>()[i * d + j], one.data<float>()[j])
                << heads << " heads of " << hd << ", " << tq << " rows: row " << i << " value " << j;
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < tk; ++t)
              ASSERT_EQ(w.data<float>()[(h * tq + i) * tk + t], w1.data<float>()[h * tk + t])
                  << heads << " heads of " << hd << ", " << tq << " rows: row " << i << " head " << h;
        }
      }
}

// The same for f16 keys and values (the quantized modes' cross K/V) through
// attention_rows: a window's beams as one call give each row's bits alone.
TEST(AttendManyGroups, HalfKeysRowsOverOneWindowGiveTheBitsOfEachRowAlone) {
  std::mt19937 rng(37);
  for (const int threads : {2, 8})
    for (const int64_t hd : {64, 80})
      for (const int64_t tq : {2, 5, 8}) {
        ThreadPool pool(threads);
        const int heads = 6;
        const int64_t d = heads * hd, tk = 301;
        Tensor q = random_tensor({tq, d}, rng), kv = to_dtype(quick_random_tensor({tk, 2 * d}, rng()), DType::F16);
        Tensor out = Tensor::zeros({tq, d}), w = Tensor::zeros({heads, tq, tk});
        const uint16_t* k = kv.data<uint16_t>();
        attention_rows(pool, {q.data<float>(), d, k, 2 * d, k + d, 2 * d, DType::F16, out.data<float>(), d, tq, tk},
                       heads, hd, false, 0, w.data<float>());
        for (int64_t i = 0; i < tq; ++i) {
          Tensor one = Tensor::zeros({1, d}), w1 = Tensor::zeros({heads, 1, tk});
          attention_rows(pool, {q.data<float>() + i * d, d, k, 2 * d, k + d, 2 * d, DType::F16, one.data<float>(), d, 1, tk},
                         heads, hd, false, 0, w1.data<float>());
          for (int64_t j = 0; j < d; ++j)
            ASSERT_EQ(out.data<float>()[i * d + j], one.data<float>()[j]) << hd << ", " << tq << " rows: row " << i;
          for (int64_t h = 0; h < heads; ++h)
            for (int64_t t = 0; t < tk; ++t)
              ASSERT_EQ(w.data<float>()[(h * tq + i) * tk + t], w1.data<float>()[h * tk + t]) << hd << ", row " << i;
        }
      }
}

TEST(CpuBackend, Conv1dMatchesReference) {
  std::mt19937 rng(3);
  auto be = make_cpu_backend({1});
  Tensor x = random_tensor({4, 11}, rng), w = random_tensor({6, 4, 3}, rng), b = random_tensor({6}, rng);
  Tensor y = ops::conv1d(*be, x, w, b, 2, 1);
  ASSERT_EQ(y.shape(), (Shape{6, 6}));
  for (int co = 0; co < 6; ++co)
    for (int t = 0; t < 6; ++t) {
      double s = b.data<float>()[co];
      for (int ci = 0; ci < 4; ++ci)
        for (int kk = 0; kk < 3; ++kk) {
          int src = t * 2 + kk - 1;
          if (src >= 0 && src < 11) s += w.data<float>()[(co * 4 + ci) * 3 + kk] * x.data<float>()[ci * 11 + src];
        }
      EXPECT_NEAR(y.data<float>()[co * 6 + t], s, 1e-5);
    }
}

TEST(CpuBackend, ShapeErrorsAreClear) {
  auto be = make_cpu_backend({1});
  Tensor x = Tensor::zeros({2, 3}), w = Tensor::zeros({4, 5});
  EXPECT_THROW(ops::linear(*be, x, w, nullptr), Error);
  Tensor ids = Tensor::zeros({1}, DType::I32), lengths = Tensor::zeros({1}, DType::I32);
  ids.data<int32_t>()[0] = 9;
  EXPECT_THROW(ops::embedding(*be, Tensor::zeros({3, 2}), Tensor::zeros({4, 2}), ids, lengths, 1), Error);
  EXPECT_THROW(ops::linear(*be, x, Tensor::zeros({4, 3}), nullptr, Epilogue::Residual), Error);
  EXPECT_THROW(make_cpu_backend({.threads = 1, .compute_type = "f16"}), Error);
  EXPECT_THROW(make_backend("cpu", {.threads = 1, .compute_type = "int4"}), Error);
  EXPECT_THROW(make_backend("tpu", {}), Error);
}

// The logits product with the selection after it (Backend::logits_select_and_feed; the
// GPU does both in one launch) is, on the CPU, norm_linear then select_and_feed; a spec,
// choice buffer, input buffer or k that does not fit is a clear error.
TEST(CpuBackend, LogitsSelectAndFeedIsTheTwoOpsInTurn) {
  auto be = make_cpu_backend({1});
  std::mt19937 rng(7);
  const int vocab = 600;
  Tensor x = random_tensor({1, 32}, rng), g = random_tensor({32}, rng), b = random_tensor({32}, rng);
  Tensor w = random_tensor({vocab, 32}, rng);
  SelectionRules rules;
  rules.timestamps = true;
  rules.timestamp_begin = 500;
  rules.no_timestamps = 499;
  rules.eot = 498;
  const SampledSummary state{2, 17, 501, 501};
  const std::vector<int32_t> spec = make_select_spec(rules, vocab, std::span<const SampledSummary>(&state, 1));
  auto make_spec = [&] {
    Tensor t = Tensor::empty({static_cast<int64_t>(spec.size())}, DType::I32);
    std::copy(spec.begin(), spec.end(), t.data<int32_t>());
    return t;
  };
  auto make_inputs = [] {
    Tensor t = Tensor::zeros({3}, DType::I32);
    t.data<int32_t>()[0] = 5;
    return t;
  };
  Tensor spec_a = make_spec(), spec_b = make_spec(), in_a = make_inputs(), in_b = make_inputs();
  Tensor out_a = Tensor::zeros({1, 1, 2}, DType::I32), out_b = Tensor::zeros({1, 1, 2}, DType::I32);
  Tensor logits = ops::logits_select_and_feed(*be, x, g, b, w, spec_a, 1, out_a, in_a);
  Tensor want = ops::norm_linear(*be, x, g, b, w, nullptr);
  ops::select_and_feed(*be, want, spec_b, 1, out_b, in_b);
  ASSERT_EQ(logits.numel(), want.numel());
  for (int64_t i = 0; i < want.numel(); ++i) EXPECT_EQ(logits.data<float>()[i], want.data<float>()[i]) << i;
  for (int i = 0; i < 2; ++i) EXPECT_EQ(out_a.data<int32_t>()[i], out_b.data<int32_t>()[i]);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(in_a.data<int32_t>()[i], in_b.data<int32_t>()[i]);
  for (size_t i = 0; i < spec.size(); ++i) EXPECT_EQ(spec_a.data<int32_t>()[i], spec_b.data<int32_t>()[i]) << i;
  EXPECT_EQ(in_a.data<int32_t>()[0], 6);  // one more position, the choice fed back
  EXPECT_EQ(in_a.data<int32_t>()[2], out_a.data<int32_t>()[0]);

  Tensor short_spec = Tensor::zeros({static_cast<int64_t>(spec.size()) - 1}, DType::I32);
  Tensor short_out = Tensor::zeros({1}, DType::I32), short_inputs = Tensor::zeros({2}, DType::I32);
  EXPECT_THROW(ops::logits_select_and_feed(*be, x, g, b, w, short_spec, 1, out_a, in_a), Error);
  EXPECT_THROW(ops::logits_select_and_feed(*be, x, g, b, w, spec_a, 1, short_out, in_a), Error);
  EXPECT_THROW(ops::logits_select_and_feed(*be, x, g, b, w, spec_a, 1, out_a, short_inputs), Error);
  EXPECT_THROW(ops::logits_select_and_feed(*be, x, g, b, w, spec_a, 0, out_a, in_a), Error);
  EXPECT_THROW(ops::logits_select_and_feed(*be, x, g, b, w, spec_a, 17, out_a, in_a), Error);
  EXPECT_THROW(ops::logits_select_and_feed(*be, x, g, b, Tensor::zeros({vocab, 31}), spec_a, 1, out_a, in_a), Error);
  EXPECT_THROW(ops::logits_select_and_feed(*be, x, Tensor::zeros({31}), b, w, spec_a, 1, out_a, in_a), Error);
}

}  // namespace
}  // namespace hark
