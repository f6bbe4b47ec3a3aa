// Two ways the GPU fast path keeps the device busy while the host reads results: greedy
// decoding one step ahead of the host (the chosen token is fed back on the device), and a
// window's prompt in one pass that also yields the no-speech position's logits.
#include <algorithm>
#include <bit>

#include "core/ops.h"
#include "model/decoder_buffers.h"
#include "model/whisper_model.h"

namespace hark {

int WhisperModel::decode_greedy(DecoderState& state, int32_t token, const SelectionRules& rules,
                                const SampledSummary& summary, int max_steps,
                                const std::function<bool(const TokenChoice&)>& on_choice) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  if (state.batch() != 1) throw Error(ErrorCode::InvalidArgument, "[decoder] decode_greedy decodes one row");
  if (max_steps <= 0) return 0;
  validate_step(state, std::span<const int32_t>(&token, 1), 1);
  DecoderBuffers& buf = *state.buffers_;
  stage_inputs(state, std::span<const int32_t>(&token, 1));
  const std::vector<int32_t> spec = make_select_spec(rules, hp.n_vocab, std::span<const SampledSummary>(&summary, 1));
  std::copy(spec.begin(), spec.end(), buf.host_spec.data<int32_t>());
  Tensor choices = buf.choices.reshape({DecoderBuffers::kMaxChoices * 2}).rows(0, 2);
  Tensor inputs = buf.inputs.rows(0, 3);  // length, window, token of the one row
  const Tensor host_choices = buf.host_choices.reshape({DecoderBuffers::kMaxChoices * 2});
  // Every step takes a position of the cache.
  const int limit = std::min(max_steps, hp.n_text_ctx - state.lengths_[0]);
  std::vector<uint64_t> marks;
  // Step `step` writes its choice to host slot step % 2: the host reads slot s while the
  // next step fills the other one.
  auto launch = [&](int step) {
    const int slot = step % 2;
    const bool first = step == 0;
    Tensor host_slot = host_choices.rows(2 * slot, 2 * slot + 2);
    const uint64_t key = buf.id << 8 | (first ? DecoderBuffers::kGreedyFirstKey : DecoderBuffers::kGreedyNextKey + slot);
    be.replay(key, [&] {
      if (first) be.copy_async(buf.host_spec, buf.spec);
      // The logits, the choice and its feed-back (on CUDA one launch: gemv_one_row_select).
      Tensor hidden = decoder_hidden(state, 1, false, nullptr, 0, -1, /*stage=*/first);
      ops::logits_select_and_feed(be, hidden, *layers_.decoder_ln.weight, *layers_.decoder_ln.bias,
                                  *layers_.token_embedding, buf.spec, 1, choices, inputs);
      be.copy_async(choices, host_slot);
    });
    marks.push_back(be.mark());
    state.lengths_[0] += 1;
  };
  int launched = 0, handed = 0;
  launch(launched++);
  for (;;) {
    if (launched < limit) launch(launched++);  // queued before this step's choice is read
    be.wait_for(marks[handed]);
    const TokenChoice choice = read_choice(host_choices.data<int32_t>() + 2 * (handed % 2), hp.n_vocab, static_cast<size_t>(handed));
    ++handed;
    if (!on_choice(choice) || handed == launched) break;
  }
  return handed;
}

Tensor WhisperModel::decode_two_positions(DecoderState& state, std::span<const int32_t> tokens, int n_new,
                                          int position) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  validate_step(state, tokens, n_new);
  if (position < 0 || position >= n_new - 1)
    throw Error(ErrorCode::InvalidArgument, "[decoder] decode_two_positions needs a position before the last");
  const int batch = state.batch();
  DecoderBuffers& buf = *state.buffers_;
  stage_inputs(state, tokens);
  Tensor result;
  // The common prompt (start of transcript first, a few tokens) is recorded like a step.
  if (position == 0 && n_new <= DecoderBuffers::kMaxRecordedPrefill) {
    result = replayed_logits(state, buf.id << 8 | DecoderBuffers::kTwoPositionsKey | static_cast<uint64_t>(n_new),
                             n_new, position);
  } else {
    result = be.to_host(decoder_forward(state, n_new, false, nullptr, 0, -1, true, position));
  }
  for (int r = 0; r < batch; ++r) state.lengths_[r] += n_new;
  return result.reshape({2, batch, hp.n_vocab});
}

WhisperModel::PromptChoices WhisperModel::decode_prompt_select(DecoderState& state, std::span<const int32_t> tokens,
                                                               int n_new, int position, const SelectionRules& rules,
                                                               std::span<const SampledSummary> rows, int k) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  validate_step(state, tokens, n_new);
  const int batch = state.batch();
  if (position < 0 || position >= n_new - 1)
    throw Error(ErrorCode::InvalidArgument, "[decoder] decode_prompt_select needs a position before the last");
  if (static_cast<int>(rows.size()) != batch || k < 1 || k > DecoderBuffers::kMaxChoices)
    throw Error(ErrorCode::InvalidArgument, "[decoder] decode_prompt_select needs one summary per row and 1..16 choices");
  DecoderBuffers& buf = *state.buffers_;
  stage_inputs(state, tokens);
  ChoiceBuffers choices = stage_selection(state, rules, rows, k);
  Tensor host_row0 = buf.host_logits.rows(0, 1);
  auto pass = [&] {
    be.copy_async(buf.host_spec, buf.spec);
    // [2·batch, n_vocab]: every row at `position`, then every row at the last position.
    Tensor logits = decoder_forward(state, n_new, false, nullptr, 0, -1, true, position);
    Tensor row0 = logits.rows(0, 1);
    be.copy_async(row0, host_row0);
    ops::select_tokens(be, logits.rows(batch, 2 * batch), buf.spec, k, choices.device);
    be.copy_async(choices.device, choices.host);
  };
  // The common prompt (start of transcript first, a few tokens) is recorded like a step.
  if (position == 0 && n_new <= DecoderBuffers::kMaxRecordedPrefill)
    be.replay(buf.id << 8 | DecoderBuffers::kPromptSelectKey | static_cast<uint64_t>(n_new) |
                  static_cast<uint64_t>(k) << 48,
              pass);
  else
    pass();
  be.synchronize();
  for (int r = 0; r < batch; ++r) state.lengths_[r] += n_new;
  return {host_row0.clone().reshape({hp.n_vocab}), read_choices(choices.host)};
}

}  // namespace hark
