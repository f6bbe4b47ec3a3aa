// The VAD gate in front of transcription: pure functions of the detected segments, so the
// engine, the CLI and the server make the same decision.
#pragma once

#include <cstdint>
#include <span>

#include "vad/speech_timestamps.h"

namespace hark::vad {

// vad_gate: true when Whisper should run at all. No detected speech means an empty
// transcript without running the model (the guard against text hallucinated on silence).
bool vad_gate(std::span<const SpeechSegment> segments);

// The audio to transcribe under vad_trim: the span from the first segment's start to the
// last one's end, widened by `margin_s` on both sides and clamped to the clip.
struct TrimWindow {
  int64_t begin = 0;  // first sample (of the original clip) kept
  int64_t end = 0;    // one past the last sample kept
  bool empty() const { return end <= begin; }
  int64_t samples() const { return end > begin ? end - begin : 0; }
  // Add to timestamps measured in the trimmed audio to make them relative to the clip.
  double offset_seconds() const { return static_cast<double>(begin) / kVadSampleRate; }
};

inline constexpr double kTrimMarginSeconds = 0.5;

// Empty window when there are no segments. Throws InvalidArgument on a negative margin or
// segments outside [0, clip_samples].
TrimWindow vad_trim(std::span<const SpeechSegment> segments, int64_t clip_samples,
                    double margin_s = kTrimMarginSeconds);

}  // namespace hark::vad
