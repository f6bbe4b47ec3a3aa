// Slot states for continuous batching (WhisperModel::new_slot_state and friends): fixed
// row and window slots that groups of sequences take and give back while the others keep
// decoding. Every per-step value goes through the state's input buffer, as in decode(), so
// the step of one slot state size is recorded once and replayed.
#include <algorithm>
#include <bit>

#include "core/ops.h"
#include "model/decoder_buffers.h"
#include "model/whisper_model.h"

namespace hark {
namespace {

constexpr int32_t kPaddingToken = 0;

void check_run(const DecoderState& state, int first, int count) {
  if (count < 1 || first < 0 || first + count > state.batch())
    throw Error(ErrorCode::InvalidArgument, "[decoder] rows [" + std::to_string(first) + ", " +
                                                std::to_string(first + count) + ") are outside the slot state's " +
                                                std::to_string(state.batch()) + " rows");
}

}  // namespace

std::unique_ptr<DecoderState> WhisperModel::new_slot_state(int rows, int windows, int64_t frames) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  if (rows < 1 || windows < 1 || frames < 1 || frames > hp.n_audio_ctx)
    throw Error(ErrorCode::InvalidArgument, "[decoder] a slot state needs rows, windows and 1.." +
                                                std::to_string(hp.n_audio_ctx) + " frames");
  auto state = std::make_unique<DecoderState>();
  state->windows_.assign(windows + 1, nullptr);
  state->pad_window_ = windows;
  state->row_window_.assign(rows, windows);
  state->lengths_.assign(rows, 0);
  state->buffers_ = pool_->acquire(hp, DecoderShape{rows, windows + 1, frames}, false, true);
  state->pool_ = pool_;
  // The padding window is zeros, so free rows compute finite numbers nobody reads.
  const int64_t width = 2LL * hp.n_text_layer * hp.n_text_state;
  Tensor zeros = Tensor::zeros({frames, width}, be.act_dtype());
  Tensor pad = state->buffers_->cross_kv.rows(windows * frames, (windows + 1) * frames);
  be.copy(zeros, pad);
  // Rows past the last active one are not stepped on every backend (step_rows): their
  // logits, which a selection over the whole state reads, start as zeros, not garbage.
  be.copy(Tensor::zeros({rows, hp.n_vocab}, DType::F32), state->buffers_->step_logits);
  return state;
}

std::unique_ptr<DecoderState> WhisperModel::resize_slot_state(DecoderState& from, int rows, int windows) {
  if (from.pad_window_ < 0) throw Error(ErrorCode::InvalidArgument, "[decoder] resize_slot_state needs a slot state");
  const int old_rows = from.batch(), old_windows = from.pad_window_;
  const int keep_rows = std::min(rows, old_rows), keep_windows = std::min(windows, old_windows);
  for (int r = keep_rows; r < old_rows; ++r)
    if (from.row_window_[r] != old_windows)
      throw Error(ErrorCode::InvalidArgument, "[decoder] row " + std::to_string(r) + " is in use; it cannot be dropped");
  for (int r = 0; r < keep_rows; ++r)
    if (from.row_window_[r] != old_windows && from.row_window_[r] >= keep_windows)
      throw Error(ErrorCode::InvalidArgument, "[decoder] window slot " + std::to_string(from.row_window_[r]) +
                                                  " is in use; it cannot be dropped");
  Backend& be = *backend_;
  const int64_t frames = from.buffers_->shape.frames, ctx = hparams().n_text_ctx;
  auto state = new_slot_state(rows, windows, frames);
  DecoderBuffers& src = *from.buffers_;
  DecoderBuffers& dst = *state->buffers_;
  for (size_t l = 0; l < src.self_k.size(); ++l) {
    Tensor k = dst.self_k[l].rows(0, keep_rows * ctx), v = dst.self_v[l].rows(0, keep_rows * ctx);
    be.copy(src.self_k[l].rows(0, keep_rows * ctx), k);
    be.copy(src.self_v[l].rows(0, keep_rows * ctx), v);
  }
  Tensor kv = dst.cross_kv.rows(0, keep_windows * frames);
  be.copy(src.cross_kv.rows(0, keep_windows * frames), kv);
  for (int r = 0; r < keep_rows; ++r) {
    state->lengths_[r] = from.lengths_[r];
    state->row_window_[r] = from.row_window_[r] == old_windows ? windows : from.row_window_[r];
  }
  return state;
}

