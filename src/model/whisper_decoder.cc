// WhisperModel's decoder: states, the forward pass over the KV cache, beam reordering.
// Every per-step value (tokens, positions, which window a row reads) reaches the kernels
// through the state's input buffer, so a backend may record one step and replay it.
#include <algorithm>
#include <bit>
#include <cstring>

#include "core/ops.h"
#include "model/decoder_buffers.h"
#include "model/whisper_model.h"

namespace hark {
DecoderState::~DecoderState() {
  if (auto pool = pool_.lock(); pool && buffers_) pool->release(std::move(buffers_));
}

void DecoderState::clear() {
  for (auto& n : lengths_) n = 0;
}

std::unique_ptr<DecoderState> WhisperModel::new_state(std::shared_ptr<const AudioContext> audio, int batch) {
  return new_state(std::vector<std::shared_ptr<const AudioContext>>(batch, std::move(audio)));
}

std::unique_ptr<DecoderState> WhisperModel::new_state(std::vector<std::shared_ptr<const AudioContext>> audio_per_row) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  if (audio_per_row.empty()) throw Error(ErrorCode::InvalidArgument, "[decoder] a state needs at least one row");
  auto state = std::make_unique<DecoderState>();
  const int batch = static_cast<int>(audio_per_row.size());
  for (const auto& audio : audio_per_row) {
    if (!audio) throw Error(ErrorCode::InvalidArgument, "[decoder] a row has no audio");
    auto it = std::find(state->windows_.begin(), state->windows_.end(), audio);
    if (it == state->windows_.end()) it = state->windows_.insert(state->windows_.end(), audio);
    state->row_window_.push_back(static_cast<int32_t>(it - state->windows_.begin()));
  }
  const int64_t frames = state->windows_.front()->frames();
  for (const auto& w : state->windows_)
    if (w->frames() != frames) throw Error(ErrorCode::InvalidArgument, "[decoder] rows attend to windows of different lengths");
  state->lengths_.assign(batch, 0);
  DecoderShape shape{batch, static_cast<int>(state->windows_.size()), frames};
  // One window needs no copy of its K/V unless the backend replays recorded steps, which
  // need the K/V at the same address every time.
  const bool alias = shape.windows == 1 && !be.records_replays();
  state->buffers_ = pool_->acquire(hp, shape, alias);
  state->pool_ = pool_;
  DecoderBuffers& buf = *state->buffers_;
  if (alias) {
    buf.cross_kv = state->windows_.front()->cross_kv;
  } else {
    for (size_t w = 0; w < state->windows_.size(); ++w) {
      Tensor dst = buf.cross_kv.rows(static_cast<int64_t>(w) * frames, static_cast<int64_t>(w + 1) * frames);
      be.copy(state->windows_[w]->cross_kv, dst);
    }
  }
  return state;
}

void WhisperModel::validate_step(const DecoderState& state, std::span<const int32_t> tokens, int n_new, int first,
                                 int count) const {
  const HParams& hp = hparams();
  if (count < 0) count = state.batch() - first;
  if (n_new <= 0 || static_cast<int64_t>(tokens.size()) != static_cast<int64_t>(count) * n_new)
    throw Error(ErrorCode::InvalidArgument, "[decoder] expected " + std::to_string(count) + " x " +
                                                std::to_string(n_new) + " tokens, got " + std::to_string(tokens.size()));
  for (int r = first; r < first + count; ++r)
    if (state.lengths_[r] + n_new > hp.n_text_ctx)
      throw Error(ErrorCode::InvalidArgument, "[decoder] sequence would exceed the text context of " +
                                                  std::to_string(hp.n_text_ctx) + " tokens");
  for (int32_t id : tokens)
    if (id < 0 || id >= hp.n_vocab)
      throw Error(ErrorCode::InvalidArgument, "[embedding] token id " + std::to_string(id) +
                                                  " outside the vocabulary of " + std::to_string(hp.n_vocab));
}

void WhisperModel::stage_inputs(DecoderState& state, std::span<const int32_t> tokens, int first, int count,
                                int64_t input_offset) {
  if (count < 0) count = state.batch();
  int32_t* in = state.buffers_->host_inputs.data<int32_t>() + input_offset;
  std::copy_n(state.lengths_.begin() + first, count, in);
  std::copy_n(state.row_window_.begin() + first, count, in + count);
  std::copy(tokens.begin(), tokens.end(), in + 2 * count);
}

