#include "vad/gate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "hark/error.h"

namespace hark::vad {

bool vad_gate(std::span<const SpeechSegment> segments) {
  return std::any_of(segments.begin(), segments.end(), [](const SpeechSegment& s) { return s.end > s.start; });
}

TrimWindow vad_trim(std::span<const SpeechSegment> segments, int64_t clip_samples, double margin_s) {
  if (!(margin_s >= 0.0) || !std::isfinite(margin_s))
    throw Error(ErrorCode::InvalidArgument, "[vad] trim margin must be a finite number of seconds >= 0");
  if (clip_samples < 0) throw Error(ErrorCode::InvalidArgument, "[vad] negative clip length");
  for (const SpeechSegment& s : segments)
    if (s.start < 0 || s.end > clip_samples || s.end < s.start)
      throw Error(ErrorCode::InvalidArgument, "[vad] segment [" + std::to_string(s.start) + ", " +
                                                  std::to_string(s.end) + ") lies outside the clip of " +
                                                  std::to_string(clip_samples) + " samples");
  TrimWindow window;
  if (!vad_gate(segments)) return window;
  int64_t first = clip_samples, last = 0;
  for (const SpeechSegment& s : segments) {
    if (s.end == s.start) continue;
    first = std::min(first, s.start);
    last = std::max(last, s.end);
  }
  const auto margin = static_cast<int64_t>(std::llround(margin_s * kVadSampleRate));
  window.begin = std::max<int64_t>(0, first - margin);
  window.end = std::min(clip_samples, last + margin);
  return window;
}

}  // namespace hark::vad
