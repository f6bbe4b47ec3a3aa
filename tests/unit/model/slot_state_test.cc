// Slot states (continuous batching) give every row exactly what the row gets in a state of
// its own: groups on different windows in different slots, prefills on a group's own rows,
// rows sitting a step out, beam reorders inside a group, growing and shrinking the state,
// and the device-side selection. Bad calls are errors, not corruption.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/token_select.h"
#include "model/synthetic.h"
#include "model/whisper_model.h"

namespace hark {
namespace {

// A narrow model with short windows and contexts: cheap, and every code path of the decoder.
std::shared_ptr<WhisperModel> narrow_model() {
  static std::shared_ptr<const Checkpoint> ckpt = [] {
    HParams hp;
    hp.n_audio_state = hp.n_text_state = 64;
    hp.n_audio_head = hp.n_text_head = 4;
    hp.n_audio_layer = 1;
    hp.n_text_layer = 2;
    hp.n_audio_ctx = 40;
    hp.n_text_ctx = 24;
    return std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hp));
  }();
  return std::make_shared<WhisperModel>(ckpt, std::shared_ptr<Backend>(make_cpu_backend({2})));
}

std::shared_ptr<const AudioContext> window(WhisperModel& model, float phase) {
  const HParams& hp = model.hparams();
  Tensor mel = Tensor::empty({hp.n_mels, 2LL * hp.n_audio_ctx});
  for (int64_t i = 0; i < mel.numel(); ++i) mel.data<float>()[i] = 0.5f * std::sin(0.01f * i + phase);
  return model.prepare_audio(mel);
}

void expect_same_rows(const Tensor& got, int64_t got_row, const Tensor& want, int64_t want_row, const char* what) {
  const int64_t n = want.dim(-1);
  EXPECT_EQ(std::memcmp(got.data<float>() + got_row * n, want.data<float>() + want_row * n, n * sizeof(float)), 0)
      << what << ": row differs from the same row decoded alone";
}

// One group: its own state (the reference) and its rows in the slot state.
struct Group {
  int first, rows;
  std::shared_ptr<const AudioContext> audio;
  std::vector<int32_t> prompt;  // per row
  std::unique_ptr<DecoderState> alone;
};

TEST(SlotState, RowsEqualTheirOwnStatesThroughPrefillStepsReorderAndResize) {
  auto model = narrow_model();
  auto a = window(*model, 0.0f), b = window(*model, 1.1f), c = window(*model, 2.3f);
  std::vector<Group> groups;
  groups.push_back({0, 3, a, {50258, 50259, 50359}, nullptr});       // beams
  groups.push_back({4, 1, b, {50258, 50260, 50359, 50363}, nullptr});
  groups.push_back({5, 2, c, {50258, 50261}, nullptr});
  auto slots = model->new_slot_state(8, 8, a->frames());
  for (auto& g : groups) {
    model->load_window(*slots, g.first, *g.audio);
    model->start_rows(*slots, g.first, g.rows, g.first);
    g.alone = model->new_state(g.audio, g.rows);
    const int n = static_cast<int>(g.prompt.size());
    std::vector<int32_t> tokens;
    for (int r = 0; r < g.rows; ++r) tokens.insert(tokens.end(), g.prompt.begin(), g.prompt.end());
    Tensor got = model->decode_rows(*slots, g.first, g.rows, tokens, n);
    Tensor want = model->decode(*g.alone, tokens, n);
    for (int r = 0; r < g.rows; ++r) expect_same_rows(got, r, want, r, "prefill");
  }
  for (int step = 0; step < 6; ++step) {
    if (step == 2) slots = model->resize_slot_state(*slots, 16, 16);  // grows under running rows
    if (step == 4) slots = model->resize_slot_state(*slots, 8, 8);    // and shrinks back
    std::vector<int32_t> tokens(slots->batch(), 0);
    std::vector<uint8_t> active(slots->batch(), 0);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      if (gi == 1 && step == 3) continue;  // this group sits step 3 out
      for (int r = 0; r < groups[gi].rows; ++r) {
        tokens[groups[gi].first + r] = 400 + 37 * step + 11 * r + static_cast<int>(gi);
        active[groups[gi].first + r] = 1;
      }
    }
    model->step_rows(*slots, tokens, active);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      Group& g = groups[gi];
      if (!active[g.first]) continue;
      Tensor want = model->decode(*g.alone, std::span<const int32_t>(tokens).subspan(g.first, g.rows), 1);
      Tensor got = model->slot_logits(*slots, g.first, g.rows);
      for (int r = 0; r < g.rows; ++r) expect_same_rows(got, r, want, r, "step");
      EXPECT_EQ(slots->length(g.first), g.alone->length(0));
    }
    const std::vector<int> source = {2, 0, 0};  // the beams of group 0 reorder
    model->reorder_rows(*slots, groups[0].first, source);
    model->reorder(*groups[0].alone, source);
  }
}

