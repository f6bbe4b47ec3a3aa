#include "model/whisper_model.h"

#include <cstring>

#include "core/ops.h"

namespace hark {
namespace {

std::string block(const char* stack, int layer) { return std::string(stack) + ".blocks." + std::to_string(layer); }

// Self-attention or cross-attention projections of one block, looked up once per call.
struct AttentionWeights {
  const Tensor *q_w, *q_b, *k_w, *v_w, *v_b, *o_w, *o_b;
  AttentionWeights(const Weights& w, const std::string& p)
      : q_w(&w.get(p + ".query.weight")), q_b(&w.get(p + ".query.bias")), k_w(&w.get(p + ".key.weight")),
        v_w(&w.get(p + ".value.weight")), v_b(&w.get(p + ".value.bias")), o_w(&w.get(p + ".out.weight")),
        o_b(&w.get(p + ".out.bias")) {}
};

Tensor layer_norm(Backend& be, const Weights& w, const Tensor& x, const std::string& p) {
  return ops::layer_norm(be, x, w.get(p + ".weight"), w.get(p + ".bias"));
}

// x += mlp(layer_norm(x))
void mlp_residual(Backend& be, const Weights& w, Tensor& x, const std::string& p) {
  Tensor h = layer_norm(be, w, x, p + ".mlp_ln");
  Tensor up = ops::linear(be, h, w.get(p + ".mlp.0.weight"), &w.get(p + ".mlp.0.bias"));
  ops::gelu(be, up);
  Tensor down = ops::linear(be, up, w.get(p + ".mlp.2.weight"), &w.get(p + ".mlp.2.bias"));
  ops::add(be, x, down);
}

}  // namespace

void DecoderState::clear() {
  for (auto& n : lengths_) n = 0;
}

WhisperModel::WhisperModel(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend)
    : checkpoint_(std::move(checkpoint)), backend_(std::move(backend)) {
  check_weights(checkpoint_->weights, checkpoint_->hparams);
}

Tensor WhisperModel::encoder_block(const Tensor& x_in, int layer) {
  Backend& be = *backend_;
  const Weights& w = checkpoint_->weights;
  const std::string p = block("encoder", layer);
  Tensor x = x_in;
  Tensor h = layer_norm(be, w, x, p + ".attn_ln");
  AttentionWeights a(w, p + ".attn");
  Tensor q = ops::linear(be, h, *a.q_w, a.q_b);
  Tensor k = ops::linear(be, h, *a.k_w, nullptr);
  Tensor v = ops::linear(be, h, *a.v_w, a.v_b);
  Tensor att = ops::attention(be, q, k, v, hparams().n_audio_head, false);
  Tensor o = ops::linear(be, att, *a.o_w, a.o_b);
  ops::add(be, x, o);
  mlp_residual(be, w, x, p);
  return x;
}

Tensor WhisperModel::encode(const Tensor& mel, int audio_ctx) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  const Weights& w = checkpoint_->weights;
  if (mel.rank() != 2 || mel.dim(0) != hp.n_mels || mel.dim(1) != 2 * hp.n_audio_ctx)
    throw Error(ErrorCode::InvalidArgument, "[encoder] expected a mel of shape [" + std::to_string(hp.n_mels) + ", " +
                                                std::to_string(2 * hp.n_audio_ctx) + "], got " + mel.describe());
  const int n_ctx = audio_ctx > 0 && audio_ctx < hp.n_audio_ctx ? audio_ctx : hp.n_audio_ctx;
  Tensor input = mel;
  if (n_ctx != hp.n_audio_ctx) {  // audio_ctx: keep only the first 2·n_ctx mel frames
    input = Tensor::empty({hp.n_mels, 2 * n_ctx});
    for (int m = 0; m < hp.n_mels; ++m)
      std::memcpy(input.data<float>() + m * 2 * n_ctx, mel.data<float>() + m * mel.dim(1), 2 * n_ctx * sizeof(float));
  }
  Tensor c1 = ops::conv1d(be, be.to_device(input), w.get("encoder.conv1.weight"), w.get("encoder.conv1.bias"), 1, 1);
  ops::gelu(be, c1);
  Tensor c2 = ops::conv1d(be, c1, w.get("encoder.conv2.weight"), w.get("encoder.conv2.bias"), 2, 1);
  ops::gelu(be, c2);
  // [d, T] → [T, d], then add the positional table.
  Tensor x = ops::transpose(be, c2);
  ops::add(be, x, w.get("encoder.positional_embedding").rows(0, n_ctx));
  for (int i = 0; i < hp.n_audio_layer; ++i) x = encoder_block(x, i);
  return layer_norm(be, w, x, "encoder.ln_post");
}

