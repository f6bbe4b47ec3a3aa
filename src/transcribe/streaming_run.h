// The StreamingRun behind Engine::stream() and Engine::transcribe(): keeps the samples,
// and runs the seek loop on every window whose audio (plus a little look-ahead) is there.
#pragma once

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "hark/engine.h"
#include "transcribe/seek_loop.h"
#include "transcribe/window_mel.h"

namespace hark {

class SeekStreamingRun : public StreamingRun {
 public:
  SeekStreamingRun(SeekLoopContext context, const TranscribeOptions& options, RunHooks hooks);

  void feed(std::span<const float> samples) override;
  Transcript finish() override;
  const std::vector<Segment>& segments() const override { return loop_.segments(); }
  double fed_seconds() const override { return samples_.size() / 16000.0; }
  // The audio length when the caller knows it up front (for progress reports).
  void set_expected_seconds(double seconds) { expected_seconds_ = seconds; }
  // When the whole clip is known before the first feed (Engine::transcribe), clamp every
  // window's log-mel at the clip's maximum − 8 exactly as the reference does; a live
  // stream clamps at the maximum seen so far.
  void use_clip_maximum(std::span<const float> clip);

 private:
  void process(bool final);
  // The window after one of `size` frames at the current seek, when the loop knows where it
  // starts (SeekLoop::seek_after) and its audio and length are known now: its start and
  // length, else nullopt.
  std::optional<std::pair<int64_t, int>> next_window_known(int size, bool final, int64_t content) const;

  SeekLoop loop_;
  WindowMel mel_;
  RunHooks hooks_;
  TranscribeOptions options_;
  std::vector<float> samples_;
  int64_t lookahead_samples_ = 0;
  bool finished_ = false;
  double expected_seconds_ = 0;
  double mel_ms_ = 0;  // STFTs so far (Transcript::timings)
  int64_t clip_samples_ = -1;  // the whole clip's length, when use_clip_maximum() saw it
  Tensor timed_window(int64_t seek);
};

}  // namespace hark
