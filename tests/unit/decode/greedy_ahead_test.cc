// The fast path's two overlaps of host and device, on the CPU backend (same model code,
// the backend's host versions of select_and_feed and mark/wait_for):
//  - WhisperModel::decode_greedy, the device one step ahead of the host with each chosen
//    token fed back where it was chosen, hands over exactly what a decode_select loop
//    chooses, stops where the caller stops, and keeps to max_steps and the text context;
//  - decode_two_positions, a window's prompt in one pass, gives the logits of two decode()
//    calls (up to the no-speech position, then the rest).
#include <gtest/gtest.h>

#include <cmath>

#include "core/token_select.h"
#include "decode/decoding_task.h"
#include "model/synthetic.h"
#include "model/whisper_model.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "transcribe/seek_loop.h"

namespace hark {
namespace {

struct Fixture {
  std::unique_ptr<WhisperModel> model;
  std::shared_ptr<const AudioContext> audio;
  SelectionRules rules;
};

Fixture tiny() {
  Fixture f;
  auto ckpt = std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hparams_for_size("tiny")));
  f.model = std::make_unique<WhisperModel>(ckpt, make_cpu_backend({2}));
  Tensor mel = Tensor::empty({f.model->hparams().n_mels, 3000});
  for (int64_t i = 0; i < mel.numel(); ++i) mel.data<float>()[i] = 0.4f * std::sin(0.0009f * i);
  f.audio = f.model->prepare_audio(mel);
  auto tokenizer = Tokenizer::for_vocab_size(f.model->hparams().n_vocab);
  const DecodingVocabulary vocab = make_decoding_vocabulary(*tokenizer, f.model->hparams());
  const SpecialTokens& s = vocab.specials;
  f.rules.eot = s.eot;
  f.rules.suppress_blank = true;
  f.rules.blank = s.space;
  f.rules.blank.push_back(s.eot);
  f.rules.suppress = resolve_suppress_tokens({-1}, vocab.non_speech, s);
  f.rules.timestamps = true;
  f.rules.timestamp_begin = s.timestamp_begin;
  f.rules.no_timestamps = s.no_timestamps;
  f.rules.max_initial_timestamp = 50;
  return f;
}

const std::vector<int32_t> kPrompt = {50258, 50259, 50359};

// The host loop decode_greedy replaces: one decode_select per step, the summary advanced
// on the host as GreedyDecoder advances the row.
std::vector<TokenChoice> select_loop(Fixture& f, int steps) {
  auto state = f.model->new_state(f.audio);
  f.model->decode(*state, kPrompt, static_cast<int>(kPrompt.size()));
  SampledSummary summary;
  int32_t token = f.rules.timestamp_begin;  // the first sampled token: <|0.00|>
  std::vector<TokenChoice> out;
  for (int i = 0; i < steps; ++i) {
    const TokenChoice c = f.model->decode_select(*state, std::span<const int32_t>(&token, 1), f.rules,
                                                 std::span<const SampledSummary>(&summary, 1), 1)[0];
    out.push_back(c);
    const int next = summary.count > 0 && summary.last == f.rules.eot ? f.rules.eot : c.token;
    summary = {summary.count + 1, next, summary.last, next >= f.rules.timestamp_begin ? next : summary.last_timestamp};
    token = next;
  }
  return out;
}

TEST(GreedyAhead, HandsOverWhatASelectLoopChooses) {
  Fixture f = tiny();
  const std::vector<TokenChoice> want = select_loop(f, 14);
  auto state = f.model->new_state(f.audio);
  f.model->decode(*state, kPrompt, static_cast<int>(kPrompt.size()));
  std::vector<TokenChoice> got;
  const int handed = f.model->decode_greedy(*state, f.rules.timestamp_begin, f.rules, SampledSummary{}, 14,
                                            [&](const TokenChoice& c) {
                                              got.push_back(c);
                                              return true;
                                            });
  EXPECT_EQ(handed, 14);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].token, want[i].token) << "step " << i;
    EXPECT_EQ(got[i].logprob, want[i].logprob) << "step " << i;
  }
  EXPECT_EQ(state->length(0), static_cast<int>(kPrompt.size()) + 14);
}