// The scheduler prefills the waiting prompts of neighbouring groups in one pass: groups on
// different windows, with the no-speech position's logits too ([2·count, vocab], that
// position's rows first). Each group gets exactly the rows of its own prefill.
TEST(SlotState, OnePrefillOverNeighbouringGroupsEqualsEachGroupAlone) {
  auto model = narrow_model();
  auto a = window(*model, 0.4f), b = window(*model, 1.7f), c = window(*model, 2.9f);
  struct Part {
    int first, rows;
    std::shared_ptr<const AudioContext> audio;
    std::vector<int32_t> prompt;
  };
  const std::vector<Part> parts = {{0, 1, a, {50258, 50259, 50359}}, {1, 2, b, {50258, 50260, 50359}},
                                   {3, 1, c, {50258, 50261, 50363}}};
  auto slots = model->new_slot_state(4, 4, a->frames());
  std::vector<int32_t> tokens;
  for (const Part& p : parts) {
    model->load_window(*slots, p.first, *p.audio);
    model->start_rows(*slots, p.first, p.rows, p.first);
    for (int r = 0; r < p.rows; ++r) tokens.insert(tokens.end(), p.prompt.begin(), p.prompt.end());
  }
  const int n = 3, count = 4, also = 0;
  Tensor got = model->decode_rows(*slots, 0, count, tokens, n, also);
  ASSERT_EQ(got.dim(0), 2 * count);
  for (const Part& p : parts) {
    auto alone = model->new_slot_state(p.rows, 1, a->frames());
    model->load_window(*alone, 0, *p.audio);
    model->start_rows(*alone, 0, p.rows, 0);
    std::vector<int32_t> own;
    for (int r = 0; r < p.rows; ++r) own.insert(own.end(), p.prompt.begin(), p.prompt.end());
    Tensor want = model->decode_rows(*alone, 0, p.rows, own, n, also);
    for (int r = 0; r < p.rows; ++r) {
      expect_same_rows(got, p.first + r, want, r, "merged prefill, second position");
      expect_same_rows(got, count + p.first + r, want, p.rows + r, "merged prefill, last position");
    }
    EXPECT_EQ(slots->length(p.first), n);
  }
}

