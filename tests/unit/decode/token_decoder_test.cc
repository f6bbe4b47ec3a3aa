// Greedy, sampling and beam search on scripted log-probabilities, traced by hand.
#include "decode/token_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "decode/decoding_task.h"
#include "decode/logit_filters.h"
#include "hark/error.h"
#include "scripted_inference.h"

namespace hark {
namespace {

using testing::logprobs_with;
using testing::ScriptedInference;
using testing::tiny_vocabulary;

// A Markov chain over the last token (start = <|notimestamps|>, 18):
//   start → w0 .5 | w1 .4 | EOT .1;  w0 → EOT .9 | w2 .1;  w1 → EOT .2 | w3 .8;  w2, w3 → EOT
std::vector<float> chain(const std::vector<int>& history) {
  switch (history.back()) {
    case 18: return logprobs_with(40, {{0, 0.5}, {1, 0.4}, {10, 0.1}});
    case 0: return logprobs_with(40, {{10, 0.9}, {2, 0.1}});
    case 1: return logprobs_with(40, {{10, 0.2}, {3, 0.8}});
    default: return logprobs_with(40, {{10, 1.0}});
  }
}

DecodingOptions chain_options() {
  DecodingOptions o;
  o.language = "en";
  o.without_timestamps = true;
  o.suppress_blank = false;
  o.suppress_tokens = {};
  return o;
}

TEST(BeamSearch, KeepsTheBestUnfinishedBeamsAndCollectsFinishedOnes) {
  const DecodingVocabulary vocab = tiny_vocabulary();
  DecodingOptions o = chain_options();
  o.beam_size = 2;
  DecodingTask task(vocab, o);
  ScriptedInference inference(chain);
  DecodingResult r = task.run(inference);
  // Finished after step 2: [w0] (.45) and [w1] (.08); length-normalised, w0 wins.
  EXPECT_EQ(r.tokens, std::vector<int>({0}));
  EXPECT_NEAR(r.sum_logprob, std::log(0.45), 1e-5);
  EXPECT_NEAR(r.avg_logprob, std::log(0.45) / 2, 1e-5);
  // Step 2 keeps [w1 w3] (from row 1) then [w0 w2] (from row 0).
  ASSERT_EQ(inference.reorders.size(), 2u);
  EXPECT_EQ(inference.reorders[1], std::vector<int>({1, 0}));
}

// The beams' candidates are each row's best beam_size + 1 tokens by log-probability,
// equal ones going to the lower id, wherever in the vocabulary they lie (the top-k pass
// must keep the first of equal tokens and let later, better ones displace earlier ones).
TEST(BeamSearch, CandidatesAreTheBestTokensWithTiesToTheLowerId) {
  constexpr int kVocab = 300, kEot = 299;
  auto next_of = [&](std::vector<float> row0) {
    BeamSearchDecoder beams(2, kEot, std::nullopt);
    TokenRows tokens = {{18, 3}, {18, 4}};
    std::vector<double> sums = {0.0, -1000.0};  // row 1's candidates never win
    std::vector<float> logits = row0;
    logits.resize(2 * kVocab, 0.0f);
    beams.update(tokens, logits, sums);
    return std::vector<int>{tokens[0].back(), tokens[1].back()};
  };
  // Two equal best logits, far apart: the lower id ranks first.
  std::vector<float> ties(kVocab, 0.0f);
  ties[250] = ties[20] = 5.0f;
  EXPECT_EQ(next_of(ties), std::vector<int>({20, 250}));
  // Rising logits: the best two are the last ids (each new token displaces the kept ones).
  std::vector<float> rising(kVocab);
  for (int i = 0; i < kVocab; ++i) rising[i] = 0.01f * static_cast<float>(i);
  rising[kEot] = -1e9f;
  EXPECT_EQ(next_of(rising), std::vector<int>({298, 297}));
  // All masked but one: the kept ties at -inf come from the lowest ids, after the one.
  std::vector<float> masked(kVocab, -std::numeric_limits<float>::infinity());
  masked[123] = 1.0f;
  EXPECT_EQ(next_of(masked), std::vector<int>({123, 0}));
}

TEST(BeamSearch, PatienceWaitsForMoreFinishedCandidates) {
  const DecodingVocabulary vocab = tiny_vocabulary();
  DecodingOptions o = chain_options();
  o.beam_size = 2;
  o.patience = 2.0f;  // four finished candidates: [w1 w3] (.32, length 2) now wins
  DecodingTask task(vocab, o);
  ScriptedInference inference(chain);
  DecodingResult r = task.run(inference);
  EXPECT_EQ(r.tokens, std::vector<int>({1, 3}));
  EXPECT_NEAR(r.sum_logprob, std::log(0.32), 1e-5);
}

TEST(BeamSearch, LengthPenaltyZeroRanksByRawLogProbability) {
  const DecodingVocabulary vocab = tiny_vocabulary();
  DecodingOptions o = chain_options();
  o.beam_size = 2;
  o.patience = 2.0f;
  o.length_penalty = 0.0f;
  DecodingTask task(vocab, o);
  ScriptedInference inference(chain);
  EXPECT_EQ(task.run(inference).tokens, std::vector<int>({0}));
}

TEST(Ranker, GoogleNmtPenaltyAndTies) {
  const std::vector<int> lengths = {1, 4};
  const std::vector<double> sums = {-1.0, -3.0};
  EXPECT_EQ(MaximumLikelihoodRanker(std::nullopt).rank(lengths, sums), 1);  // -1 vs -0.75
  // alpha 1: -1/1 vs -3/1.5 = -2
  EXPECT_EQ(MaximumLikelihoodRanker(1.0f).rank(lengths, sums), 0);
  const std::vector<double> tied = {-2.0, -8.0};
  EXPECT_EQ(MaximumLikelihoodRanker(std::nullopt).rank(lengths, tied), 0);  // first of equals
}

TEST(Greedy, TakesTheArgmaxAndStopsAtEot) {
  const DecodingVocabulary vocab = tiny_vocabulary();
  DecodingTask task(vocab, chain_options());
  ScriptedInference inference(chain);
  DecodingResult r = task.run(inference);
  EXPECT_EQ(r.tokens, std::vector<int>({0}));
  EXPECT_NEAR(r.sum_logprob, std::log(0.5) + std::log(0.9), 1e-5);
  EXPECT_EQ(r.text, "w0");
  EXPECT_EQ(r.temperature, 0.0);
}

TEST(Greedy, RowsThatReachedEotStayThereWithoutAddingLogProbability) {
  GreedyDecoder decoder(0.0f, 10, 0);
  TokenRows rows = {{18, 10}, {18}};
  std::vector<double> sums = {-1.0, 0.0};
  std::vector<float> logits(80, 0.0f);
  logits[5] = 3.0f;        // row 0 would pick w5 but is finished
  logits[40 + 10] = 3.0f;  // row 1 picks EOT
  StepResult step = decoder.update(rows, logits, sums);
  EXPECT_TRUE(step.completed);
  EXPECT_EQ(rows[0].back(), 10);
  EXPECT_EQ(sums[0], -1.0);
  EXPECT_LT(sums[1], 0.0);
}

TEST(Sampling, SameSeedSameSamplesAndFrequenciesFollowTheDistribution) {
  std::vector<float> logits = logprobs_with(40, {{0, 0.7}, {1, 0.3}});
  int zeros = 0;
  GreedyDecoder a(1.0f, 10, 42), b(1.0f, 10, 42);
  for (int i = 0; i < 2000; ++i) {
    TokenRows ra = {{18}}, rb = {{18}};
    std::vector<double> sa = {0}, sb = {0};
    a.update(ra, logits, sa);
    b.update(rb, logits, sb);
    ASSERT_EQ(ra[0].back(), rb[0].back());
    zeros += ra[0].back() == 0;
  }
  EXPECT_NEAR(zeros / 2000.0, 0.7, 0.04);
}

TEST(Sampling, BestOfRanksIndependentSamples) {
  const DecodingVocabulary vocab = tiny_vocabulary();
  DecodingOptions o = chain_options();
  o.temperature = 1.0f;
  o.best_of = 5;
  o.seed = 7;
  DecodingTask task(vocab, o);
  ScriptedInference inference(chain);
  DecodingResult first = task.run(inference);
  DecodingTask again(vocab, o);
  EXPECT_EQ(again.run(inference).tokens, first.tokens);  // deterministic for a seed
  EXPECT_EQ(task.n_group(), 5);
  EXPECT_EQ(first.temperature, 1.0);
}

TEST(BeamSearch, RejectsImpossibleSettings) {
  EXPECT_THROW({ BeamSearchDecoder d(0, 10, std::nullopt); }, Error);
  EXPECT_THROW({ BeamSearchDecoder d(2, 10, 0.1f); }, Error);  // round(0.2) = 0 candidates
}

// Choices from a device that are not beam_size + 1 distinct tokens a row cannot refill the
// beams: a clear error, not a short set of rows.
TEST(BeamSearch, ChoicesThatCannotRefillTheBeamsAreAnError) {
  BeamSearchDecoder d(2, 10, std::nullopt);
  TokenRows tokens = {{18}, {18}};
  std::vector<double> sums = {0, 0};
  const std::vector<TokenChoice> repeated(6, TokenChoice{3, -0.5f});
  try {
    d.update_choices(tokens, repeated, 3, sums);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("refill only 1 of 2 beams"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tokens.size(), 2u);  // the rows are left as they were
  // Distinct choices refill them.
  const std::vector<TokenChoice> fine = {{10, -0.5f}, {3, -1.0f}, {4, -2.0f}, {10, -0.5f}, {3, -1.0f}, {4, -2.0f}};
  EXPECT_NO_THROW(d.update_choices(tokens, fine, 3, sums));
  EXPECT_EQ(tokens.size(), 2u);
}

// Where the filters leave a row nothing, a selection next to the logits offers end-of-text
// at -inf for every choice; when no beam can go on, the search is complete and the beams
// are kept for finalize (before 2026-12-02 the rows were emptied, and the caller crashed).
TEST(BeamSearch, EveryCandidateEndingCompletesTheSearch) {
  BeamSearchDecoder d(2, 10, std::nullopt);
  TokenRows tokens = {{18, 3}, {18, 4}};
  std::vector<double> sums = {-1.0, -2.0};
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<TokenChoice> all_eot(6, TokenChoice{10, -inf});
  const StepResult step = d.update_choices(tokens, all_eot, 3, sums);
  EXPECT_TRUE(step.completed);
  EXPECT_TRUE(step.source.empty());
  ASSERT_EQ(tokens.size(), 2u);
  const std::vector<Candidate> out = d.finalize(tokens, sums);
  ASSERT_EQ(out.size(), 2u);
  for (const Candidate& c : out) EXPECT_EQ(c.tokens.back(), 10);
}

// A row's log-sum-exp handed in by the filters gives the very numbers the decoders compute
// without it (greedy's sum, beam search's candidates), and NaN means "not known".
TEST(Decoders, KnownRowLogSumExpChangesNothing) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> logits(3 * 40);
    for (float& v : logits) v = normal(rng);
    std::vector<double> lse;
    for (int r = 0; r < 3; ++r) lse.push_back(log_sum_exp(std::span<const float>(logits).subspan(r * 40, 40)));
    if (trial % 2) lse[1] = std::numeric_limits<double>::quiet_NaN();
    {
      GreedyDecoder a(0.0f, 10, 1), b(0.0f, 10, 1);
      TokenRows ta = {{18}, {18}, {18}}, tb = ta;
      std::vector<double> sa = {0, 0, 0}, sb = sa;
      a.update(ta, logits, sa);
      b.update(tb, logits, sb, lse);
      EXPECT_EQ(ta, tb);
      EXPECT_EQ(sa, sb);
    }
    {
      BeamSearchDecoder a(3, 10, std::nullopt), b(3, 10, std::nullopt);
      TokenRows ta = {{18, 1}, {18, 2}, {18, 3}}, tb = ta;
      std::vector<double> sa = {-1, -2, -3}, sb = sa;
      const StepResult ra = a.update(ta, logits, sa), rb = b.update(tb, logits, sb, lse);
      EXPECT_EQ(ta, tb);
      EXPECT_EQ(sa, sb);
      EXPECT_EQ(ra.source, rb.source);
    }
  }
}

}  // namespace
}  // namespace hark
