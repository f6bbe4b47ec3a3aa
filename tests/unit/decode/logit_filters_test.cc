// Every rule of the reference's logit filters on hand-made logits.
#include "decode/logit_filters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "scripted_inference.h"

namespace hark {
namespace {

using testing::tiny_specials;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<float> flat(float value = 0.0f) { return std::vector<float>(40, value); }

TEST(SuppressBlank, MasksSpaceAndEotOnlyAtTheFirstSampledPosition) {
  SuppressBlank filter(tiny_specials(), 3);
  std::vector<float> logits = flat();
  filter.apply(logits, std::vector<int>{11, 12, 14});
  EXPECT_EQ(logits[3], kNegInf);
  EXPECT_EQ(logits[10], kNegInf);
  EXPECT_EQ(logits[4], 0.0f);
  std::vector<float> later = flat();
  filter.apply(later, std::vector<int>{11, 12, 14, 5});
  EXPECT_EQ(later[3], 0.0f);
  EXPECT_EQ(later[10], 0.0f);
}

TEST(SuppressTokens, MinusOneExpandsToTheNonSpeechSetPlusTheSpecials) {
  const SpecialTokens s = tiny_specials();
  EXPECT_EQ(resolve_suppress_tokens({-1}, {8, 7}, s), (std::vector<int>{7, 8, 11, 15, 16, 17}));
  EXPECT_EQ(resolve_suppress_tokens({5, -1, 5}, {8, 7}, s), (std::vector<int>{5, 7, 8, 11, 15, 16, 17}));
  // A user list without -1 keeps the non-speech symbols allowed.
  EXPECT_EQ(resolve_suppress_tokens({2}, {8, 7}, s), (std::vector<int>{2, 11, 15, 16, 17}));
  EXPECT_EQ(resolve_suppress_tokens({}, {8, 7}, s), (std::vector<int>{11, 15, 16, 17}));
}

TEST(SuppressTokens, MasksEveryListedTokenAtEveryPosition) {
  SuppressTokens filter({1, 4, 99});  // 99 is outside the vocabulary: ignored, no crash
  std::vector<float> logits = flat(1.0f);
  filter.apply(logits, std::vector<int>{11, 2, 3});
  EXPECT_EQ(logits[1], kNegInf);
  EXPECT_EQ(logits[4], kNegInf);
  EXPECT_EQ(logits[2], 1.0f);
}

class TimestampRules : public ::testing::Test {
 protected:
  SpecialTokens s = tiny_specials();
  ApplyTimestampRules rules{s, 3, 5};  // sample_begin 3, max initial timestamp index 5
  std::vector<int> with(std::vector<int> sampled) {
    std::vector<int> tokens = {11, 12, 14};
    tokens.insert(tokens.end(), sampled.begin(), sampled.end());
    return tokens;
  }
};

TEST_F(TimestampRules, FirstTokenIsATimestampNoLaterThanMaxInitial) {
  std::vector<float> logits = flat();
  rules.apply(logits, with({}));
  for (int t = 0; t < 19; ++t) EXPECT_EQ(logits[t], kNegInf) << t;
  for (int t = 19; t <= 24; ++t) EXPECT_EQ(logits[t], 0.0f) << t;
  for (int t = 25; t < 40; ++t) EXPECT_EQ(logits[t], kNegInf) << t;
}

TEST_F(TimestampRules, NoTimestampsTokenIsAlwaysSuppressed) {
  std::vector<float> logits = flat();
  logits[5] = 10.0f;  // a confident text token so that timestamps are not forced
  rules.apply(logits, with({19, 5}));
  EXPECT_EQ(logits[18], kNegInf);
  EXPECT_EQ(logits[5], 10.0f);
}

TEST_F(TimestampRules, AfterAClosedPairTextMustFollow) {
  std::vector<float> logits = flat();
  logits[2] = 10.0f;
  rules.apply(logits, with({19, 5, 22, 23}));  // <0.00> w5 <0.06><0.08>: pair closed
  for (int t = 19; t < 40; ++t) EXPECT_EQ(logits[t], kNegInf) << t;
  EXPECT_EQ(logits[2], 10.0f);
  EXPECT_EQ(logits[10], 0.0f);  // EOT allowed
}

TEST_F(TimestampRules, AfterAnOpeningTimestampOnlyATimestampOrEotMayFollow) {
  std::vector<float> logits = flat();
  logits[10] = 10.0f;  // EOT likelier than all timestamps together, so it is not masked
  rules.apply(logits, with({19, 5, 22}));  // text then one timestamp
  for (int t = 0; t < 10; ++t) EXPECT_EQ(logits[t], kNegInf) << t;
  EXPECT_EQ(logits[10], 10.0f);
  // Monotonic: the closing timestamp may repeat 22 but not go below it.
  for (int t = 19; t < 22; ++t) EXPECT_EQ(logits[t], kNegInf) << t;
  EXPECT_EQ(logits[22], 0.0f);
  EXPECT_EQ(logits[23], 0.0f);
}

TEST_F(TimestampRules, AfterTextTimestampsMustMoveForward) {
  std::vector<float> logits = flat();
  logits[4] = 10.0f;
  rules.apply(logits, with({21, 5}));  // <0.04> w5: the next timestamp must be > 21
  for (int t = 19; t <= 21; ++t) EXPECT_EQ(logits[t], kNegInf) << t;
  EXPECT_EQ(logits[22], 0.0f);
  EXPECT_EQ(logits[4], 10.0f);
}

TEST_F(TimestampRules, TimestampIsForcedWhenTheirTotalProbabilityWins) {
  // Text token 5 has the largest single logit, but 21 timestamps together outweigh it.
  std::vector<float> logits = flat(kNegInf);
  logits[5] = 2.0f;
  for (int t = 19; t < 40; ++t) logits[t] = 0.0f;
  rules.apply(logits, with({19, 5}));
  for (int t = 0; t < 19; ++t) EXPECT_EQ(logits[t], kNegInf) << t;
  EXPECT_EQ(logits[25], 0.0f);
}

TEST_F(TimestampRules, TextKeptWhenASingleTextTokenBeatsAllTimestamps) {
  std::vector<float> logits = flat(kNegInf);
  logits[5] = 5.0f;  // e^5 ≈ 148 > 20 timestamps at e^0
  for (int t = 19; t < 40; ++t) logits[t] = 0.0f;
  rules.apply(logits, with({19, 5}));
  EXPECT_EQ(logits[5], 5.0f);
}

// The log-sum-exp the rule hands on is the one of the row as it leaves it, bit for bit, and
// it hands none on when it masked the text afterwards (the row changed). Random rows and
// histories: every decision of the rule is taken with the same numbers as the whole
// log-softmax would give (the decoders then skip their own pass over the vocabulary).
TEST_F(TimestampRules, HandsOnTheRowsLogSumExpUnlessItMaskedTheText) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  int handed = 0, withheld = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<float> logits(40);
    for (float& v : logits) v = normal(rng);
    if (trial % 3 == 0)
      for (int t = 19; t < 40; ++t) logits[t] += 4.0f;  // timestamps likelier: text masked
    std::vector<int> sampled;
    for (int i = 0; i < trial % 4; ++i) sampled.push_back(trial % 2 ? 5 + i : 19 + 2 * i);
    std::vector<float> plain = logits, normalized = logits;
    rules.apply(plain, with(sampled));
    const std::optional<double> lse = rules.apply_normalized(normalized, with(sampled));
    ASSERT_EQ(std::memcmp(plain.data(), normalized.data(), plain.size() * sizeof(float)), 0) << trial;
    if (lse) {
      ++handed;
      EXPECT_EQ(*lse, log_sum_exp(normalized)) << trial;
    } else {
      ++withheld;
      for (int t = 0; t < 19; ++t) EXPECT_EQ(normalized[t], kNegInf) << trial << " token " << t;
    }
  }
  EXPECT_GT(handed, 50);
  EXPECT_GT(withheld, 50);
}