void WhisperModel::load_window(DecoderState& state, int window, const AudioContext& audio) {
  if (window < 0 || window >= state.pad_window_)
    throw Error(ErrorCode::InvalidArgument, "[decoder] window slot " + std::to_string(window) + " does not exist");
  DecoderBuffers& buf = *state.buffers_;
  if (audio.frames() != buf.shape.frames)
    throw Error(ErrorCode::InvalidArgument, "[decoder] a window of " + std::to_string(audio.frames()) +
                                                " frames does not fit a slot state of " +
                                                std::to_string(buf.shape.frames));
  Tensor dst = buf.cross_kv.rows(window * buf.shape.frames, (window + 1) * buf.shape.frames);
  backend_->copy(audio.cross_kv, dst);
}

void WhisperModel::start_rows(DecoderState& state, int first, int count, int window) {
  check_run(state, first, count);
  if (window < 0 || window >= state.pad_window_)
    throw Error(ErrorCode::InvalidArgument, "[decoder] window slot " + std::to_string(window) + " does not exist");
  for (int r = first; r < first + count; ++r) {
    state.lengths_[r] = 0;
    state.row_window_[r] = window;
  }
}

void WhisperModel::free_rows(DecoderState& state, int first, int count) {
  check_run(state, first, count);
  for (int r = first; r < first + count; ++r) {
    state.lengths_[r] = 0;
    state.row_window_[r] = state.pad_window_;
  }
}

Tensor WhisperModel::decode_rows(DecoderState& state, int first, int count, std::span<const int32_t> tokens,
                                 int n_new, int also_position) {
  check_run(state, first, count);
  validate_step(state, tokens, n_new, first, count);
  if (also_position >= n_new - 1)
    throw Error(ErrorCode::InvalidArgument, "[decoder] the second position must come before the last");
  stage_inputs(state, tokens, first, count);
  Tensor logits = decoder_forward(state, n_new, false, nullptr, first, count, true, also_position);
  Tensor result = backend_->to_host(logits);
  for (int r = first; r < first + count; ++r) state.lengths_[r] += n_new;
  return result;
}

std::vector<Tensor> WhisperModel::decode_row_prompts(DecoderState& state, std::span<const RowPrompt> prompts) {
  std::vector<uint8_t> taken(state.batch(), 0);
  for (const RowPrompt& p : prompts) {
    check_run(state, p.first, p.count);
    validate_step(state, p.tokens, p.n_new, p.first, p.count);
    if (p.also_position >= p.n_new - 1)
      throw Error(ErrorCode::InvalidArgument, "[decoder] the second position must come before the last");
    for (int r = p.first; r < p.first + p.count; ++r) {
      if (taken[r]) throw Error(ErrorCode::InvalidArgument, "[decoder] row " + std::to_string(r) + " is in two prompts");
      taken[r] = 1;
    }
  }
  DecoderBuffers& buf = *state.buffers_;
  const int64_t input_room = buf.host_inputs.numel(), logit_room = buf.host_logits.dim(0);
  std::vector<Tensor> out(prompts.size());
  struct Queued {
    size_t prompt;
    int64_t row, rows;
  };
  std::vector<Queued> queued;
  int64_t inputs_used = 0, logits_used = 0;
  auto collect = [&] {
    if (queued.empty()) return;
    backend_->synchronize();
    for (const Queued& q : queued) out[q.prompt] = buf.host_logits.rows(q.row, q.row + q.rows).clone();
    queued.clear();
    inputs_used = logits_used = 0;
  };
  for (size_t i = 0; i < prompts.size(); ++i) {
    const RowPrompt& p = prompts[i];
    const int64_t n_inputs = 2LL * p.count + static_cast<int64_t>(p.count) * p.n_new;
    const int64_t n_logits = (p.also_position >= 0 ? 2LL : 1LL) * p.count;
    // The buffers hold a whole state's step: a turn's prompts fit in one or two waits.
    if (inputs_used + n_inputs > input_room || logits_used + n_logits > logit_room) collect();
    if (n_logits > logit_room) {  // a prompt wider than the buffer (a group with most of a small state's rows)
      out[i] = decode_rows(state, p.first, p.count, p.tokens, p.n_new, p.also_position);
      continue;
    }
    stage_inputs(state, p.tokens, p.first, p.count, inputs_used);
    Tensor logits = decoder_forward(state, p.n_new, false, nullptr, p.first, p.count, true, p.also_position, inputs_used);
    Tensor host = buf.host_logits.rows(logits_used, logits_used + n_logits);
    backend_->copy_async(logits, host);
    for (int r = p.first; r < p.first + p.count; ++r) state.lengths_[r] += p.n_new;
    queued.push_back({i, logits_used, n_logits});
    inputs_used += n_inputs;
    logits_used += n_logits;
  }
  collect();
  return out;
}

