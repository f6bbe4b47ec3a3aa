// Choosing tokens next to the logits (core/token_select.h, what the GPU fast path runs)
// must choose what the host filters and decoders choose:
//  - on random logits and random sampled histories, the reference selection equals the
//    host filters (SuppressBlank, SuppressTokens, ApplyTimestampRules) followed by the
//    argmax / top-k of log_softmax;
//  - whole DecodingTask runs (greedy with and without timestamps, with a prompt, beam 5)
//    on the synthetic tiny model give the same tokens through step_select as through the
//    logits, and the same again with the prompt in one pass and the model one step ahead.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "audio/mel.h"
#include "core/token_select.h"
#include "core/token_select_rules.h"
#include "decode/decoding_task.h"
#include "decode/model_inference.h"
#include "model/synthetic.h"
#include "model/whisper_model.h"
#include "scripted_inference.h"
#include "tokenizer/tokenizer.h"
#include "transcribe/seek_loop.h"

namespace hark {
namespace {

// Host filters then the k best of log_softmax, ties to the lower id: what the decoders do.
std::vector<TokenChoice> host_choices(std::vector<float> logits, const std::vector<std::unique_ptr<LogitFilter>>& filters,
                                      const std::vector<int>& tokens, int k) {
  for (const auto& f : filters) f->apply(logits, tokens);
  std::vector<float> lp;
  log_softmax(logits, lp);
  std::vector<int> order(lp.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return lp[a] > lp[b] || (lp[a] == lp[b] && a < b); });
  std::vector<TokenChoice> out;
  for (int c = 0; c < k; ++c) out.push_back({order[c], lp[order[c]]});
  return out;
}

TEST(TokenSelection, EqualsTheHostFiltersOnRandomHistories) {
  const SpecialTokens s = testing::tiny_specials();
  const int vocab = s.n_vocab, sample_begin = 3, k = 3;
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 3.0f);
  int compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    SelectionRules rules;
    rules.eot = s.eot;
    rules.suppress_blank = trial % 2 == 0;
    rules.blank = s.space;
    rules.blank.push_back(s.eot);
    rules.suppress = {7, 8, s.sot, s.sot_prev, s.sot_lm, s.no_speech};
    rules.timestamps = trial % 3 != 0;
    rules.timestamp_begin = s.timestamp_begin;
    rules.no_timestamps = s.no_timestamps;
    rules.max_initial_timestamp = trial % 5 == 0 ? -1 : 4;
    std::vector<std::unique_ptr<LogitFilter>> filters;
    if (rules.suppress_blank) filters.push_back(std::make_unique<SuppressBlank>(s, sample_begin));
    filters.push_back(std::make_unique<SuppressTokens>(rules.suppress));
    if (rules.timestamps)
      filters.push_back(std::make_unique<ApplyTimestampRules>(
          s, sample_begin, rules.max_initial_timestamp < 0 ? std::nullopt : std::optional<int>(rules.max_initial_timestamp)));
    // A random sampled history: text and (non-decreasing) timestamps.
    std::vector<int> tokens = {s.sot, 12, s.transcribe};
    const int n = static_cast<int>(rng() % 6);
    int time = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      if (rng() % 2) {
        time += static_cast<int>(rng() % 3);
        tokens.push_back(s.timestamp_begin + time);
      } else {
        tokens.push_back(static_cast<int>(rng() % 7));
      }
    }
    std::vector<float> logits(vocab);
    for (float& v : logits) v = noise(rng);
    const std::vector<TokenChoice> want = host_choices(logits, filters, tokens, k);
    const SampledSummary summary =
        SampledSummary::of(std::span<const int>(tokens).subspan(sample_begin), s.timestamp_begin);
    const std::vector<int32_t> spec = make_select_spec(rules, vocab, std::span(&summary, 1));
    std::vector<int32_t> out(k * 2);
    select_tokens_reference(logits.data(), 1, vocab, spec.data(), k, out.data());
    for (int c = 0; c < k; ++c) {
      if (std::isinf(want[c].logprob)) break;  // fewer than k tokens left unmasked
      EXPECT_EQ(out[2 * c], want[c].token) << "trial " << trial << " choice " << c;
      EXPECT_NEAR(std::bit_cast<float>(out[2 * c + 1]), want[c].logprob, 1e-4) << "trial " << trial;
      ++compared;
    }
  }
  EXPECT_GT(compared, 900);
}

