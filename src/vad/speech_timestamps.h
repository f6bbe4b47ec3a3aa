// Speech segments from per-chunk probabilities: silero-vad 6.2's get_speech_timestamps
// (utils_vad.py), same parameters, defaults and arithmetic, at 16 kHz with 512-sample chunks.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "vad/silero.h"

namespace hark::vad {

struct SpeechTimestampOptions {
  double threshold = 0.5;                 // a chunk at or above this is speech
  std::optional<double> neg_threshold;    // below this speech ends; default max(threshold − 0.15, 0.01)
  int min_speech_duration_ms = 250;       // shorter segments are dropped
  double max_speech_duration_s = std::numeric_limits<double>::infinity();  // longer ones are split
  int min_silence_duration_ms = 100;      // silence needed to close a segment
  int speech_pad_ms = 30;                 // padding added on both sides of each segment
  double min_silence_at_max_speech_ms = 98;   // silences that may serve as split points
  bool use_max_poss_sil_at_max_speech = true;  // split at the longest such silence, else the last

  // Throws InvalidArgument naming the bad field.
  void validate() const;
  double effective_neg_threshold() const;
};

// [start, end) in 16 kHz samples of the clip.
struct SpeechSegment {
  int64_t start = 0;
  int64_t end = 0;
  bool operator==(const SpeechSegment&) const = default;
};

// The reference's segment state machine fed one probability at a time, so a stream and a
// batch run make the very same decisions. finish() applies the end-of-audio rule and the
// padding/merging pass on a copy, so it can be asked at any time for the segments so far.
class SpeechSegmenter {
 public:
  explicit SpeechSegmenter(const SpeechTimestampOptions& options = {});

  void push(float probability);
  // The padded segments if the audio ended after `audio_samples` samples.
  std::vector<SpeechSegment> finish(int64_t audio_samples) const;

  bool in_speech() const { return triggered_; }
  int64_t chunks() const { return chunk_index_; }

 private:
  void split_at_max_speech(int64_t cur_sample);

  SpeechTimestampOptions options_;
  double neg_threshold_;
  double min_speech_samples_, speech_pad_samples_, max_speech_samples_;
  double min_silence_samples_, min_silence_samples_at_max_speech_;

  int64_t chunk_index_ = 0;
  bool triggered_ = false;
  std::vector<SpeechSegment> speeches_;        // closed segments, before padding
  std::optional<int64_t> current_start_;       // the open segment, if any
  int64_t temp_end_ = 0;                       // 0: no candidate end (as in the reference)
  int64_t prev_end_ = 0;
  int64_t next_start_ = 0;
  std::vector<std::pair<int64_t, int64_t>> possible_ends_;  // (silence start, silence length)
};

std::vector<SpeechSegment> speech_segments_from_probabilities(std::span<const float> probabilities,
                                                             int64_t audio_samples,
                                                             const SpeechTimestampOptions& options = {});

// Probabilities of the whole clip (fresh state) → segments: the reference's
// get_speech_timestamps(audio, model) with return_seconds=False.
std::vector<SpeechSegment> get_speech_timestamps(const SileroModel& model, std::span<const float> audio,
                                                 const SpeechTimestampOptions& options = {});

}  // namespace hark::vad
