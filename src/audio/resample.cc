// StreamResampler: libswresample's polyphase windowed-sinc (Kaiser) filter, mono float.
#include <algorithm>

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
}

#include "audio/audio_internal.h"

namespace hark {

struct StreamResampler::Impl {
  SwrContext* swr = nullptr;
  ~Impl() { swr_free(&swr); }
};

namespace {

// swr's defaults are 32 taps per phase and 2^10 phases. 64 taps halve the transition band
// (the passband stays flat to ~0.97 × 8 kHz and images below 8 kHz sit under about
// -90 dB); 2^12 phases keep the phase quantisation error below 16-bit noise.
constexpr int kFilterSize = 64;
constexpr int kPhaseShift = 12;
constexpr double kCutoff = 0.97;
// Input is fed in blocks so swr's internal buffers stay small for hour-long inputs.
constexpr size_t kBlock = 1 << 16;

SwrContext* make_swr(int input_rate) {
  AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
  SwrContext* swr = nullptr;
  int rc = swr_alloc_set_opts2(&swr, &mono, AV_SAMPLE_FMT_FLT, kSampleRate, &mono, AV_SAMPLE_FMT_FLT, input_rate, 0,
                               nullptr);
  if (rc >= 0) {
    av_opt_set_int(swr, "filter_size", kFilterSize, 0);
    av_opt_set_int(swr, "phase_shift", kPhaseShift, 0);
    av_opt_set_double(swr, "cutoff", kCutoff, 0);
    rc = swr_init(swr);
  }
  if (rc < 0) {
    swr_free(&swr);
    throw Error(ErrorCode::Internal, "[audio] cannot set up the resampler for " + std::to_string(input_rate) + " Hz");
  }
  return swr;
}

}  // namespace

StreamResampler::StreamResampler(int input_rate) : input_rate_(input_rate), impl_(std::make_unique<Impl>()) {
  if (input_rate < kMinInputRate || input_rate > kMaxInputRate)
    throw Error(ErrorCode::InvalidArgument, "[audio] sample rate " + std::to_string(input_rate) +
                                                " Hz is out of range (accepted: " + std::to_string(kMinInputRate) +
                                                " to " + std::to_string(kMaxInputRate) + " Hz)");
  if (input_rate != kSampleRate) impl_->swr = make_swr(input_rate);
}

StreamResampler::~StreamResampler() = default;

void StreamResampler::feed(const float* samples, size_t n, std::vector<float>& out) {
  if (!impl_->swr) {
    out.insert(out.end(), samples, samples + n);
    return;
  }
  for (size_t done = 0; done < n;) {
    int count = static_cast<int>(std::min(kBlock, n - done));
    int capacity = swr_get_out_samples(impl_->swr, count);
    size_t base = out.size();
    out.resize(base + static_cast<size_t>(std::max(capacity, 0)));
    auto* dst = reinterpret_cast<uint8_t*>(out.data() + base);
    const auto* src = reinterpret_cast<const uint8_t*>(samples + done);
    int got = swr_convert(impl_->swr, &dst, capacity, &src, count);
    if (got < 0) throw Error(ErrorCode::Internal, "[audio] resampler failed");
    out.resize(base + static_cast<size_t>(got));
    done += static_cast<size_t>(count);
  }
}

void StreamResampler::flush(std::vector<float>& out) {
  if (!impl_->swr) return;
  for (;;) {
    int capacity = std::max(swr_get_out_samples(impl_->swr, 0), 256);
    size_t base = out.size();
    out.resize(base + static_cast<size_t>(capacity));
    auto* dst = reinterpret_cast<uint8_t*>(out.data() + base);
    int got = swr_convert(impl_->swr, &dst, capacity, nullptr, 0);
    out.resize(base + static_cast<size_t>(std::max(got, 0)));
    if (got <= 0) break;
  }
}

}  // namespace hark