int WhisperModel::step_rows(DecoderState& state, std::span<const int32_t> tokens, std::span<const uint8_t> active,
                            bool wait) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  const int rows = state.batch();
  if (state.pad_window_ < 0 || static_cast<int>(tokens.size()) != rows || static_cast<int>(active.size()) != rows)
    throw Error(ErrorCode::InvalidArgument, "[decoder] step_rows needs a slot state and one token per row");
  // Only the rows up to the last active one are stepped: a free row costs about as much as
  // a used one, and rows are computed independently, so the active rows get the same
  // numbers either way. A backend that records steps records one step per span, the span
  // rounded up to kSlotSpanStep rows so that a few records serve every load (free rows
  // within it read the padding window).
  int span = 0;
  for (int r = 0; r < rows; ++r)
    if (active[r]) span = r + 1;
  if (span == 0) return 0;
  const bool recorded = be.records_replays();
  if (recorded) {
    const int step = DecoderBuffers::kSlotSpanStep;
    span = std::min(rows, (span + step - 1) / step * step);
    if (span / step > DecoderBuffers::kMaxSlotSpans) span = rows;
  }
  DecoderBuffers& buf = *state.buffers_;
  int32_t* in = buf.host_inputs.data<int32_t>();
  for (int r = 0; r < span; ++r) {
    if (active[r] && state.lengths_[r] + 1 > hp.n_text_ctx)
      throw Error(ErrorCode::InvalidArgument, "[decoder] sequence would exceed the text context of " +
                                                  std::to_string(hp.n_text_ctx) + " tokens");
    const int32_t token = active[r] ? tokens[r] : kPaddingToken;
    if (token < 0 || token >= hp.n_vocab)
      throw Error(ErrorCode::InvalidArgument, "[embedding] token id " + std::to_string(token) +
                                                  " outside the vocabulary of " + std::to_string(hp.n_vocab));
    // A row sitting this step out writes its padding K/V just past its sequence, where its
    // next real token will overwrite it (a full row, which never steps again, at its last).
    in[r] = std::min(state.lengths_[r], hp.n_text_ctx - 1);
    in[span + r] = state.row_window_[r];
    in[2 * span + r] = token;
  }
  if (span == rows) {
    be.replay(buf.id << 8 | DecoderBuffers::kSlotStepKey, [&] {
      Tensor logits = decoder_forward(state, 1, false, nullptr);
      be.copy_async(logits, buf.step_logits);
    });
    if (wait) be.synchronize();
  } else if (recorded) {
    const uint64_t key = DecoderBuffers::kSlotSpanKey + static_cast<uint64_t>(span / DecoderBuffers::kSlotSpanStep);
    be.replay(buf.id << 8 | key, [&] {
      Tensor logits = decoder_forward(state, 1, false, nullptr, 0, span);
      Tensor dst = buf.step_logits.rows(0, span);
      be.copy_async(logits, dst);
    });
    if (wait) be.synchronize();
  } else {
    Tensor logits = decoder_forward(state, 1, false, nullptr, 0, span);
    Tensor dst = buf.step_logits.rows(0, span);
    be.copy_async(logits, dst);
    if (wait) be.synchronize();
  }
  for (int r = 0; r < span; ++r)
    if (active[r]) state.lengths_[r] += 1;
  return span;
}

