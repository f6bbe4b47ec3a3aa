#include "audio/mel.h"

#include <fftw3.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "audio/npz.h"
#include "core/assets.h"
#include "core/thread_pool.h"

namespace hark {
namespace {

constexpr int kBins = kNFft / 2 + 1;  // 201 rfft bins
constexpr double kLogFloor = 1e-10;

// The filters as loaded plus their non-zero span per mel band: each Slaney triangle
// covers only a few bins, so the mel product costs ~2 multiply-adds per bin, not 80.
struct MelBank {
  Tensor dense;                 // f32 [n_mels, 201]
  std::vector<int> first, last;  // non-zero bins [first, last) of each band
  std::vector<double> weights;  // the band weights over [first, last), concatenated
  std::vector<size_t> offset;   // where each band's weights start
};

const MelBank& mel_bank(int n_mels) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<MelBank>> cache;
  std::lock_guard lock(mutex);
  auto& slot = cache[n_mels];
  if (slot) return *slot;
  if (n_mels != 80 && n_mels != 128)
    throw Error(ErrorCode::InvalidArgument, "[mel] n_mels must be 80 or 128, got " + std::to_string(n_mels));
  std::string path = asset_path("mel_filters.npz");
  auto bank = std::make_unique<MelBank>();
  bank->dense = read_npz_array(path, "mel_" + std::to_string(n_mels)).to_f32(false);
  if (bank->dense.shape() != Shape{n_mels, kBins})
    throw Error(ErrorCode::ModelFormat, "[mel] " + path + ": mel_" + std::to_string(n_mels) + " has shape " +
                                            shape_str(bank->dense.shape()) + ", expected [" +
                                            std::to_string(n_mels) + ", 201]");
  const float* w = bank->dense.data<float>();
  for (int m = 0; m < n_mels; ++m) {
    const float* row = w + static_cast<size_t>(m) * kBins;
    int lo = 0, hi = kBins;
    while (lo < kBins && row[lo] == 0.0f) ++lo;
    while (hi > lo && row[hi - 1] == 0.0f) --hi;
    bank->first.push_back(lo);
    bank->last.push_back(hi);
    bank->offset.push_back(bank->weights.size());
    for (int k = lo; k < hi; ++k) bank->weights.push_back(row[k]);
  }
  slot = std::move(bank);
  return *slot;
}

// FFTW planning is not thread-safe and costs more than a frame: plan once, then run the
// plan on per-thread buffers with the new-array interface.
fftw_plan rfft_plan() {
  static std::once_flag once;
  static fftw_plan plan;
  std::call_once(once, [] {
    double* in = fftw_alloc_real(kNFft);
    fftw_complex* out = fftw_alloc_complex(kBins);
    plan = fftw_plan_dft_r2c_1d(kNFft, in, out, FFTW_ESTIMATE);
    fftw_free(in);
    fftw_free(out);
  });
  return plan;
}

const std::vector<double>& hann_window() {
  static const std::vector<double> window = [] {
    std::vector<double> w(kNFft);
    for (int n = 0; n < kNFft; ++n) w[n] = 0.5 - 0.5 * std::cos(2.0 * M_PI * n / kNFft);  // periodic
    return w;
  }();
  return window;
}

// Computes log10 mel columns [t0, t1) of `out` ([n_mels, frames]) before the clamp.
struct FrameRange {
  std::span<const float> samples;
  int64_t padded_len;  // samples + trailing zeros
  const MelBank& bank;
  int n_mels;
  int64_t frames;
  float* out;

  // Sample i of the padded signal after center=True reflect padding.
  double at(int64_t i) const {
    if (i < 0) i = -i;
    if (i >= padded_len) i = 2 * (padded_len - 1) - i;
    return i < static_cast<int64_t>(samples.size()) ? samples[static_cast<size_t>(i)] : 0.0;
  }

