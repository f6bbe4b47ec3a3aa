// Log-mel of one 30 s window straight from the samples, so a stream can compute each
// window as soon as its audio is there. The STFT frames equal those of the whole-clip
// log-mel (the window is cut with enough context on both sides); only the clamp floor
// (max − 8) differs: the reference takes the maximum over the whole clip, hark the
// maximum over every window computed so far, which a stream can know.
#pragma once

#include <cstdint>
#include <limits>
#include <span>

#include "core/tensor.h"

namespace hark {

class WindowMel {
 public:
  explicit WindowMel(int n_mels) : n_mels_(n_mels) {}
  // [n_mels, 3000] for frames [seek, seek + 3000) of `samples` (zeros past their end).
  Tensor window(std::span<const float> samples, int64_t seek);
  // Samples past the window end that window() reads (STFT context).
  static constexpr int64_t kRightContext = 200;

 private:
  int n_mels_;
  float running_max_ = -std::numeric_limits<float>::infinity();  // of the rescaled values
};

// Zeroes frames [keep, 3000) of a window (the reference's pad_or_trim of a short window).
void zero_tail(Tensor& mel, int keep);

}  // namespace hark
