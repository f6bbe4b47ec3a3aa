// The Whisper network over the Backend interface: encoder (one window or a batch of
// windows), decoder with a KV cache, and the cross-attention K/V of every decoder layer
// computed once per audio window and shared by every row that reads it.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/token_select.h"
#include "model/checkpoint.h"
#include "model/layer_weights.h"

namespace hark {

// Per-window audio features plus the cross-attention K/V of every decoder layer, made
// once by WhisperModel::prepare_audio() and then only read.
// x += mlp(layer_norm(x)), shared by the encoder and decoder blocks.
void mlp_residual(Backend& be, Tensor& x, const Norm& ln, const MlpLayer& mlp);

struct AudioContext {
  Tensor features;  // [n_frames, d] encoder output (n_frames = 1500 unless audio_ctx is set)
  Tensor cross_kv;  // [n_frames, n_text_layer·2·d]: layer l's K at column 2l·d, its V at (2l+1)·d
  int64_t frames() const { return features.dim(0); }
};

struct DecoderBuffers;
class DecoderBufferPool;

// The growing state of `batch` token sequences decoded against one or more audio
// windows: self-attention K/V per layer, and for each row the window it attends to.
// Its memory comes from the model's pool and goes back there when the state is dropped,
// so that states of one shape reuse the same buffers (and what the backend recorded on
// them, e.g. CUDA graphs).
class DecoderState {
 public:
  ~DecoderState();
  int batch() const { return static_cast<int>(lengths_.size()); }
  int length(int row) const { return lengths_.at(row); }
  // Drops all cached tokens (keeps the audio).
  void clear();

 private:
  friend class WhisperModel;
  std::vector<std::shared_ptr<const AudioContext>> windows_;  // distinct audio windows
  std::vector<int32_t> row_window_;                          // per row: index into windows_
  std::vector<int> lengths_;                                 // cached tokens per row
  std::shared_ptr<DecoderBuffers> buffers_;
  std::weak_ptr<DecoderBufferPool> pool_;
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
  ~WhisperModel();

  const HParams& hparams() const { return checkpoint_->hparams; }
  const Checkpoint& checkpoint() const { return *checkpoint_; }
  Backend& backend() { return *backend_; }

  // mel: [n_mels, 3000] → encoder output [n_audio_ctx, d]. `audio_ctx` > 0 encodes only
  // the first audio_ctx positions (lab option).
  Tensor encode(const Tensor& mel, int audio_ctx = 0);
  // Several windows in one pass: [batch·n_audio_ctx, d], window b in rows [b·n, (b+1)·n).
  Tensor encode_batch(std::span<const Tensor> mels, int audio_ctx = 0);
  // Encoder output plus cross-attention K/V for all decoder layers.
  std::shared_ptr<const AudioContext> prepare_audio(const Tensor& mel, int audio_ctx = 0);
  std::vector<std::shared_ptr<const AudioContext>> prepare_audio_batch(std::span<const Tensor> mels,
                                                                       int audio_ctx = 0);

  // A decoder state with `batch` empty rows, all attending to `audio`.
  std::unique_ptr<DecoderState> new_state(std::shared_ptr<const AudioContext> audio, int batch = 1);
  // A state whose rows attend to different audio windows (batched windows).
  std::unique_ptr<DecoderState> new_state(std::vector<std::shared_ptr<const AudioContext>> audio_per_row);

  // Appends `n_new` tokens to every row (tokens is row-major [batch][n_new]) and returns
  // the logits (fp32, on the host) for those positions: [batch, n_new, n_vocab] when
  // all_positions, else the last position only: [batch, n_vocab].
  Tensor decode(DecoderState& state, std::span<const int32_t> tokens, int n_new, bool all_positions = false,
                CrossAttentionCapture* capture = nullptr);

  // Appends one token to every row and chooses the next next to the logits (on the GPU
  // with the fast path): the k best tokens of each row after the filters of `rules`, given
  // each row's sampled tokens (summarised), with log-probabilities. Returns [batch × k].
  std::vector<TokenChoice> decode_select(DecoderState& state, std::span<const int32_t> tokens,
                                         const SelectionRules& rules, std::span<const SampledSummary> rows, int k);
  // Whether decode_select is the fast way to decode on this backend.
  bool selects_on_device() const { return backend_->prefers_device_selection(); }

  // Beam bookkeeping: row i of the new state continues row source[i] of the old one.
  // Self-attention caches are gathered; the audio (and its cross K/V) is never copied.
  void reorder(DecoderState& state, std::span<const int> source);

 private:
  Tensor encoder_stem(const Tensor& mel, int n_ctx);
  void encoder_block(Tensor& x, int batch, int layer);
  // The decoder's forward pass over the state's staged inputs; returns logits on the device.
  Tensor decoder_forward(DecoderState& state, int n_new, bool all_positions, CrossAttentionCapture* capture);
  void validate_step(const DecoderState& state, std::span<const int32_t> tokens, int n_new) const;
  void stage_inputs(DecoderState& state, std::span<const int32_t> tokens);

  std::shared_ptr<const Checkpoint> checkpoint_;
  std::shared_ptr<Backend> backend_;
  ModelLayers layers_;
  std::shared_ptr<DecoderBufferPool> pool_;
};

}  // namespace hark