  void run(int64_t t0, int64_t t1) const {
    std::unique_ptr<double, decltype(&fftw_free)> buf(fftw_alloc_real(kNFft), fftw_free);
    std::unique_ptr<fftw_complex, decltype(&fftw_free)> spec(fftw_alloc_complex(kBins), fftw_free);
    std::vector<double> power(kBins);
    const auto& window = hann_window();
    const int64_t n = static_cast<int64_t>(samples.size());
    const float silence = static_cast<float>(std::log10(kLogFloor));
    for (int64_t t = t0; t < t1; ++t) {
      int64_t start = t * kHopLength - kNFft / 2;
      // Past the audio (and far enough from the end that the reflection is zeros too)
      // the frame is exactly zero: skip the FFT.
      if (start >= n && padded_len - (kNFft / 2 + 1) >= n) {
        for (int m = 0; m < n_mels; ++m) out[m * frames + t] = silence;
        continue;
      }
      double* x = buf.get();
      for (int k = 0; k < kNFft; ++k) x[k] = at(start + k) * window[k];
      fftw_execute_dft_r2c(rfft_plan(), x, spec.get());
      for (int k = 0; k < kBins; ++k) power[k] = spec.get()[k][0] * spec.get()[k][0] + spec.get()[k][1] * spec.get()[k][1];
      for (int m = 0; m < n_mels; ++m) {
        const double* w = bank.weights.data() + bank.offset[m];
        double sum = 0;
        for (int k = bank.first[m]; k < bank.last[m]; ++k) sum += *w++ * power[k];
        out[m * frames + t] = static_cast<float>(std::log10(std::max(sum, kLogFloor)));
      }
    }
  }
};

}  // namespace

const Tensor& mel_filters(int n_mels) { return mel_bank(n_mels).dense; }

Tensor log_mel_unclamped(std::span<const float> samples, int n_mels, int64_t pad_samples, ThreadPool* pool) {
  if (pad_samples < 0) throw Error(ErrorCode::InvalidArgument, "[mel] negative padding");
  const MelBank& bank = mel_bank(n_mels);
  const int64_t padded_len = static_cast<int64_t>(samples.size()) + pad_samples;
  if (padded_len <= kNFft / 2)
    throw Error(ErrorCode::AudioTooShort, "[mel] need more than " + std::to_string(kNFft / 2) +
                                              " samples for the reflect padding, got " + std::to_string(padded_len));
  // center=True gives 1 + len/hop frames; Whisper drops the last one.
  const int64_t frames = padded_len / kHopLength;
  Tensor mel = Tensor::empty({n_mels, frames});
  rfft_plan();  // plan before any worker thread runs
  FrameRange job{samples, padded_len, bank, n_mels, frames, mel.data<float>()};
  // Split only the frames that need an FFT across threads: the silent tail is cheap and
  // would otherwise all land on the last thread.
  const int64_t busy = std::min(frames, (static_cast<int64_t>(samples.size()) + kNFft / 2) / kHopLength + 2);
  if (pool && pool->size() > 1)
    pool->parallel_for(busy, [&](int64_t a, int64_t b) { job.run(a, b); }, 256);
  else
    job.run(0, busy);
  job.run(busy, frames);
  return mel;
}

Tensor log_mel_spectrogram(std::span<const float> samples, int n_mels, int64_t pad_samples, ThreadPool* pool) {
  Tensor mel = log_mel_unclamped(samples, n_mels, pad_samples, pool);
  float* v = mel.data<float>();
  const int64_t count = mel.numel();
  const float floor = *std::max_element(v, v + count) - 8.0f;
  for (int64_t i = 0; i < count; ++i) v[i] = (std::max(v[i], floor) + 4.0f) / 4.0f;
  return mel;
}

Tensor mel_window(const Tensor& full_mel, int64_t frame_offset) {
  if (full_mel.rank() != 2 || full_mel.dtype() != DType::F32)
    throw Error(ErrorCode::InvalidArgument, "[mel] mel_window needs an f32 [n_mels, frames] tensor, got " +
                                                full_mel.describe());
  const int64_t n_mels = full_mel.dim(0), frames = full_mel.dim(1);
  if (frame_offset < 0 || frame_offset > frames)
    throw Error(ErrorCode::InvalidArgument, "[mel] window offset " + std::to_string(frame_offset) +
                                                " outside 0.." + std::to_string(frames));
  Tensor window = Tensor::zeros({n_mels, kWindowFrames});
  const int64_t take = std::min<int64_t>(kWindowFrames, frames - frame_offset);
  const float* src = full_mel.data<float>();
  float* dst = window.data<float>();
  for (int64_t m = 0; m < n_mels; ++m)
    std::copy_n(src + m * frames + frame_offset, take, dst + m * kWindowFrames);
  return window;
}

}  // namespace hark