Tensor WhisperModel::decode(DecoderState& state, std::span<const int32_t> tokens, int n_new, bool all_positions,
                            CrossAttentionCapture* capture) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  validate_step(state, tokens, n_new);
  const int batch = state.batch();
  DecoderBuffers& buf = *state.buffers_;
  stage_inputs(state, tokens);
  if (capture) {
    capture->weights.clear();
    for (size_t i = 0; i < capture->layers.size(); ++i)
      capture->weights.push_back(Tensor::empty({batch, hp.n_text_head, n_new, buf.shape.frames}));
  }
  Tensor result;
  if (all_positions || capture || n_new > DecoderBuffers::kMaxRecordedPrefill) {
    Tensor logits = decoder_forward(state, n_new, all_positions, capture);
    result = be.to_host(logits);
    if (all_positions) result = result.reshape({batch, n_new, hp.n_vocab});
  } else {
    // The common single-token step, and the short prompt that starts each window: recorded
    // once per buffer set and length, replayed afterwards. Keys: the buffer set, then 8
    // bits — 0 for the step, 1..16 for decode_select's k, kPrefillKey | n_new for a prompt.
    const uint64_t key =
        buf.id << 8 | (n_new > 1 ? DecoderBuffers::kPrefillKey | static_cast<uint64_t>(n_new) : uint64_t{0});
    result = replayed_logits(state, key, n_new, -1);
  }
  for (int r = 0; r < batch; ++r) state.lengths_[r] += n_new;
  return result;
}

Tensor WhisperModel::replayed_logits(DecoderState& state, uint64_t key, int n_new, int also_position) {
  Backend& be = *backend_;
  DecoderBuffers& buf = *state.buffers_;
  const int rows = (also_position >= 0 ? 2 : 1) * state.batch();
  be.replay(key, [&] {
    Tensor logits = decoder_forward(state, n_new, false, nullptr, 0, -1, true, also_position);
    Tensor host = buf.host_logits.rows(0, rows);
    be.copy_async(logits, host);
  });
  be.synchronize();
  return buf.host_logits.rows(0, rows).clone();
}

Tensor WhisperModel::decoder_forward(DecoderState& state, int n_new, bool all_positions,
                                     CrossAttentionCapture* capture, int first, int count, bool stage,
                                     int also_position, int64_t input_offset) {
  Tensor hidden =
      decoder_hidden(state, n_new, all_positions, capture, first, count, stage, also_position, input_offset);
  // Logits use the token embedding as the output projection (tied weights), in fp32.
  return ops::norm_linear(*backend_, hidden, *layers_.decoder_ln.weight, *layers_.decoder_ln.bias,
                          *layers_.token_embedding, nullptr, Epilogue::None, DType::F32);
}

Tensor WhisperModel::decoder_hidden(DecoderState& state, int n_new, bool all_positions,
                                    CrossAttentionCapture* capture, int first, int count, bool stage,
                                    int also_position, int64_t input_offset) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  DecoderBuffers& buf = *state.buffers_;
  const int batch = count < 0 ? state.batch() : count;
  const int64_t d = hp.n_text_state, n_inputs = 2LL * batch + static_cast<int64_t>(batch) * n_new;
  // Rows [first, first + batch) of the caches: the whole state, or the rows of one
  // sequence group being prefilled next to a running batch (continuous batching).
  const int64_t ctx_rows = hp.n_text_ctx;
  auto rows_of = [&](Tensor& cache) {
    return batch == state.batch() ? cache : cache.rows(first * ctx_rows, (first + batch) * ctx_rows);
  };
  const std::span<const int32_t> row_window_host =
      std::span<const int32_t>(state.row_window_).subspan(static_cast<size_t>(first), static_cast<size_t>(batch));
  Tensor staged = buf.host_inputs.rows(input_offset, input_offset + n_inputs);
  Tensor inputs = buf.inputs.rows(input_offset, input_offset + n_inputs);
  if (stage) be.copy_async(staged, inputs);
  const Tensor lengths = inputs.rows(0, batch), row_window = inputs.rows(batch, 2 * batch);
  const Tensor ids = inputs.rows(2 * batch, n_inputs);
  Tensor x = ops::embedding(be, *layers_.token_embedding, *layers_.decoder_positions, ids, lengths, n_new);
  for (int layer = 0; layer < hp.n_text_layer; ++layer) {
    const DecoderLayer& l = layers_.decoder[layer];
    {  // causal self-attention with the KV cache
      const Tensor* ws[] = {l.attn.query.weight, l.attn.key.weight, l.attn.value.weight};
      const Tensor* bs[] = {l.attn.query.bias, nullptr, l.attn.value.bias};
      Tensor cache_k = rows_of(buf.self_k[layer]), cache_v = rows_of(buf.self_v[layer]);
      Tensor att = ops::norm_cached_attention(be, x, *l.attn_ln.weight, *l.attn_ln.bias, ws, bs, cache_k, cache_v,
                                              lengths, n_new, hp.n_text_head);
      ops::linear_residual(be, att, *l.attn.out.weight, l.attn.out.bias, x);
    }
    {  // cross-attention over the windows' K/V
      Tensor q = ops::norm_linear(be, x, *l.cross_attn_ln.weight, *l.cross_attn_ln.bias, *l.cross_attn.query.weight,
                                  l.cross_attn.query.bias);
      Tensor* weights = nullptr;
      if (capture)
        for (size_t i = 0; i < capture->layers.size(); ++i)
          if (capture->layers[i] == layer) weights = &capture->weights[i];
      const PackedKV kv{&buf.cross_kv, buf.shape.frames, 2 * layer * d, (2 * layer + 1) * d,
                        be.cross_kv_panel(d / hp.n_text_head)};
      Tensor att = ops::cross_attention(be, q, kv, row_window, row_window_host, n_new, hp.n_text_head, weights);
      ops::linear_residual(be, att, *l.cross_attn.out.weight, l.cross_attn.out.bias, x);
    }
    mlp_residual(be, x, l.mlp_ln, l.mlp);
  }
  Tensor hidden = x;
  if (!all_positions && n_new > 1) {  // only each row's last position goes on (and also_position's)
    const bool two = also_position >= 0 && also_position < n_new;
    hidden = be.alloc({two ? 2 * batch : batch, d}, be.act_dtype());
    auto keep = [&](int r, int position, int64_t to) {
      Tensor dst = hidden.rows(to, to + 1);
      const int64_t from = static_cast<int64_t>(r) * n_new + position;
      be.copy(x.rows(from, from + 1), dst);
    };
    for (int r = 0; r < batch; ++r) {
      if (two) keep(r, also_position, r);
      keep(r, n_new - 1, two ? batch + r : r);
    }
  }
  return hidden;
}

