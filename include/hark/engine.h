// The public entry point: an Engine owns a loaded checkpoint on one device and
// transcribes 16 kHz mono float audio. An Engine opened with max_batch > 1 runs many jobs
// at once from different threads and batches their model work; otherwise it runs one job
// at a time and the server puts a FIFO queue in front of it.
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

// What an engine that batches its runs together reports (zeros for one that does not).
struct BatchStats {
  int max_rows = 0;          // the most decoder rows stepped together (--max-batch)
  int row_capacity = 0;      // rows of the batch now (a power of two; free rows included)
  int rows_active = 0;       // rows held by sequences now
  int groups_waiting = 0;    // sequence groups waiting for rows
  int windows_waiting = 0;   // windows waiting for the encoder
  int windows_encoding = 0;  // windows in the encoder lane's call now
  int calls_waiting = 0;     // other model calls (STFTs on a GPU, word timings) waiting for a turn
  uint64_t steps = 0, rows_stepped = 0;  // decoder steps so far, and the rows they advanced
  // Rows those steps computed: the advanced ones and the free rows among them (a step
  // covers the rows up to the last active one; a recorded step, that span rounded up to 16).
  uint64_t rows_computed = 0;
  // Prompts prefilled, and the decoder passes that ran them (on a GPU, the waiting prompts
  // of the same length on neighbouring rows share one pass).
  uint64_t prefills = 0, prefill_calls = 0;
  // Of those prompts, the short ones fed through the steps a token a step (GPU fast path).
  uint64_t prompts_stepped = 0;
  uint64_t encoder_calls = 0, windows_encoded = 0;
  // Windows queued before their run needed them (the next window of a run whose seek is
  // known, encoded while the current one decodes), and of those, the ones the run did not
  // use after all (it ended, failed, or needed another window).
  uint64_t windows_ahead = 0, windows_ahead_unused = 0;
  // Tokens of greedy runs that the scheduler handed over and fed back itself (the GPU fast
  // path), without waking the run's thread between steps.
  uint64_t tokens_fed_back = 0;
  // Seconds the scheduler's thread spent in decoder steps, waiting for the groups' tokens
  // before a step, in prefills, and in encoder calls (on the encoder lane's thread when
  // there is one: those seconds overlap the steps).
  double step_seconds = 0, gather_seconds = 0, prefill_seconds = 0, encode_seconds = 0;
  bool encoder_lane = false;  // windows are encoded on a second stream beside the steps
};

class Engine {
 public:
  virtual ~Engine() = default;
  static std::unique_ptr<Engine> open(const EngineOptions& options);

  virtual Transcript transcribe(std::span<const float> samples, const TranscribeOptions& options,
                                const RunHooks& hooks = {}) = 0;
  virtual std::unique_ptr<StreamingRun> stream(const TranscribeOptions& options, const RunHooks& hooks = {}) = 0;
  virtual std::string model_name() const = 0;
  // How many transcribe() and stream() runs may proceed at once from different threads
  // (1: the engine runs one job at a time and its caller serialises them).
  virtual int max_concurrent_runs() const { return 1; }
  virtual BatchStats batch_stats() const { return {}; }
};

}  // namespace hark
