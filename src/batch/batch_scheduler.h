// Many transcriptions, one model: the scheduler that lets every run of an engine use the
// model at once. Each run keeps its own seek loop and decoding logic on its own thread;
// what it asks of the model goes through here, where one thread owns the model and
//   - encodes the windows that runs are waiting for, several per encoder call (a window
//     budget),
//   - decodes the single-token steps of every run's sequences together in one slot state
//     (WhisperModel::new_slot_state): greedy rows, sampled rows and beams of different
//     requests, each keeping its own filters, temperature, prompt, language and task,
//     since those live in the run's DecodingTask; a sequence group is admitted into free
//     rows when it starts and gives them back when it ends, at any step (continuous
//     batching); prompts are prefilled on the group's own rows between two steps,
//   - runs the few other model calls (word-timing passes) in between.
// A step waits a few milliseconds for the tokens of every running group (a rendezvous);
// a group that is late sits that step out. Groups are admitted in the order they asked,
// so a run waits for rows at most as long as the running groups take to finish their
// current window (each window is a new request for rows: a long run does not hold its
// rows from one window to the next).
//
// On a GPU the windows are encoded on a second stream by a thread of their own
// (batch_encoder_lane.cc), so encoder passes overlap the steps instead of pausing them.
//
// On the CPU (fp32) every sequence gets bit for bit the numbers it would get decoded
// alone: windows are encoded one per call there, the products of a step are
// row-independent up to 32 rows, and a group's rows are contiguous and read their own
// window, so its cross-attention is the same call as alone.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "decode/decoding_task.h"
#include "hark/engine.h"
#include "model/whisper_model.h"

namespace hark {

// Where windows are encoded: on the scheduler's thread between two steps, or on a lane
// (Backend::make_lane: a second stream) by a thread of its own while the steps go on.
// Auto: a lane on a GPU, where the compute-bound encoder and the memory-bound steps
// overlap; none on the CPU, where both would share the same cores. HARK_ENCODER_LANE=on|off
// overrides Auto (measurements).
enum class EncoderLane { Auto, Off, On };

struct BatchOptions {
  int max_rows = 16;            // decoder rows stepped together (a group larger than this runs alone)
  int max_encode_windows = 0;   // windows per encoder call; 0: 1 on the CPU (exact), 16 on a GPU
  double gather_ms = 4;         // how long a step waits for the other groups' next tokens
  EncoderLane encoder_lane = EncoderLane::Auto;
  // The other model calls (a run's STFT on a GPU, word-timing passes) run between two
  // steps: every one waiting when a turn begins, until this much time has passed (at least
  // one a turn). One a turn held a batching GPU engine to one window's STFT per step: ~145
  // windows a second with 256 files in flight on an H100, most runs queued for their STFT
  // (2026-12-06, docs/benchmarks.md). HARK_EXCLUSIVE_BUDGET_MS overrides it (measurements;
  // 0: one a turn).
  double exclusive_budget_ms = 4;
  // A prompt of at most this many tokens (a window's start without a text prompt: start
  // of transcript, language, task, maybe no-timestamps) is fed through the batched steps,
  // a token a step, instead of a prefill pass of its own. -1: kPromptStepTokens on a GPU
  // fast path (fp16/bf16/fp8), 0 elsewhere: the fp32 paths keep a prompt in one pass, as
  // alone. HARK_BATCH_PREFILL=passes sets 0 (measurements).
  int prompt_step_tokens = -1;
};

// A window queued for the encoder before its run needs it (BatchScheduler::encode_ahead).
class PendingEncode {
 public:
  virtual ~PendingEncode() = default;
  // Waits for the encoder's output; rethrows what the encoding failed with (Cancelled when
  // the run's cancel flag was set). Once only.
  virtual std::shared_ptr<const AudioContext> collect() = 0;
};

class BatchScheduler {
 public:
  BatchScheduler(WhisperModel& model, BatchOptions options);
  ~BatchScheduler();
  BatchScheduler(const BatchScheduler&) = delete;
  BatchScheduler& operator=(const BatchScheduler&) = delete;

  // Each call blocks its (run's) thread until the scheduler has done the work. `cancel`
  // (may be null) is polled: once set, the call fails with ErrorCode::Cancelled and the
  // run's rows are given back at the next step.
  std::shared_ptr<const AudioContext> encode(const Tensor& mel, int audio_ctx, const std::atomic<bool>* cancel);
  // Queues `mel` for the encoder as encode() does, without waiting: the run collects the
  // result when it gets to that window, and meanwhile decodes the one before. One dropped
  // uncollected counts in BatchStats::windows_ahead_unused.
  std::unique_ptr<PendingEncode> encode_ahead(const Tensor& mel, int audio_ctx, const std::atomic<bool>* cancel);
  // Whether windows are encoded on a lane of their own beside the steps (a GPU): only then
  // does encoding a window ahead overlap anything.
  bool has_encoder_lane() const;
  // Runs `fn` on the scheduler's thread between two steps (the model is free then).
  void run_exclusive(const std::function<void()>& fn, const std::atomic<bool>* cancel);
  // An Inference for DecodingTask whose rows live in the shared batch.
  std::unique_ptr<Inference> inference(std::shared_ptr<const AudioContext> audio, const std::atomic<bool>* cancel);

  BatchStats stats() const;
  const BatchOptions& options() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// A ModelInference whose every call (and its end) runs on the scheduler's thread between
// two steps: for runs that cannot share the batch (another model, other window lengths).
std::unique_ptr<Inference> exclusive_inference(BatchScheduler& scheduler, WhisperModel& model,
                                               std::shared_ptr<const AudioContext> audio,
                                               const std::atomic<bool>* cancel);

}  // namespace hark