// Prompts on scattered runs of rows, queued together and waited for once
// (decode_row_prompts, the scheduler's prefills of a turn): each gets exactly what
// decode_rows gives it alone, also when the prompts fill the state's logits buffer (a
// wait in the middle) and when one prompt is wider than that buffer (decoded on its own).
TEST(SlotState, PromptsOnScatteredRunsInOneWaitEqualEachAlone) {
  auto model = narrow_model();
  struct Part {
    int first, rows;
    std::vector<int32_t> prompt;
    int also;
  };
  // 4 + 2 + 2 + 2 logits rows: the state's 8-row buffer waits once midway.
  const std::vector<Part> parts = {{0, 2, {50258, 50259, 50359}, 0},
                                   {3, 1, {50258, 50260, 50359, 50363}, 1},
                                   {5, 2, {50258, 50261}, -1},
                                   {7, 1, {50258, 50262, 50359}, 0}};
  auto slots = model->new_slot_state(8, 8, window(*model, 0.0f)->frames());
  std::vector<std::vector<int32_t>> tokens;
  std::vector<WhisperModel::RowPrompt> prompts;
  for (const Part& p : parts) {
    auto audio = window(*model, 0.3f * p.first);
    model->load_window(*slots, p.first, *audio);
    model->start_rows(*slots, p.first, p.rows, p.first);
    tokens.emplace_back();
    for (int r = 0; r < p.rows; ++r) tokens.back().insert(tokens.back().end(), p.prompt.begin(), p.prompt.end());
  }
  for (size_t i = 0; i < parts.size(); ++i)
    prompts.push_back({parts[i].first, parts[i].rows, tokens[i], static_cast<int>(parts[i].prompt.size()), parts[i].also});
  // Overlapping runs are refused before anything runs.
  std::vector<WhisperModel::RowPrompt> overlapping = {prompts[0], {1, 1, std::span(tokens[0]).first(3), 3, 0}};
  EXPECT_THROW(model->decode_row_prompts(*slots, overlapping), Error);
  EXPECT_EQ(slots->length(0), 0);
  std::vector<Tensor> got = model->decode_row_prompts(*slots, prompts);
  ASSERT_EQ(got.size(), parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    auto alone = model->new_slot_state(p.rows, 1, window(*model, 0.0f)->frames());
    model->load_window(*alone, 0, *window(*model, 0.3f * p.first));
    model->start_rows(*alone, 0, p.rows, 0);
    Tensor want = model->decode_rows(*alone, 0, p.rows, tokens[i], static_cast<int>(p.prompt.size()), p.also);
    ASSERT_EQ(got[i].dim(0), want.dim(0));
    for (int64_t r = 0; r < want.dim(0); ++r) expect_same_rows(got[i], r, want, r, "prompt in a shared wait");
    EXPECT_EQ(slots->length(p.first), static_cast<int>(p.prompt.size()));
  }
  // A prompt wider than the logits buffer of a small state, after one that fits.
  auto small = model->new_slot_state(3, 3, window(*model, 0.0f)->frames());
  auto audio = window(*model, 0.7f);
  model->load_window(*small, 0, *audio);
  model->start_rows(*small, 0, 2, 0);
  model->start_rows(*small, 2, 1, 0);
  const std::vector<int32_t> two_rows = {50258, 50259, 50359, 50258, 50259, 50359};
  const std::vector<WhisperModel::RowPrompt> mixed = {{2, 1, std::span(two_rows).first(3), 3, -1}, {0, 2, two_rows, 3, 0}};
  std::vector<Tensor> out = model->decode_row_prompts(*small, mixed);
  auto alone = model->new_slot_state(2, 1, audio->frames());
  model->load_window(*alone, 0, *audio);
  model->start_rows(*alone, 0, 2, 0);
  Tensor want = model->decode_rows(*alone, 0, 2, two_rows, 3, 0);
  ASSERT_EQ(out[1].dim(0), 4);
  for (int r = 0; r < 4; ++r) expect_same_rows(out[1], r, want, r, "prompt wider than the buffer");
}

TEST(SlotState, FreedRowsAndWindowsAreReusedByNewGroups) {
  auto model = narrow_model();
  auto a = window(*model, 0.3f), b = window(*model, 0.9f);
  auto slots = model->new_slot_state(2, 2, a->frames());
  model->load_window(*slots, 0, *a);
  model->start_rows(*slots, 0, 2, 0);
  model->decode_rows(*slots, 0, 2, std::vector<int32_t>{50258, 50259, 50258, 50259}, 2);
  model->free_rows(*slots, 0, 2);
  EXPECT_EQ(slots->length(0), 0);
  // A new group on another window in the same rows decodes as if the rows were fresh.
  model->load_window(*slots, 0, *b);
  model->start_rows(*slots, 0, 1, 0);
  Tensor got = model->decode_rows(*slots, 0, 1, std::vector<int32_t>{50258, 50260}, 2);
  auto alone = model->new_state(b, 1);
  Tensor want = model->decode(*alone, std::vector<int32_t>{50258, 50260}, 2);
  expect_same_rows(got, 0, want, 0, "reused rows");
}