TEST(GreedyAhead, StopsWhereTheCallerStopsAndWithinTheContext) {
  Fixture f = tiny();
  const std::vector<TokenChoice> want = select_loop(f, 5);
  {  // the caller stops at the fifth choice: one more step may have run, nothing more
    auto state = f.model->new_state(f.audio);
    f.model->decode(*state, kPrompt, static_cast<int>(kPrompt.size()));
    int seen = 0;
    const int handed = f.model->decode_greedy(*state, f.rules.timestamp_begin, f.rules, SampledSummary{}, 40,
                                              [&](const TokenChoice& c) {
                                                EXPECT_EQ(c.token, want[seen].token);
                                                return ++seen < 5;
                                              });
    EXPECT_EQ(handed, 5);
    EXPECT_GE(state->length(0), static_cast<int>(kPrompt.size()) + 5);
    EXPECT_LE(state->length(0), static_cast<int>(kPrompt.size()) + 6);
  }
  {  // three positions left in the text context: three steps, however many were asked for
    auto state = f.model->new_state(f.audio);
    const int n_ctx = f.model->hparams().n_text_ctx;
    std::vector<int32_t> long_prompt(n_ctx - 3, 400);
    long_prompt[0] = 50258;
    f.model->decode(*state, long_prompt, static_cast<int>(long_prompt.size()));
    const int handed = f.model->decode_greedy(*state, 401, f.rules, SampledSummary{}, 40,
                                              [](const TokenChoice&) { return true; });
    EXPECT_EQ(handed, 3);
    EXPECT_EQ(state->length(0), n_ctx);
  }
  {  // max_steps
    auto state = f.model->new_state(f.audio);
    f.model->decode(*state, kPrompt, static_cast<int>(kPrompt.size()));
    EXPECT_EQ(f.model->decode_greedy(*state, 401, f.rules, SampledSummary{}, 2, [](const TokenChoice&) { return true; }),
              2);
    EXPECT_EQ(f.model->decode_greedy(*state, 401, f.rules, SampledSummary{}, 0, [](const TokenChoice&) { return true; }),
              0);
  }
}

TEST(GreedyAhead, RefusesSeveralRowsAndTokensOutsideTheVocabulary) {
  Fixture f = tiny();
  auto two = f.model->new_state(f.audio, 2);
  const auto go_on = [](const TokenChoice&) { return true; };
  EXPECT_THROW(f.model->decode_greedy(*two, 401, f.rules, SampledSummary{}, 3, go_on), Error);
  auto one = f.model->new_state(f.audio);
  EXPECT_THROW(f.model->decode_greedy(*one, f.model->hparams().n_vocab, f.rules, SampledSummary{}, 3, go_on), Error);
}

TEST(PromptInOnePass, EqualsTwoDecodeCalls) {
  Fixture f = tiny();
  const std::vector<int32_t> prompt = {50258, 50259, 50359, 50363};
  const int64_t n_vocab = f.model->hparams().n_vocab;
  for (int position : {0, 1}) {
    auto a = f.model->new_state(f.audio, 2), b = f.model->new_state(f.audio, 2);
    std::vector<int32_t> both;  // two rows of the same prompt
    both.insert(both.end(), prompt.begin(), prompt.end());
    both.insert(both.end(), prompt.begin(), prompt.end());
    const Tensor one_pass = f.model->decode_two_positions(*a, both, 4, position);
    ASSERT_EQ(one_pass.shape(), (std::vector<int64_t>{2, 2, n_vocab}));
    std::vector<int32_t> head, rest;
    for (int r = 0; r < 2; ++r) {
      head.insert(head.end(), prompt.begin(), prompt.begin() + position + 1);
      rest.insert(rest.end(), prompt.begin() + position + 1, prompt.end());
    }
    const Tensor first = f.model->decode(*b, head, position + 1);
    const Tensor last = f.model->decode(*b, rest, 3 - position);
    EXPECT_LE(test::max_abs_diff(one_pass.rows(0, 1).reshape(first.shape()), first), 1e-4) << "position " << position;
    EXPECT_LE(test::max_abs_diff(one_pass.rows(1, 2).reshape(last.shape()), last), 1e-4) << "position " << position;
    EXPECT_EQ(a->length(0), 4);
    EXPECT_EQ(a->length(1), 4);
  }
  auto c = f.model->new_state(f.audio);
  EXPECT_THROW(f.model->decode_two_positions(*c, prompt, 4, 3), Error);  // the last position is always returned
  EXPECT_THROW(f.model->decode_two_positions(*c, prompt, 4, -1), Error);
}

}  // namespace
}  // namespace hark