std::shared_ptr<const AudioContext> WhisperModel::prepare_audio(const Tensor& mel, int audio_ctx) {
  auto ctx = std::make_shared<AudioContext>();
  ctx->features = encode(mel, audio_ctx);
  const Weights& w = checkpoint_->weights;
  for (int i = 0; i < hparams().n_text_layer; ++i) {
    const std::string p = block("decoder", i) + ".cross_attn";
    const Tensor k = ops::linear(*backend_, ctx->features, w.get(p + ".key.weight"), nullptr);
    const Tensor v = ops::linear(*backend_, ctx->features, w.get(p + ".value.weight"), &w.get(p + ".value.bias"));
    ctx->cross_k.push_back(ops::cast(*backend_, k, backend_->cross_kv_dtype()));
    ctx->cross_v.push_back(ops::cast(*backend_, v, backend_->cross_kv_dtype()));
  }
  return ctx;
}

std::unique_ptr<DecoderState> WhisperModel::new_state(std::shared_ptr<const AudioContext> audio, int batch) {
  return new_state(std::vector<std::shared_ptr<const AudioContext>>(batch, std::move(audio)));
}

std::unique_ptr<DecoderState> WhisperModel::new_state(std::vector<std::shared_ptr<const AudioContext>> audio_per_row) {
  const HParams& hp = hparams();
  auto state = std::make_unique<DecoderState>();
  const int batch = static_cast<int>(audio_per_row.size());
  state->audio_ = std::move(audio_per_row);
  state->lengths_.assign(batch, 0);
  for (int i = 0; i < hp.n_text_layer; ++i) {
    state->self_k_.push_back(backend_->alloc({static_cast<int64_t>(batch) * hp.n_text_ctx, hp.n_text_state}));
    state->self_v_.push_back(backend_->alloc({static_cast<int64_t>(batch) * hp.n_text_ctx, hp.n_text_state}));
  }
  return state;
}

