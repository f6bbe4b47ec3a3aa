// The public entry point: an Engine owns a loaded checkpoint on one device and
// transcribes 16 kHz mono float audio. One Engine runs one job at a time; the server
// puts a FIFO queue in front of it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>

#include "hark/error.h"
#include "hark/options.h"
#include "hark/result.h"

namespace hark {

// Progress of a long transcription: seconds of audio done out of total.
using ProgressFn = std::function<void(double done_sec, double total_sec)>;
// Called with each segment as soon as it is final (for SSE and dictation).
using SegmentFn = std::function<void(const Segment&)>;

struct RunHooks {
  ProgressFn on_progress;
  SegmentFn on_segment;
  const std::atomic<bool>* cancel = nullptr;  // set to true to stop with ErrorCode::Cancelled
};

// A resumable seek loop: feed() transcribes every 30 s window that has complete audio
// past the seek point; finish() drains the rest. A batch run is one feed() + finish().
class StreamingRun {
 public:
  virtual ~StreamingRun() = default;
  virtual void feed(std::span<const float> samples) = 0;
  virtual Transcript finish() = 0;
  virtual const std::vector<Segment>& segments() const = 0;  // final so far
  virtual double fed_seconds() const = 0;
};

class Engine {
 public:
  virtual ~Engine() = default;
  static std::unique_ptr<Engine> open(const EngineOptions& options);

  virtual Transcript transcribe(std::span<const float> samples, const TranscribeOptions& options,
                                const RunHooks& hooks = {}) = 0;
  virtual std::unique_ptr<StreamingRun> stream(const TranscribeOptions& options, const RunHooks& hooks = {}) = 0;
  virtual std::string model_name() const = 0;
};

}  // namespace hark
