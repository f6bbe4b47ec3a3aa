// Streaming Silero VAD: audio arrives in pieces of any size; probabilities and segments are
// those of a batch run over the concatenated audio (same chunking, same state machine).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vad/silero.h"
#include "vad/speech_timestamps.h"

namespace hark::vad {

class VadStream {
 public:
  explicit VadStream(SileroModel model, const SpeechTimestampOptions& options = {});

  // Appends 16 kHz mono samples and runs every chunk that is now complete. Returns how many
  // new probabilities that produced. Throws Conflict after finish().
  int64_t feed(std::span<const float> samples);
  // Runs the trailing partial chunk zero-padded (as get_speech_timestamps does); afterwards
  // segments() equals the batch result. Idempotent.
  void finish();

  const std::vector<float>& probabilities() const { return probabilities_; }
  int64_t samples_seen() const { return samples_seen_; }
  bool finished() const { return finished_; }
  // True while the state machine is inside a segment (the latest chunks are speech).
  bool in_speech() const { return segmenter_.in_speech(); }
  // Before finish(): the batch segments of the audio covered by the chunks run so far (a
  // pending partial chunk is not counted yet). After: the batch segments of the whole audio.
  std::vector<SpeechSegment> segments() const {
    return segmenter_.finish(finished_ ? samples_seen_ : segmenter_.chunks() * kChunkSamples);
  }

 private:
  void run(const float* samples, int64_t n_chunks);

  SileroModel model_;
  SileroState state_;
  SpeechSegmenter segmenter_;
  std::vector<float> pending_;  // fewer than kChunkSamples samples not yet run
  std::vector<float> probabilities_;
  int64_t samples_seen_ = 0;
  bool finished_ = false;
};

}  // namespace hark::vad
