// The Whisper network over the Backend interface: encoder, decoder with a KV cache, and
// cross-attention K/V computed once per audio window and shared by every beam.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/backend.h"
#include "model/checkpoint.h"

namespace hark {

// Per-window audio features plus the cross-attention K/V of every decoder layer, made
// once by WhisperModel::prepare_audio() and then only read.
struct AudioContext {
  Tensor features;                 // [n_audio_ctx, d] encoder output
  std::vector<Tensor> cross_k, cross_v;  // per decoder layer, [n_audio_ctx, d]
};

// The growing state of `batch` token sequences decoded against one or more audio
// contexts: self-attention K/V per layer, and for each row the audio it attends to.
class DecoderState {
 public:
  int batch() const { return static_cast<int>(lengths_.size()); }
  int length(int row) const { return lengths_.at(row); }
  // Drops all cached tokens (keeps the audio).
  void clear();

 private:
  friend class WhisperModel;
  std::vector<std::shared_ptr<const AudioContext>> audio_;  // one per row
  std::vector<Tensor> self_k_, self_v_;                     // per layer, [batch · n_text_ctx, d]
  std::vector<int> lengths_;                                // cached tokens per row
};

// Softmax cross-attention weights captured during a decoder forward, for word timing:
// weights[layer] is [batch][n_heads][n_new_tokens][n_audio_ctx] (empty when not captured).
struct CrossAttentionCapture {
  std::vector<int> layers;            // which decoder layers to capture
  std::vector<Tensor> weights;        // filled by decode(), one per entry of `layers`
};

class WhisperModel {
 public:
  WhisperModel(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend);

  const HParams& hparams() const { return checkpoint_->hparams; }
  const Checkpoint& checkpoint() const { return *checkpoint_; }
  Backend& backend() { return *backend_; }

  // mel: [n_mels, 3000] → encoder output [n_audio_ctx, d]. `audio_ctx` > 0 encodes only
  // the first audio_ctx positions (lab option).
  Tensor encode(const Tensor& mel, int audio_ctx = 0);
  // Encoder output plus cross-attention K/V for all decoder layers.
  std::shared_ptr<const AudioContext> prepare_audio(const Tensor& mel, int audio_ctx = 0);

  // A decoder state with `batch` empty rows, all attending to `audio`.
  std::unique_ptr<DecoderState> new_state(std::shared_ptr<const AudioContext> audio, int batch = 1);
  // A state whose rows attend to different audio windows (batched windows).
  std::unique_ptr<DecoderState> new_state(std::vector<std::shared_ptr<const AudioContext>> audio_per_row);

  // Appends `n_new` tokens to every row (tokens is row-major [batch][n_new]) and returns
  // the logits for those positions: [batch, n_new, n_vocab] when all_positions, else the
  // last position only: [batch, n_vocab].
  Tensor decode(DecoderState& state, std::span<const int32_t> tokens, int n_new, bool all_positions = false,
                CrossAttentionCapture* capture = nullptr);

  // Beam bookkeeping: row i of the new state continues row source[i] of the old one.
  // Self-attention caches are gathered; the audio (and its cross K/V) is never copied.
  void reorder(DecoderState& state, std::span<const int> source);

 private:
  Tensor encoder_block(const Tensor& x, int layer);
  std::shared_ptr<const Checkpoint> checkpoint_;
  std::shared_ptr<Backend> backend_;
};

}  // namespace hark
