// The Whisper network over the Backend interface: encoder (one window or a batch of
// windows), decoder with a KV cache, and the cross-attention K/V of every decoder layer
// computed once per audio window and shared by every row that reads it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
  int pad_window_ = -1;  // slot states: the zero window that free rows read
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
  std::shared_ptr<const Checkpoint> shared_checkpoint() const { return checkpoint_; }
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

  // Greedy decoding with a one-step lag (model/decoder_greedy.cc): appends `token` to the
  // state's one row, then keeps stepping with each chosen token fed back on the device, so
  // that step t + 1 is queued before the host reads step t's choice. `on_choice` gets the
  // choices in order (k = 1, with the row's summary `summary` advanced by each) and
  // returns whether to go on; at most `max_steps` steps, fewer where the text context ends.
  // Returns the number of choices handed over. One step beyond the last one handed over
  // may have run on the device (its position in the cache is never read).
  int decode_greedy(DecoderState& state, int32_t token, const SelectionRules& rules, const SampledSummary& summary,
                    int max_steps, const std::function<bool(const TokenChoice&)>& on_choice);
  // A window's prompt in one pass where decode() would take two: appends `n_new` tokens to
  // every row and returns the logits at position `position` of the new tokens, then at the
  // last: [2, batch, n_vocab] on the host (the no-speech probability is read at the first).
  Tensor decode_two_positions(DecoderState& state, std::span<const int32_t> tokens, int n_new, int position);
  // The same pass with the first step chosen next to the logits: row 0's logits at
  // `position` ([n_vocab] on the host) and every row's k best tokens at the last position
  // after the filters of `rules` (decode_select's selection, [rows × k]).
  struct PromptChoices {
    Tensor row0_at_position;
    std::vector<TokenChoice> choices;
  };
  PromptChoices decode_prompt_select(DecoderState& state, std::span<const int32_t> tokens, int n_new, int position,
                                     const SelectionRules& rules, std::span<const SampledSummary> rows, int k);

  // Beam bookkeeping: row i of the new state continues row source[i] of the old one.
  // Self-attention caches are gathered; the audio (and its cross K/V) is never copied.
  void reorder(DecoderState& state, std::span<const int> source);

  // ---- Continuous batching (decoder_slots.cc) ----
  // A slot state has a fixed number of row slots and window slots, so that the sequences
  // of many requests are decoded together while they come and go: a caller (the batch
  // scheduler) copies each audio window into a free window slot, starts a group of rows
  // on it in a free run of row slots, prefills the group's prompt on its own rows, steps
  // every row at once, and frees the rows and the window when the group is done. Free
  // rows read a zero padding window and decode a padding token; nothing reads their
  // results. The shapes never change between steps (a backend may record the step once
  // per state size and replay it), and on the CPU every row's numbers are those it would
  // get decoded alone (row-independent products; see Backend::linear on the CPU).
  std::unique_ptr<DecoderState> new_slot_state(int rows, int windows, int64_t frames);
  // A slot state of another size holding the same rows, windows and caches (slot indices
  // kept); rows and windows beyond a smaller size must be free.
  std::unique_ptr<DecoderState> resize_slot_state(DecoderState& from, int rows, int windows);
  int slot_windows(const DecoderState& state) const { return state.pad_window_; }
  // Copies `audio`'s cross-attention K/V into window slot `window`.
  void load_window(DecoderState& state, int window, const AudioContext& audio);
  // Rows [first, first + count) start empty sequences reading window slot `window`, or
  // (free_rows) go back to padding.
  void start_rows(DecoderState& state, int first, int count, int window);
  void free_rows(DecoderState& state, int first, int count);
  // Appends n_new tokens to rows [first, first + count) only (tokens row-major) and
  // returns the logits at each row's last position, [count, n_vocab] on the host.
  // also_position ≥ 0: the logits at that position first, then the last ([2·count, n_vocab];
  // decode_two_positions for a group's prompt).
  Tensor decode_rows(DecoderState& state, int first, int count, std::span<const int32_t> tokens, int n_new,
                     int also_position = -1);
  // decode_rows for several groups' prompts, each on its own run of rows (the runs must not
  // share a row): every pass is queued before one wait for all their logits. A wait per
  // pass costs a round trip behind whatever else the device is running (the encoder lane's
  // windows), and between steps the scheduler's thread is the batch's critical path.
  // Each prompt's rows get exactly the numbers decode_rows gives them.
  struct RowPrompt {
    int first = 0, count = 0;
    std::span<const int32_t> tokens;
    int n_new = 0;
    int also_position = -1;
  };
  std::vector<Tensor> decode_row_prompts(DecoderState& state, std::span<const RowPrompt> prompts);
  // One token for every row whose `active` flag is set (tokens[r]; the others keep their
  // sequence as it is). The logits stay on the device in the state; read them with
  // slot_logits() and select_rows().
  // Returns the rows computed: up to the last active one, rounded as recorded steps are.
  // wait = false: returns once the step is queued (a select_rows or slot_logits after it
  // waits for it anyway; one wait less behind the device's other work).
  int step_rows(DecoderState& state, std::span<const int32_t> tokens, std::span<const uint8_t> active,
                bool wait = true);
  // The last step's logits of rows [first, first + count), [count, n_vocab] on the host.
  Tensor slot_logits(DecoderState& state, int first, int count);
  // The last step's k best tokens of the listed rows after the filters of `rules`
  // (decode_select's selection, next to the logits), [rows.size() × k].
  std::vector<TokenChoice> select_rows(DecoderState& state, std::span<const int> rows, const SelectionRules& rules,
                                       std::span<const SampledSummary> summaries, int k);
  // Beam bookkeeping within rows [first, first + source.size()): row first + i continues
  // row first + source[i].
  void reorder_rows(DecoderState& state, int first, std::span<const int> source);

 private:
  // One window's mel, through `staging` (page-locked, [n_mels, 2·n_ctx] f32), as the
  // convolutions' input on the device.
  Tensor window_frames(const Tensor& mel, int n_ctx, Tensor& staging);
  Tensor encoder_convolutions(const Tensor& frames, int n_ctx);
  // The n_ctx the windows encode to, after checking their shapes.
  // features: `windows` windows' encoder outputs, one after another.
  Tensor cross_kv(const Tensor& features, int64_t windows);
  int checked_audio_ctx(std::span<const Tensor> mels, int audio_ctx) const;
  // One window through encoder and cross K/V as a step a backend may record and replay
  // (model/encoder_replay.cc): the latency case, where launch gaps cost most.
  std::shared_ptr<const AudioContext> prepare_audio_replayed(const Tensor& mel, int n_ctx);
  // What one recorded encoder step reads and writes, at fixed addresses.
  struct EncoderReplay {
    uint64_t key = 0;
    Tensor mel_host;      // [n_mels, 2·n_ctx] f32, page-locked: the window being encoded
    Tensor mel;           // its device copy, the step's input
    Tensor features, kv;  // the step's outputs, copied out for each window
  };
  void encoder_block(Tensor& x, int batch, int layer);
  // The decoder's forward pass over the state's staged inputs; returns logits on the device.
  // Rows [first, first + count) only when count ≥ 0 (a group's prefill in a slot state).
  // stage = false: the inputs are already on the device (fed back by select_and_feed).
  // also_position ≥ 0 (with n_new > 1, not all_positions): the logits of every row at that
  // position come first, [2·batch, n_vocab] — the no-speech position of a window's prompt.
  // input_offset: where in the state's input buffers this pass's inputs sit (several
  // passes queued before one wait each stage their own; decode_row_prompts).
  Tensor decoder_forward(DecoderState& state, int n_new, bool all_positions, CrossAttentionCapture* capture,
                         int first = 0, int count = -1, bool stage = true, int also_position = -1,
                         int64_t input_offset = 0);
  // decoder_forward without the final norm and logits: the rows they would read.
  Tensor decoder_hidden(DecoderState& state, int n_new, bool all_positions, CrossAttentionCapture* capture,
                        int first = 0, int count = -1, bool stage = true, int also_position = -1,
                        int64_t input_offset = 0);
  // decoder_forward recorded under `key` (a step or a short prompt), its logits through the
  // state's page-locked buffer: [batch, n_vocab], or [2·batch, n_vocab] with also_position.
  Tensor replayed_logits(DecoderState& state, uint64_t key, int n_new, int also_position);
  // Rows [first, first + count) take n_new tokens each (count < 0: every row from first).
  void validate_step(const DecoderState& state, std::span<const int32_t> tokens, int n_new, int first = 0,
                     int count = -1) const;
  void stage_inputs(DecoderState& state, std::span<const int32_t> tokens, int first = 0, int count = -1,
                    int64_t input_offset = 0);
  // A selection's spec (rules and one summary per row) written to the state's host buffer,
  // and the device and host views of its choices for those rows, k each.
  struct ChoiceBuffers {
    Tensor device, host;  // i32 [rows·k·2]
  };
  ChoiceBuffers stage_selection(DecoderState& state, const SelectionRules& rules, std::span<const SampledSummary> rows,
                                int k);
  std::vector<TokenChoice> read_choices(const Tensor& host) const;

  std::shared_ptr<const Checkpoint> checkpoint_;
  std::shared_ptr<Backend> backend_;
  ModelLayers layers_;
  std::shared_ptr<DecoderBufferPool> pool_;
  std::mutex encoder_mutex_;
  // encode_batch's page-locked staging of the windows' mels, and the mark after its last
  // upload (the next batch waits for it before writing the buffer again).
  std::mutex staging_mutex_;
  Tensor staging_;
  std::optional<uint64_t> staging_uploaded_;
  std::map<int, std::unique_ptr<EncoderReplay>> encoder_replays_;  // by n_ctx
  // This model's number in its encoder steps' replay keys (encoder_replay.cc), unique in
  // the process.
  static uint64_t take_replay_number();
  const uint64_t replay_number_ = take_replay_number();
};

}  // namespace hark
