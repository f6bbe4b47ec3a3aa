#include "transcribe/window_mel.h"

#include <algorithm>
#include <cstring>

#include "audio/mel.h"

namespace hark {

Tensor WindowMel::window(std::span<const float> samples, int64_t seek) {
  const int64_t n = static_cast<int64_t>(samples.size());
  // Two frames of left context keep the reflect padding of the STFT out of the window.
  const int64_t start = std::min(std::max<int64_t>(0, seek * kHopLength - 2 * kHopLength), n);
  const int64_t lead = (seek * kHopLength - start) / kHopLength;
  const int64_t wanted_end = seek * kHopLength + kWindowSamples + kRightContext;
  const int64_t stop = std::clamp<int64_t>(wanted_end, start, n);
  const int64_t length = stop - start;
  const int64_t need = (lead + kWindowFrames) * kHopLength + 2 * kRightContext;
  const int64_t pad = std::max<int64_t>(need - length, kHopLength);
  Tensor full = log_mel_spectrogram(samples.subspan(start, length), n_mels_, pad);

  const int64_t frames = full.dim(1);
  const float* src = full.data<float>();
  float window_max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < full.numel(); ++i) window_max = std::max(window_max, src[i]);
  running_max_ = std::max(running_max_, window_max);
  // The call clamped at (its max − 8); raising the floor to (running max − 8) equals
  // clamping the raw log-mel there, because the running max is never below its own.
  const float floor = running_max_ - 2.0f;  // (x − 8 + 4) / 4 in rescaled units is max − 2

  Tensor out = Tensor::zeros({n_mels_, kWindowFrames});
  float* dst = out.data<float>();
  for (int m = 0; m < n_mels_; ++m)
    for (int64_t f = 0; f < kWindowFrames && lead + f < frames; ++f)
      dst[m * kWindowFrames + f] = std::max(src[m * frames + lead + f], floor);
  return out;
}

void zero_tail(Tensor& mel, int keep) {
  const int64_t frames = mel.dim(1);
  float* d = mel.data<float>();
  for (int64_t m = 0; m < mel.dim(0); ++m)
    for (int64_t f = std::max(keep, 0); f < frames; ++f) d[m * frames + f] = 0.0f;
}

}  // namespace hark