Tensor WhisperModel::decode(DecoderState& state, std::span<const int32_t> tokens, int n_new, bool all_positions,
                            CrossAttentionCapture* capture) {
  const HParams& hp = hparams();
  Backend& be = *backend_;
  const Weights& w = checkpoint_->weights;
  const int batch = state.batch();
  const int64_t d = hp.n_text_state, ctx = hp.n_text_ctx;
  if (n_new <= 0 || static_cast<int64_t>(tokens.size()) != static_cast<int64_t>(batch) * n_new)
    throw Error(ErrorCode::InvalidArgument, "[decoder] expected " + std::to_string(batch) + " x " +
                                                std::to_string(n_new) + " tokens, got " + std::to_string(tokens.size()));
  for (int r = 0; r < batch; ++r) {
    if (state.lengths_[r] + n_new > ctx)
      throw Error(ErrorCode::InvalidArgument, "[decoder] sequence would exceed the text context of " +
                                                  std::to_string(ctx) + " tokens");
  }
  if (capture) {
    capture->weights.clear();
    for (size_t i = 0; i < capture->layers.size(); ++i)
      capture->weights.push_back(
          Tensor::empty({batch, hp.n_text_head, n_new, state.audio_[0]->features.dim(0)}));
  }
  // Embeddings: each row starts at its own position.
  Tensor x = be.alloc({static_cast<int64_t>(batch) * n_new, d});
  for (int r = 0; r < batch; ++r) {
    Tensor e = ops::embedding(be, w.get("decoder.token_embedding.weight"), tokens.subspan(r * n_new, n_new),
                              &w.get("decoder.positional_embedding"), state.lengths_[r]);
    Tensor dst = x.rows(static_cast<int64_t>(r) * n_new, static_cast<int64_t>(r + 1) * n_new);
    be.copy(e, dst);
  }
  for (int layer = 0; layer < hp.n_text_layer; ++layer) {
    const std::string p = block("decoder", layer);
    {  // causal self-attention with the KV cache
      Tensor h = layer_norm(be, w, x, p + ".attn_ln");
      AttentionWeights a(w, p + ".attn");
      Tensor q = ops::linear(be, h, *a.q_w, a.q_b);
      Tensor k = ops::linear(be, h, *a.k_w, nullptr);
      Tensor v = ops::linear(be, h, *a.v_w, a.v_b);
      Tensor att = be.alloc({static_cast<int64_t>(batch) * n_new, d});
      for (int r = 0; r < batch; ++r) {
        const int64_t past = state.lengths_[r], base = static_cast<int64_t>(r) * ctx;
        Tensor kc = state.self_k_[layer].rows(base + past, base + past + n_new);
        Tensor vc = state.self_v_[layer].rows(base + past, base + past + n_new);
        be.copy(k.rows(r * n_new, (r + 1) * n_new), kc);
        be.copy(v.rows(r * n_new, (r + 1) * n_new), vc);
        Tensor out = ops::attention(be, q.rows(r * n_new, (r + 1) * n_new),
                                    state.self_k_[layer].rows(base, base + past + n_new),
                                    state.self_v_[layer].rows(base, base + past + n_new), hp.n_text_head, true, past);
        Tensor dst = att.rows(static_cast<int64_t>(r) * n_new, static_cast<int64_t>(r + 1) * n_new);
        be.copy(out, dst);
      }
      ops::add(be, x, ops::linear(be, att, *a.o_w, a.o_b));
    }
    {  // cross-attention over the (shared) audio K/V
      Tensor h = layer_norm(be, w, x, p + ".cross_attn_ln");
      AttentionWeights a(w, p + ".cross_attn");
      Tensor q = ops::linear(be, h, *a.q_w, a.q_b);
      Tensor att = be.alloc({static_cast<int64_t>(batch) * n_new, d});
      int capture_slot = -1;
      if (capture)
        for (size_t i = 0; i < capture->layers.size(); ++i)
          if (capture->layers[i] == layer) capture_slot = static_cast<int>(i);
      if (capture_slot < 0) {
        // Rows that attend to the same audio (the beams of one window) go through one call,
        // so each layer's cross K/V is read once per step instead of once per beam.
        for (int r0 = 0; r0 < batch;) {
          int r1 = r0 + 1;
          while (r1 < batch && state.audio_[r1] == state.audio_[r0]) ++r1;
          const AudioContext& audio = *state.audio_[r0];
          Tensor out = ops::attention(be, q.rows(r0 * n_new, r1 * n_new), audio.cross_k[layer],
                                      audio.cross_v[layer], hp.n_text_head, false, 0, nullptr);
          Tensor dst = att.rows(static_cast<int64_t>(r0) * n_new, static_cast<int64_t>(r1) * n_new);
          be.copy(out, dst);
          r0 = r1;
        }
      }
      // Capturing the weights (word timestamps) keeps one call per row: the capture layout
      // is [row, head, token, frame].
      for (int r = 0; r < batch && capture_slot >= 0; ++r) {
        const AudioContext& audio = *state.audio_[r];
        const int64_t per_row = hp.n_text_head * n_new * audio.features.dim(0);
        Tensor weights = capture->weights[capture_slot].reshape({batch * per_row}).rows(r * per_row, (r + 1) * per_row);
        Tensor out = ops::attention(be, q.rows(r * n_new, (r + 1) * n_new), audio.cross_k[layer], audio.cross_v[layer],
                                    hp.n_text_head, false, 0, &weights);
        Tensor dst = att.rows(static_cast<int64_t>(r) * n_new, static_cast<int64_t>(r + 1) * n_new);
        be.copy(out, dst);
      }
      ops::add(be, x, ops::linear(be, att, *a.o_w, a.o_b));
    }
    mlp_residual(be, w, x, p);
  }
  for (int r = 0; r < batch; ++r) state.lengths_[r] += n_new;
  // Logits use the token embedding as the output projection (tied weights).
  Tensor hidden = x;
  if (!all_positions) {
    hidden = be.alloc({batch, d});
    for (int r = 0; r < batch; ++r) {
      Tensor dst = hidden.rows(r, r + 1);
      be.copy(x.rows(static_cast<int64_t>(r) * n_new + n_new - 1, static_cast<int64_t>(r) * n_new + n_new), dst);
    }
  }
  Tensor normed = layer_norm(be, w, hidden, "decoder.ln");
  Tensor logits = be.to_host(ops::linear(be, normed, w.get("decoder.token_embedding.weight"), nullptr));
  return all_positions ? logits.reshape({batch, n_new, hp.n_vocab}) : logits;
}

void WhisperModel::reorder(DecoderState& state, std::span<const int> source) {
  const int batch = state.batch();
  if (static_cast<int>(source.size()) != batch)
    throw Error(ErrorCode::InvalidArgument, "[decoder] reorder needs one source row per row");
  const int64_t ctx = hparams().n_text_ctx;
  std::vector<int> lengths(batch);
  std::vector<std::shared_ptr<const AudioContext>> audio(batch);
  for (int r = 0; r < batch; ++r) {
    if (source[r] < 0 || source[r] >= batch) throw Error(ErrorCode::InvalidArgument, "[decoder] reorder row out of range");
    lengths[r] = state.lengths_[source[r]];
    audio[r] = state.audio_[source[r]];
  }
  for (size_t layer = 0; layer < state.self_k_.size(); ++layer) {
    for (Tensor* cache : {&state.self_k_[layer], &state.self_v_[layer]}) {
      Tensor fresh = backend_->alloc(cache->shape());
      for (int r = 0; r < batch; ++r) {
        const int64_t n = lengths[r];
        if (n == 0) continue;
        Tensor dst = fresh.rows(r * ctx, r * ctx + n);
        backend_->copy(cache->rows(source[r] * ctx, source[r] * ctx + n), dst);
      }
      *cache = fresh;
    }
  }
  state.lengths_ = lengths;
  state.audio_ = audio;
}

}  // namespace hark
