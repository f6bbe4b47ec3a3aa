// Log-mel of one 30 s window straight from the samples, so a stream can compute each
// window as soon as its audio is there. The STFT frames equal those of the whole-clip
// log-mel (the window is cut with enough context on both sides). The clamp floor is the
// reference's (maximum − 8) when the whole clip is known up front (use_clip_maximum, the
// batch path); a stream, which cannot know the future, uses the maximum over every
// window computed so far.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/backend.h"
#include "core/tensor.h"

namespace hark {

class WindowMel {
 public:
  explicit WindowMel(int n_mels) : n_mels_(n_mels) {}
  // Computes the STFT on this backend when it offers one (Backend::log_mel: the GPU fast
  // path); otherwise, and by default, on the CPU in double precision.
  void use_backend(Backend* backend) { backend_ = backend; }
  // [n_mels, 3000] for frames [seek, seek + 3000) of `samples` (zeros past their end).
  Tensor window(std::span<const float> samples, int64_t seek);
  // Takes the clamp floor from the whole clip, as the reference does (one extra pass of
  // the STFT over the clip, about 3% of an encoder window's time per 30 s).
  void use_clip_maximum(std::span<const float> samples);
  // Samples past the window end that window() reads (STFT context).
  static constexpr int64_t kRightContext = 200;

 private:
  // The window's raw log10 frames (with context) and the maximum over its own 3000.
  struct Frames {
    Tensor full;
    int64_t lead = 0;
    float max = -std::numeric_limits<float>::infinity();
  };
  Frames frames(std::span<const float> samples, int64_t seek) const;

  int n_mels_;
  Backend* backend_ = nullptr;
  float running_max_ = -std::numeric_limits<float>::infinity();  // raw log10 units
  // The first window's frames and the samples they came from: use_clip_maximum(),
  // language detection and the first window all need them, and a clip of one window (the
  // common request) then runs its STFT once instead of three times.
  mutable std::vector<float> first_input_;
  mutable Frames first_;
};

// Zeroes frames [keep, 3000) of a window (the reference's pad_or_trim of a short window).
void zero_tail(Tensor& mel, int keep);

}  // namespace hark