std::vector<TokenChoice> WhisperModel::decode_select(DecoderState& state, std::span<const int32_t> tokens,
                                                     const SelectionRules& rules, std::span<const SampledSummary> rows,
                                                     int k) {
  Backend& be = *backend_;
  validate_step(state, tokens, 1);
  const int batch = state.batch();
  if (static_cast<int>(rows.size()) != batch || k < 1 || k > DecoderBuffers::kMaxChoices)
    throw Error(ErrorCode::InvalidArgument, "[decoder] decode_select needs one summary per row and 1..16 choices");
  DecoderBuffers& buf = *state.buffers_;
  stage_inputs(state, tokens);
  ChoiceBuffers choices = stage_selection(state, rules, rows, k);
  // A separate record per k (the selection's launch differs), 8 bits above the plain step's key.
  be.replay(buf.id << 8 | static_cast<uint64_t>(k), [&] {
    Tensor logits = decoder_forward(state, 1, false, nullptr);
    be.copy_async(buf.host_spec, buf.spec);
    ops::select_tokens(be, logits, buf.spec, k, choices.device);
    be.copy_async(choices.device, choices.host);
  });
  be.synchronize();
  for (int r = 0; r < batch; ++r) state.lengths_[r] += 1;
  return read_choices(choices.host);
}

WhisperModel::ChoiceBuffers WhisperModel::stage_selection(DecoderState& state, const SelectionRules& rules,
                                                          std::span<const SampledSummary> rows, int k) {
  DecoderBuffers& buf = *state.buffers_;
  const std::vector<int32_t> spec = make_select_spec(rules, hparams().n_vocab, rows);
  std::copy(spec.begin(), spec.end(), buf.host_spec.data<int32_t>());
  const int64_t all = static_cast<int64_t>(state.batch()) * DecoderBuffers::kMaxChoices * 2;
  const int64_t used = static_cast<int64_t>(rows.size()) * k * 2;
  return {buf.choices.reshape({all}).rows(0, used), buf.host_choices.reshape({all}).rows(0, used)};
}

std::vector<TokenChoice> WhisperModel::read_choices(const Tensor& host) const {
  std::vector<TokenChoice> out(static_cast<size_t>(host.numel() / 2));
  const int32_t* c = host.data<int32_t>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = read_choice(c + 2 * i, hparams().n_vocab, i);
  return out;
}

void WhisperModel::reorder(DecoderState& state, std::span<const int> source) {
  const int batch = state.batch();
  if (static_cast<int>(source.size()) != batch)
    throw Error(ErrorCode::InvalidArgument, "[decoder] reorder needs one source row per row");
  std::vector<int> lengths(batch);
  std::vector<int32_t> row_window(batch);
  for (int r = 0; r < batch; ++r) {
    if (source[r] < 0 || source[r] >= batch) throw Error(ErrorCode::InvalidArgument, "[decoder] reorder row out of range");
    lengths[r] = state.lengths_[source[r]];
    row_window[r] = state.row_window_[source[r]];
  }
  DecoderBuffers& buf = *state.buffers_;
  std::vector<Tensor*> caches;
  for (size_t layer = 0; layer < buf.self_k.size(); ++layer) {
    caches.push_back(&buf.self_k[layer]);
    caches.push_back(&buf.self_v[layer]);
  }
  backend_->gather_sequences(caches, hparams().n_text_ctx, source, lengths);
  state.lengths_ = lengths;
  state.row_window_ = row_window;
}

}  // namespace hark
