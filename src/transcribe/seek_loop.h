// The reference's long-form seek loop over 30 s windows, as a resumable object: the
// caller supplies each window's mel when it has the audio for it (see StreamingRun), the
// loop decodes it with the temperature fallback, cuts segments, adds word timings and
// moves the seek point.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "align/word_timing.h"
#include "batch/batch_scheduler.h"
#include "decode/decoding_task.h"
#include "hark/options.h"
#include "hark/result.h"
#include "model/whisper_model.h"

namespace hark {

class Tokenizer;

inline constexpr int64_t kUnknownLength = std::numeric_limits<int64_t>::max();

// How a loop reaches the model. Unset members use `model` directly (one run at a time owns
// it); an engine that batches many runs (src/batch/) routes them through its scheduler.
struct ModelAccess {
  std::function<std::shared_ptr<const AudioContext>(const Tensor& mel, int audio_ctx)> encode;
  std::function<std::unique_ptr<Inference>(std::shared_ptr<const AudioContext>)> inference;
  std::function<void(const std::function<void()>&)> exclusive;  // other model calls (word timing)
  // Queues a window for the encoder without waiting (BatchScheduler::encode_ahead); set
  // only where that overlaps the decoding of the window before (an encoder lane).
  std::function<std::unique_ptr<PendingEncode>(const Tensor& mel, int audio_ctx)> encode_ahead;
};

// Everything the loop needs from the model side.
struct SeekLoopContext {
  WhisperModel* model = nullptr;
  ModelAccess access;
  std::shared_ptr<const Tokenizer> tokenizer;  // may be null in tests (then no text)
  DecodingVocabulary vocab;
  AlignmentHeads alignment_heads;
  // Splits text tokens (+ EOT) into words for `language`; needed for word timestamps.
  std::function<void(std::span<const int>, const std::string& language, std::vector<std::string>&,
                     std::vector<std::vector<int>>&)>
      split_words;
};

DecodingVocabulary make_decoding_vocabulary(const Tokenizer& tokenizer, const HParams& hp);

// The 223-token prompt budget shared by the previous text and the vocabulary hints.
VocabularyReport fit_vocabulary(const std::vector<std::string>& terms, int budget,
                                const std::function<std::vector<int>(const std::string&)>& encode,
                                std::vector<int>& hint_tokens);

class SeekLoop {
 public:
  SeekLoop(SeekLoopContext context, TranscribeOptions options);

  // The frame the next window starts at, after moving into the next clip when needed;
  // nullopt when every clip is done for `content_frames` (kUnknownLength while streaming).
  std::optional<int64_t> next_window(int64_t content_frames);
  // Frames of real audio the next window will use (≤ 3000).
  int segment_size(int64_t content_frames) const;

  // Language detection on the first 30 s (mel [n_mels, 3000]); a no-op when the
  // language was given. Must run before the first window when `needs_language()`.
  bool needs_language() const { return language_.empty(); }
  void detect_language(const Tensor& first_window_mel);

  // Decodes the window at the current seek point. `mel` is [n_mels, 3000] whose frames
  // past `segment_size` are zero. Returns the segments it made final. `after_encode`, when
  // given, runs once the window's encoder output is there, before it is decoded.
  std::vector<Segment> run_window(const Tensor& mel, int segment_size, int64_t content_frames,
                                  const std::function<void()>& after_encode = {});

