// Dictation into an Engine in this process (--model): a StreamingRun per take, and
// previews from a one-shot pass over the audio after the last final segment.
#include <atomic>
#include <cmath>

#include "dictate/transcriber.h"

namespace hark::dictate {
namespace {

constexpr size_t kMinPreviewSamples = 16000;  // as the server: shorter previews are mostly invented
constexpr size_t kMaxPreviewSamples = 30 * 16000;  // a preview is one Whisper window

class EngineTranscriber : public Transcriber {
 public:
  EngineTranscriber(std::unique_ptr<Engine> engine, TranscribeOptions options)
      : engine_(std::move(engine)), options_(std::move(options)) {}

  std::string describe() const override { return "in-process " + engine_->model_name(); }
  void prepare() override {}
  void begin() override {
    RunHooks hooks;
    hooks.cancel = &cancel_;
    run_ = engine_->stream(options_, hooks);
    pending_.clear();
    pending_start_ = fed_ = 0;
  }
  Heard feed(std::span<const float> samples, bool want_partial) override {
    run_->feed(samples);
    fed_ += samples.size();
    pending_.insert(pending_.end(), samples.begin(), samples.end());
    size_t keep_from = pending_start_;
    if (!run_->segments().empty())
      keep_from = static_cast<size_t>(std::llround(run_->segments().back().end * 16000));
    if (fed_ > keep_from + kMaxPreviewSamples) keep_from = fed_ - kMaxPreviewSamples;
    if (keep_from > pending_start_) {
      const size_t drop = std::min(keep_from - pending_start_, pending_.size());
      pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(drop));
      pending_start_ += drop;
    }
    Heard heard;
    for (const auto& s : run_->segments()) heard.final_text += s.text;
    if (want_partial && pending_.size() >= kMinPreviewSamples)
      heard.partial = engine_->transcribe(pending_, preview_options(options_), cancel_hooks()).text;
    return heard;
  }
  std::string finish() override {
    Transcript t = run_->finish();
    run_.reset();
    return t.text;
  }
  void discard() noexcept override { run_.reset(); }
  void cancel() noexcept override { cancel_ = true; }

 private:
  RunHooks cancel_hooks() {
    RunHooks hooks;
    hooks.cancel = &cancel_;
    return hooks;
  }

  std::unique_ptr<Engine> engine_;
  TranscribeOptions options_;
  std::unique_ptr<StreamingRun> run_;
  std::vector<float> pending_;
  size_t pending_start_ = 0, fed_ = 0;
  std::atomic<bool> cancel_{false};
};

}  // namespace

TranscribeOptions preview_options(TranscribeOptions o) {
  o.temperatures = {0.0f};
  o.beam_size = 0;
  o.word_timestamps = false;
  o.hallucination_silence_threshold.reset();
  o.clip_timestamps.clear();
  return o;
}

std::unique_ptr<Transcriber> make_engine_transcriber(std::unique_ptr<Engine> engine, const TranscribeOptions& options) {
  return std::make_unique<EngineTranscriber>(std::move(engine), options);
}

}  // namespace hark::dictate