// The host's advance of a greedy row (advance_summary: the default greedy_steps, the
// batching scheduler) and the one next to the logits (select_feed_back: the GPU) agree
// token for token on histories with timestamps and an end-of-text that must stick.
TEST(TokenSelection, HostAndDeviceFeedBackAgree) {
  SelectionRules rules;
  rules.eot = 50257;
  rules.timestamp_begin = 50364;
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> pick(0, 9);
  for (int trial = 0; trial < 200; ++trial) {
    SampledSummary host;
    std::vector<int32_t> spec = make_select_spec(rules, 51865, std::vector<SampledSummary>(1));
    std::vector<int32_t> inputs = {3, 0, 50363};
    for (int step = 0; step < 12; ++step) {
      const int kind = pick(rng);
      const int chosen = kind == 0 ? rules.eot : kind < 4 ? 50364 + 2 * step : 400 + kind;
      const int a = advance_summary(host, chosen, rules);
      const int b = select_feed_back(spec.data(), 0, chosen, inputs.data(), 1);
      ASSERT_EQ(a, b) << "trial " << trial << " step " << step;
      const int32_t* row = spec.data() + select_spec::kHeader + spec[select_spec::kMaskWords];
      EXPECT_EQ(host.count, row[0]);
      EXPECT_EQ(host.last, row[1]);
      EXPECT_EQ(host.penultimate, row[2]);
      EXPECT_EQ(host.last_timestamp, row[3]);
      EXPECT_EQ(inputs[0], 3 + step + 1);
      EXPECT_EQ(inputs[2], a);
    }
  }
}

// ModelInference whose step_select runs the reference selection on the step's logits.
class SelectingInference : public ModelInference {
 public:
  using ModelInference::ModelInference;
  bool can_select() const override { return true; }
  std::vector<TokenChoice> step_select(std::span<const int32_t> tokens, const SelectionRules& rules,
                                       std::span<const SampledSummary> rows, int k) override {
    ++selections;
    const std::vector<float> logits = step(tokens, 1);
    const int n = static_cast<int>(rows.size()), vocab = static_cast<int>(logits.size()) / n;
    const std::vector<int32_t> spec = make_select_spec(rules, vocab, rows);
    std::vector<int32_t> out(static_cast<size_t>(n) * k * 2);
    select_tokens_reference(logits.data(), n, vocab, spec.data(), k, out.data());
    std::vector<TokenChoice> choices;
    for (size_t i = 0; i < out.size(); i += 2) choices.push_back({out[i], std::bit_cast<float>(out[i + 1])});
    return choices;
  }
  int selections = 0;
};

// What ModelInference does on the GPU fast path, here on the CPU: the prompt in one pass,
// greedy decoding with the model one step ahead (WhisperModel::decode_two_positions,
// decode_greedy).
class AheadInference : public SelectingInference {
 public:
  AheadInference(WhisperModel& model, std::shared_ptr<const AudioContext> audio)
      : SelectingInference(model, audio), model_(model), audio_(std::move(audio)) {}
  void begin(int rows) override {
    SelectingInference::begin(rows);
    state_ = model_.new_state(audio_, rows);
  }
  std::vector<float> step(std::span<const int32_t> tokens, int n_new) override {
    return model_.decode(*state_, tokens, n_new).to_vector();
  }
  std::vector<TokenChoice> step_select(std::span<const int32_t> tokens, const SelectionRules& rules,
                                       std::span<const SampledSummary> rows, int k) override {
    return model_.decode_select(*state_, tokens, rules, rows, k);
  }
  void reorder(std::span<const int> source) override { model_.reorder(*state_, source); }
  int greedy_steps(int32_t token, const SelectionRules& rules, SampledSummary summary, int max_steps,
                   const std::function<bool(const TokenChoice&)>& on_choice) override {
    ++ahead;
    return model_.decode_greedy(*state_, token, rules, summary, max_steps, on_choice);
  }
  std::vector<float> step_two_positions(std::span<const int32_t> tokens, int n_new, int position) override {
    ++one_pass;
    return model_.decode_two_positions(*state_, tokens, n_new, position).to_vector();
  }
  // The prompt's first step chosen next to the logits too (WhisperModel::decode_prompt_select),
  // when select_prompt is set.
  bool can_select_prompt() const override { return select_prompt; }
  PromptChoices step_two_positions_select(std::span<const int32_t> tokens, int n_new, int position,
                                          const SelectionRules& rules, std::span<const SampledSummary> rows,
                                          int k) override {
    ++one_pass;
    WhisperModel::PromptChoices p = model_.decode_prompt_select(*state_, tokens, n_new, position, rules, rows, k);
    return {p.row0_at_position.to_vector(), std::move(p.choices)};
  }
  bool select_prompt = false;
  int ahead = 0, one_pass = 0;

