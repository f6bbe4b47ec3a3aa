// Turning one window's sampled tokens into segments, and the hallucination heuristics of
// the reference's seek loop. Pure functions of tokens and times, unit-tested on their own.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hark/result.h"

namespace hark {

inline constexpr int kInputStride = 2;              // mel frames per audio position
inline constexpr double kTimePrecision = 0.02;      // seconds per timestamp token
inline constexpr int kFramesPerSecond = 100;        // mel frames per second

struct WindowSplit {
  std::vector<Segment> segments;  // start/end/tokens set; text and scores left to the caller
  int seek_advance = 0;           // mel frames to move the seek point by
  bool single_timestamp_ending = false;
};

// The reference's rules: consecutive timestamp pairs close segments; a lone timestamp at
// the end means "no speech after it" (seek past the window); otherwise seek to the last
// closed pair. Without any pair the whole window is one segment ending at the last
// timestamp (or at the window end).
WindowSplit split_window(std::span<const int> tokens, int timestamp_begin, double time_offset, int segment_size);

// The end of the last word of `segments`, else the end of the last segment; nullopt when empty.
std::optional<double> last_end(std::span<const Segment> segments);

// A segment whose first words are improbable, very short or very long.
bool is_segment_anomaly(const Segment* segment, const std::string& punctuation);

}  // namespace hark