// The vectorised exponential of the log-softmax: within 4 units in the last place of
// std::exp down to -708, 0 below (and for -inf), exactly 1 at 0.
TEST(ExpNonPositive, WithinFourUlpOfStdExp) {
  EXPECT_EQ(exp_nonpositive(0.0), 1.0);
  EXPECT_EQ(exp_nonpositive(-0.0), 1.0);
  EXPECT_EQ(exp_nonpositive(-708.5), 0.0);
  EXPECT_EQ(exp_nonpositive(-std::numeric_limits<double>::infinity()), 0.0);
  double worst = 0;
  for (int i = 0; i <= 200000; ++i) {
    const double x = -708.0 * i / 200000.0;
    const double want = std::exp(x);
    worst = std::max(worst, std::abs(exp_nonpositive(x) - want) / want);
  }
  EXPECT_LE(worst, 4 * std::numeric_limits<double>::epsilon());
}

// A vocabulary of logits (masked entries included) against a long-double reference.
TEST(LogSumExp, MatchesLongDoubleOverAVocabulary) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-30.0f, 30.0f);
  std::vector<float> x(51865);
  for (size_t i = 0; i < x.size(); ++i) x[i] = i % 7 == 3 ? kNegInf : u(rng);
  const float peak = *std::max_element(x.begin(), x.end());
  long double sum = 0;
  for (float v : x) sum += std::exp(static_cast<long double>(v) - peak);
  const long double want = peak + std::log(sum);
  EXPECT_NEAR(log_sum_exp(x), static_cast<double>(want), 1e-12);
  // Short spans (below one block of lanes) and a single entry.
  EXPECT_NEAR(log_sum_exp(std::span<const float>(x).first(5)),
              std::log(std::exp(double(x[0])) + std::exp(double(x[1])) + std::exp(double(x[2])) +
                       std::exp(double(x[4]))),
              1e-12);
  EXPECT_EQ(log_sum_exp(std::span<const float>(x).first(1)), double(x[0]));
}

TEST(LogSumExp, HandlesInfinitiesAndLargeValues) {
  std::vector<float> x = {1000.0f, 1000.0f, kNegInf};
  EXPECT_NEAR(log_sum_exp(x), 1000.0 + std::log(2.0), 1e-9);
  std::vector<float> none = {kNegInf, kNegInf};
  EXPECT_EQ(log_sum_exp(none), -std::numeric_limits<double>::infinity());
  std::vector<float> out;
  log_softmax(std::vector<float>{0.0f, 0.0f}, out);
  EXPECT_NEAR(out[0], std::log(0.5), 1e-7);
}

}  // namespace
}  // namespace hark