 private:
  WhisperModel& model_;
  std::shared_ptr<const AudioContext> audio_;
  std::unique_ptr<DecoderState> state_;
};

TEST(TokenSelection, DecodingTasksChooseTheSameTokens) {
  auto ckpt = std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hparams_for_size("tiny")));
  WhisperModel model(ckpt, make_cpu_backend({2}));
  auto tokenizer = Tokenizer::for_vocab_size(model.hparams().n_vocab);
  const DecodingVocabulary vocab = make_decoding_vocabulary(*tokenizer, model.hparams());
  Tensor mel = Tensor::empty({model.hparams().n_mels, 3000});
  for (int64_t i = 0; i < mel.numel(); ++i) mel.data<float>()[i] = 0.4f * std::sin(0.0007f * i) + 0.1f * std::cos(0.01f * i);
  auto audio = model.prepare_audio(mel);
  std::vector<DecodingOptions> cases(5);
  cases[1].without_timestamps = true;
  cases[2].prompt = {400, 370, 452};
  cases[3].beam_size = 5;
  cases[4].beam_size = 3;
  cases[4].without_timestamps = true;
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].language = "en";
    cases[i].sample_len = 12;
    ModelInference plain(model, audio);
    SelectingInference selecting(model, audio);
    const DecodingResult a = DecodingTask(vocab, cases[i]).run(plain);
    const DecodingResult b = DecodingTask(vocab, cases[i]).run(selecting);
    EXPECT_GT(selecting.selections, 0) << "case " << i;
    EXPECT_EQ(b.tokens, a.tokens) << "case " << i;
    EXPECT_NEAR(b.sum_logprob, a.sum_logprob, 1e-3 * std::max<size_t>(1, a.tokens.size())) << "case " << i;
    for (bool select_prompt : {false, true}) {
      AheadInference ahead(model, audio);
      ahead.select_prompt = select_prompt;
      const DecodingResult c = DecodingTask(vocab, cases[i]).run(ahead);
      const std::string what = "case " + std::to_string(i) + (select_prompt ? ", prompt's step chosen with it" : "");
      EXPECT_EQ(ahead.one_pass, 1) << what;
      EXPECT_EQ(ahead.ahead, cases[i].beam_size > 0 ? 0 : 1) << what;
      EXPECT_EQ(c.tokens, a.tokens) << what;
      EXPECT_NEAR(c.sum_logprob, a.sum_logprob, 1e-3 * std::max<size_t>(1, a.tokens.size())) << what;
      EXPECT_NEAR(c.no_speech_prob, a.no_speech_prob, 1e-5) << what;
    }
  }
}

// What a device wrote is checked before it is used as a token.
TEST(TokenSelection, ReadChoiceRefusesTokensOutsideTheVocabularyAndNaN) {
  const int32_t good[2] = {7, std::bit_cast<int32_t>(-0.25f)};
  const TokenChoice c = read_choice(good, 40, 0);
  EXPECT_EQ(c.token, 7);
  EXPECT_EQ(c.logprob, -0.25f);
  const int32_t minus_inf[2] = {39, std::bit_cast<int32_t>(-std::numeric_limits<float>::infinity())};
  EXPECT_EQ(read_choice(minus_inf, 40, 1).token, 39);  // a masked token's choice is legitimate
  for (const auto& bad : {std::array<int32_t, 2>{40, 0}, std::array<int32_t, 2>{-1, 0},
                          std::array<int32_t, 2>{3, std::bit_cast<int32_t>(std::numeric_limits<float>::quiet_NaN())}}) {
    try {
      read_choice(bad.data(), 40, 5);
      FAIL() << "expected an error for token " << bad[0];
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("choice 5 is token"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace hark