Tensor WhisperModel::slot_logits(DecoderState& state, int first, int count) {
  check_run(state, first, count);
  return backend_->to_host(state.buffers_->step_logits.rows(first, first + count));
}

std::vector<TokenChoice> WhisperModel::select_rows(DecoderState& state, std::span<const int> rows,
                                                   const SelectionRules& rules,
                                                   std::span<const SampledSummary> summaries, int k) {
  Backend& be = *backend_;
  const HParams& hp = hparams();
  const int batch = state.batch();
  if (rows.size() != summaries.size() || k < 1 || k > DecoderBuffers::kMaxChoices)
    throw Error(ErrorCode::InvalidArgument, "[decoder] select_rows needs one summary per row and 1..16 choices");
  DecoderBuffers& buf = *state.buffers_;
  // One selection over the state's rows up to the last one asked about (the others get
  // empty summaries): the few rule sets of a batch each cost one launch.
  int used = 0;
  for (int row : rows) {
    check_run(state, row, 1);
    used = std::max(used, row + 1);
  }
  if (used == 0) return {};
  std::vector<SampledSummary> all(used);
  for (size_t i = 0; i < rows.size(); ++i) all[rows[i]] = summaries[i];
  const std::vector<int32_t> spec = make_select_spec(rules, hp.n_vocab, all);
  std::copy(spec.begin(), spec.end(), buf.host_spec.data<int32_t>());
  const int64_t n_choices = static_cast<int64_t>(used) * k * 2, n_spec = static_cast<int64_t>(spec.size());
  Tensor choices = buf.choices.reshape({batch * DecoderBuffers::kMaxChoices * 2}).rows(0, n_choices);
  Tensor host_choices = buf.host_choices.reshape({batch * DecoderBuffers::kMaxChoices * 2}).rows(0, n_choices);
  Tensor host_spec = buf.host_spec.rows(0, n_spec), device_spec = buf.spec.rows(0, n_spec);
  be.copy_async(host_spec, device_spec);
  ops::select_tokens(be, buf.step_logits.rows(0, used), device_spec, k, choices);
  be.copy_async(choices, host_choices);
  be.synchronize();
  std::vector<TokenChoice> out;
  const int32_t* c = host_choices.data<int32_t>();
  for (int row : rows)
    for (int i = 0; i < k; ++i) {
      const int64_t at = (static_cast<int64_t>(row) * k + i) * 2;
      out.push_back(read_choice(c + at, hp.n_vocab, static_cast<size_t>(at / 2)));
    }
  return out;
}

void WhisperModel::reorder_rows(DecoderState& state, int first, std::span<const int> source) {
  const int count = static_cast<int>(source.size());
  check_run(state, first, count);
  std::vector<int> lengths(count);
  std::vector<int32_t> row_window(count);
  for (int i = 0; i < count; ++i) {
    if (source[i] < 0 || source[i] >= count)
      throw Error(ErrorCode::InvalidArgument, "[decoder] reorder row out of range");
    lengths[i] = state.lengths_[first + source[i]];
    row_window[i] = state.row_window_[first + source[i]];
  }
  DecoderBuffers& buf = *state.buffers_;
  const int64_t ctx = hparams().n_text_ctx;
  std::vector<Tensor> views;
  for (size_t layer = 0; layer < buf.self_k.size(); ++layer) {
    views.push_back(buf.self_k[layer].rows(first * ctx, (first + count) * ctx));
    views.push_back(buf.self_v[layer].rows(first * ctx, (first + count) * ctx));
  }
  std::vector<Tensor*> caches;
  for (Tensor& v : views) caches.push_back(&v);
  // In place: the views share the state's buffers (which a recorded step holds).
  backend_->gather_sequences(caches, ctx, source, lengths);
  for (int i = 0; i < count; ++i) {
    state.lengths_[first + i] = lengths[i];
    state.row_window_[first + i] = row_window[i];
  }
}

}  // namespace hark