  // Where the window after one of `segment_size` frames at the current seek will start,
  // when that is known before this one is decoded: without timestamps every window moves
  // the seek by its size (a no-speech skip too), unless word timings or the hallucination
  // rule move it by what was said. nullopt otherwise, when no encoder takes windows ahead
  // (ModelAccess::encode_ahead), or when that start is not inside the current clip of
  // `content_frames` (kUnknownLength: not known yet).
  std::optional<int64_t> seek_after(int segment_size, int64_t content_frames) const;
  // segment_size() for a window at `seek` in the current clip.
  int segment_size_at(int64_t seek, int64_t content_frames) const;
  // A window whose encoder call went out while the one before it decoded: where it starts,
  // its length, its mel and the pending encoder output.
  struct WindowAhead {
    int64_t seek = -1;
    int size = 0;
    Tensor mel;
    std::unique_ptr<PendingEncode> pending;
  };
  // Queues the window `mel` for the encoder now (from any thread: it touches nothing of the
  // loop's); expect() hands it to the loop, whose run_window() then takes its encoder output
  // when it is the window at hand (same start, same length: the same mel by construction).
  std::unique_ptr<PendingEncode> queue_ahead(const Tensor& mel) const;
  void expect(WindowAhead ahead);
  // The mel of the window queued ahead when it is the one at `seek` of `size` frames (so the
  // caller need not compute it again); null otherwise.
  const Tensor* ahead_mel(int64_t seek, int size) const;

  int64_t seek() const { return seek_; }
  const std::string& language() const { return language_; }
  const std::map<std::string, float>& language_probs() const { return language_probs_; }
  const std::vector<Segment>& segments() const { return segments_; }
  const VocabularyReport& vocabulary() const { return vocabulary_; }
  std::string text() const;  // all text after the initial prompt
  // Time spent so far in the encoder (device work included) and in decoding.
  double encode_ms() const { return encode_ms_; }
  double decode_ms() const { return decode_ms_; }
  double decode_model_ms() const { return decode_model_ms_; }      // of decode_ms: the model's calls
  double decode_reorder_ms() const { return decode_reorder_ms_; }  // and beam reordering
  int decode_runs() const { return decode_runs_; }                 // decoding task runs, fallbacks too
  int64_t sampled_tokens() const { return sampled_tokens_; }       // what those runs sampled


 private:
  // The encoder's output for `mel`; the language detection's when it saw the same mel
  // (a first window of a full 30 s), so that one encoder pass serves both.
  std::shared_ptr<const AudioContext> encode(const Tensor& mel);
  // The window queued ahead's encoder output when it is the current window (seek and
  // `segment_size`), else null; either way it is dropped (the scheduler counts an unused one).
  std::shared_ptr<const AudioContext> take_ahead(int segment_size);
  DecodingResult decode_with_fallback(std::shared_ptr<const AudioContext> audio);
  std::unique_ptr<Inference> make_inference(std::shared_ptr<const AudioContext> audio);
  std::vector<int> window_prompt() const;
  void add_word_timestamps(std::vector<Segment>& current, std::shared_ptr<const AudioContext> audio,
                           int segment_size, int64_t previous_seek, bool single_timestamp_ending,
                           double window_end_time, int64_t content_frames, bool& skip_rest);
  // The reference's hallucination_silence_threshold rules; true when the whole window
  // is to be skipped (seek already moved past the silence).
  bool skip_hallucinations(std::vector<Segment>& current, int64_t previous_seek, int segment_size,
                           bool single_timestamp_ending, double window_end_time, int64_t content_frames);
  void finish_window(std::vector<Segment>& current, const DecodingResult& result);

  SeekLoopContext ctx_;
  TranscribeOptions options_;
  std::string language_;
  std::map<std::string, float> language_probs_;
  std::vector<std::pair<int64_t, int64_t>> clips_;  // [start, end) frames; end kUnknownLength = content end
  size_t clip_index_ = 0;
  int64_t seek_ = 0;
  int window_index_ = 0;
  std::vector<int> all_tokens_;
  size_t initial_prompt_len_ = 0;
  size_t prompt_reset_since_ = 0;
  std::vector<int> hint_tokens_;
  VocabularyReport vocabulary_;
  double last_speech_timestamp_ = 0;
  std::vector<Segment> segments_;
  double encode_ms_ = 0, decode_ms_ = 0, decode_model_ms_ = 0, decode_reorder_ms_ = 0;
  int decode_runs_ = 0;
  int64_t sampled_tokens_ = 0;
  Tensor encoded_mel_;
  std::shared_ptr<const AudioContext> encoded_;
  WindowAhead ahead_;
};

}  // namespace hark