TEST(SlotState, SelectRowsMatchesTheReferenceFilters) {
  auto model = narrow_model();
  auto a = window(*model, 0.5f);
  auto slots = model->new_slot_state(4, 4, a->frames());
  model->load_window(*slots, 1, *a);
  model->start_rows(*slots, 1, 2, 1);
  model->decode_rows(*slots, 1, 2, std::vector<int32_t>{50258, 50259, 50359, 50258, 50259, 50359}, 3);
  std::vector<int32_t> tokens = {0, 50364, 50365, 0};
  // Rows 0 (free, within the span) to 2 (the last active) computed; row 3 not.
  EXPECT_EQ(model->step_rows(*slots, tokens, std::vector<uint8_t>{0, 1, 1, 0}), 3);
  SelectionRules rules;
  rules.suppress_blank = true;
  rules.blank = {220, 50257};
  rules.suppress = {1, 2, 7};
  rules.timestamps = true;
  rules.timestamp_begin = 50364;
  rules.no_timestamps = 50363;
  rules.eot = 50257;
  const std::vector<SampledSummary> summaries = {SampledSummary::of(std::vector<int>{50364}, 50364),
                                                 SampledSummary::of(std::vector<int>{50365, 440}, 50364)};
  const std::vector<int> rows = {1, 2};
  std::vector<TokenChoice> got = model->select_rows(*slots, rows, rules, summaries, 3);
  Tensor logits = model->slot_logits(*slots, 1, 2);
  const std::vector<int32_t> spec = make_select_spec(rules, model->hparams().n_vocab, summaries);
  std::vector<int32_t> want(2 * 3 * 2);
  select_tokens_reference(logits.data<float>(), 2, model->hparams().n_vocab, spec.data(), 3, want.data());
  ASSERT_EQ(got.size(), 6u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].token, want[2 * i]);
    EXPECT_EQ(got[i].logprob, std::bit_cast<float>(want[2 * i + 1]));
  }
}

TEST(SlotState, BadCallsAreClearErrors) {
  auto model = narrow_model();
  auto a = window(*model, 0.1f);
  auto slots = model->new_slot_state(2, 2, a->frames());
  const int vocab = model->hparams().n_vocab, ctx = model->hparams().n_text_ctx;
  EXPECT_THROW(model->start_rows(*slots, 1, 2, 0), Error);               // past the last row
  EXPECT_THROW(model->start_rows(*slots, 0, 1, 2), Error);               // the padding window is not a slot
  EXPECT_THROW(model->load_window(*slots, 5, *a), Error);
  EXPECT_THROW(model->decode_rows(*slots, 0, 1, std::vector<int32_t>{vocab}, 1), Error);
  EXPECT_THROW(model->step_rows(*slots, std::vector<int32_t>{0}, std::vector<uint8_t>{1}), Error);  // one per row
  model->load_window(*slots, 0, *a);
  model->start_rows(*slots, 0, 1, 0);
  EXPECT_THROW(model->resize_slot_state(*slots, 1, 0), Error);  // row 0 reads window slot 0
  std::vector<int32_t> fill(ctx, 50258);
  model->decode_rows(*slots, 0, 1, fill, ctx);
  EXPECT_THROW(model->step_rows(*slots, std::vector<int32_t>{1, 0}, std::vector<uint8_t>{1, 0}), Error);  // full
  // A full row that sits the step out does not stop the others.
  model->step_rows(*slots, std::vector<int32_t>{1, 0}, std::vector<uint8_t>{0, 0});
  EXPECT_EQ(slots->length(0), ctx);
  EXPECT_THROW(model->reorder_rows(*slots, 0, std::vector<int>{1}), Error);  // source outside the group
  auto plain = model->new_state(a, 1);
  EXPECT_THROW(model->step_rows(*plain, std::vector<int32_t>{0}, std::vector<uint8_t>{1}), Error);  // not a slot state
}

}  // namespace
}  // namespace hark
