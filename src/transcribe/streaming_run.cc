#include "transcribe/streaming_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <future>
#include <string>

#include "audio/mel.h"
#include "hark/error.h"

namespace hark {

SeekStreamingRun::SeekStreamingRun(SeekLoopContext context, const TranscribeOptions& options, RunHooks hooks)
    : loop_(context, options), mel_(context.model->hparams().n_mels), hooks_(std::move(hooks)), options_(options) {
  // A batching engine's CPU offers no STFT (Backend::log_mel): no trip through its scheduler.
  // HARK_BATCH_MEL=cpu (measurements): a batching GPU engine's runs compute their STFT on
  // their own threads instead of as calls between the scheduler's steps.
  Backend& backend = context.model->backend();
  const char* batch_mel = std::getenv("HARK_BATCH_MEL");
  if (!context.access.exclusive)
    mel_.use_backend(&backend);
  else if (backend.device() != Device::Cpu && !(batch_mel && std::string(batch_mel) == "cpu"))
    mel_.use_backend(&backend, context.access.exclusive);
  // A window waits for its STFT context, and for enough audio after it that the
  // hallucination rule's "near the end of the audio" test cannot change later.
  const double threshold = options.hallucination_silence_threshold.value_or(0.0);
  lookahead_samples_ = WindowMel::kRightContext + static_cast<int64_t>(std::ceil(std::max(0.0, threshold) * 16000)) + 160;
}

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

void SeekStreamingRun::use_clip_maximum(std::span<const float> clip) {
  if (samples_.empty()) clip_samples_ = static_cast<int64_t>(clip.size());
  const auto t0 = std::chrono::steady_clock::now();
  mel_.use_clip_maximum(clip);
  mel_ms_ += elapsed_ms(t0);
}

Tensor SeekStreamingRun::timed_window(int64_t seek) {
  const auto t0 = std::chrono::steady_clock::now();
  Tensor mel = mel_.window(samples_, seek);
  mel_ms_ += elapsed_ms(t0);
  return mel;
}

void SeekStreamingRun::feed(std::span<const float> samples) {
  if (finished_) throw Error(ErrorCode::Conflict, "[transcribe] feed() after finish(); start a new run");
  samples_.insert(samples_.end(), samples.begin(), samples.end());
  process(false);
}

std::optional<std::pair<int64_t, int>> SeekStreamingRun::next_window_known(int size, bool final,
                                                                          int64_t content) const {
  const int64_t n = static_cast<int64_t>(samples_.size());
  if (final) {
    const std::optional<int64_t> next = loop_.seek_after(size, content);
    if (!next) return std::nullopt;
    return std::make_pair(*next, loop_.segment_size_at(*next, content));
  }
  const std::optional<int64_t> next = loop_.seek_after(size, kUnknownLength);
  if (!next) return std::nullopt;
  // This feed's loop gets to it (a whole window of audio and the look-ahead are there)...
  if (n >= (*next + kWindowFrames) * kHopLength + lookahead_samples_)
    return std::make_pair(*next, loop_.segment_size_at(*next, kUnknownLength));
  // ...or finish() does, when this feed was the whole clip: the audio ends where it ends now.
  if (clip_samples_ == n) {
    const int64_t last = mel_content_frames(n);
    if (loop_.seek_after(size, last)) return std::make_pair(*next, loop_.segment_size_at(*next, last));
  }
  return std::nullopt;
}

void SeekStreamingRun::process(bool final) {
  const int64_t n = static_cast<int64_t>(samples_.size());
  const int64_t content = final ? mel_content_frames(n) : kUnknownLength;
  while (std::optional<int64_t> seek = loop_.next_window(content)) {
    if (!final && n < (*seek + kWindowFrames) * kHopLength + lookahead_samples_) break;
    if (hooks_.cancel && hooks_.cancel->load()) throw Error(ErrorCode::Cancelled, "[transcribe] cancelled");
    if (loop_.needs_language()) {
      if (!final && n < kWindowSamples + lookahead_samples_) break;
      loop_.detect_language(timed_window(0));
    }
    const int size = loop_.segment_size(content);
    Tensor mel;
    if (const Tensor* known = loop_.ahead_mel(*seek, size)) {
      mel = *known;  // computed while the window before decoded
    } else {
      mel = timed_window(*seek);
      zero_tail(mel, size);
    }
    // Where the next window's start is known, its mel is computed and its encoder call
    // queued as soon as this window's encoder output is there, on a thread of its own: the
    // encoder then works on it while this window decodes, and the next window does not
    // wait for the encoder again (SeekLoop::seek_after; only with an encoder lane).
    struct Ahead {
      Tensor mel;
      std::unique_ptr<PendingEncode> pending;
      double mel_ms = 0;
    };
    std::future<Ahead> ahead;
    std::optional<std::pair<int64_t, int>> next = next_window_known(size, final, content);
    auto queue_next = [&] {
      ahead = std::async(std::launch::async, [this, at = next->first, next_size = next->second] {
        Ahead a;
        const auto t0 = std::chrono::steady_clock::now();
        a.mel = mel_.window(samples_, at);
        zero_tail(a.mel, next_size);
        a.mel_ms = elapsed_ms(t0);
        a.pending = loop_.queue_ahead(a.mel);
        return a;
      });
    };
    std::vector<Segment> made = next ? loop_.run_window(mel, size, content, queue_next)
                                     : loop_.run_window(mel, size, content);
    if (ahead.valid()) {
      try {
        Ahead a = ahead.get();
        mel_ms_ += a.mel_ms;
        loop_.expect({next->first, next->second, std::move(a.mel), std::move(a.pending)});
      } catch (const Error&) {
        // The next window's STFT or queueing failed (a cancel, the scheduler stopping): it
        // is computed again in its turn, which reports what is still wrong.
      }
    }
    if (hooks_.on_segment)
      for (const Segment& s : made) hooks_.on_segment(s);
    if (hooks_.on_progress) {
      const double total = final ? n / 16000.0 : expected_seconds_;
      hooks_.on_progress(std::min<double>(loop_.seek() * 0.01, n / 16000.0), total);
    }
  }
}

Transcript SeekStreamingRun::finish() {
  if (finished_) throw Error(ErrorCode::Conflict, "[transcribe] finish() called twice");
  if (samples_.empty()) throw Error(ErrorCode::AudioTooShort, "[transcribe] no audio was fed; send at least 0.1 s");
  if (loop_.needs_language()) loop_.detect_language(timed_window(0));
  process(true);
  finished_ = true;
  Transcript t;
  t.text = loop_.text();
  t.language = loop_.language();
  t.language_probs = loop_.language_probs();
  t.task = options_.task == Task::Translate ? "translate" : "transcribe";
  t.duration = samples_.size() / 16000.0;
  t.segments = loop_.segments();
  t.vocabulary = loop_.vocabulary();
  t.timings.mel_ms = mel_ms_;
  t.timings.encode_ms = loop_.encode_ms();
  t.timings.decode_ms = loop_.decode_ms();
  t.timings.decode_model_ms = loop_.decode_model_ms();
  t.timings.decode_reorder_ms = loop_.decode_reorder_ms();
  t.timings.decode_runs = loop_.decode_runs();
  t.timings.sampled_tokens = loop_.sampled_tokens();
  return t;
}

}  // namespace hark
