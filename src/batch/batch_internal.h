// Internal to src/batch: the scheduler's state, shared by its thread loop
// (batch_scheduler.cc), the row bookkeeping and steps (batch_rows.cc) and the Inference
// that runs hand it their tokens through (batch_inference.cc). One mutex guards it all;
// the model is only touched by the scheduler's thread, with the mutex released.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "batch/batch_scheduler.h"

namespace hark {

using BatchClock = std::chrono::steady_clock;

// Prompt tokens (rows × tokens) prefilled between two steps, and the most one merged
// prefill pass takes: a long prompt runs alone.
constexpr int kPrefillRowTokens = 256;
// The CPU backend's products give each row the same bits whatever the other rows up to
// this many (kRowExactMaxRows in core/cpu/gemv_half.h); merged prefills stay within it.
constexpr int kCpuExactRows = 32;
// On the fast path a prompt of at most this many tokens (a window's start without a text
// prompt: start of transcript, language, task, maybe no-timestamps) is fed through the
// batched steps, a token a step, instead of a prefill pass of its own (run_step;
// BatchOptions::prompt_step_tokens).
constexpr int kPromptStepTokens = 4;

// The rows of one DecodingTask (greedy: 1, best-of or beams: n) between its begin() and
// its end, and the one call its thread is waiting on.
struct SequenceGroup {
  std::shared_ptr<const AudioContext> audio;
  const std::atomic<bool>* cancel = nullptr;
  int rows = 0;          // asked for by begin()
  int first = -1;        // first row slot (also its window slot); −1: not admitted
  uint64_t ticket = 0;   // admission order
  bool queued = false;   // waiting for rows
  bool dead = false;     // cancelled, failed or the scheduler stopped: every call fails
  std::exception_ptr death;

  enum class Call { None, Step, Prefill };
  Call call = Call::None;
  bool done = false;
  std::vector<int32_t> tokens;
  int n_new = 0;
  int also_position = -1;  // a prefill's second position (Inference::step_two_positions)
  int prompt_fed = 0;      // a prompt fed through the steps: its tokens fed so far
  bool select = false;  // choose next to the logits (the GPU fast path)
  SelectionRules rules;
  std::vector<SampledSummary> summaries;
  int k = 0;
  // A greedy run (Inference::greedy_steps, one row, choosing next to the logits) that the
  // scheduler advances itself: after each step it hands the choice to *on_choice on its own
  // thread (the group's thread is asleep in the call, the mutex held) and feeds the token
  // back, so no step waits for the group's thread to wake and answer.
  const std::function<bool(const TokenChoice&)>* on_choice = nullptr;
  int steps_left = 0, handed = 0;
  // The group's greedy run has just ended (set by finish_call): its thread now works on the
  // window's result (segments, the next window's mel and encoder) and its next call is a
  // prefill, which runs between steps on its own. Steps do not wait for it; its next call
  // clears this.
  bool between_runs = false;
  std::vector<int> pending_reorder;  // beams: applied before the group's next call
  std::vector<float> logits;
  std::vector<TokenChoice> choices;
  std::exception_ptr error;
  std::condition_variable wake;
};

struct EncodeRequest {
  Tensor mel;
  int audio_ctx = 0;
  const std::atomic<bool>* cancel = nullptr;
  std::shared_ptr<const AudioContext> result;
  std::exception_ptr error;
  bool done = false;
  std::condition_variable wake;
};

struct ExclusiveRequest {
  std::function<void()> fn;
  const std::atomic<bool>* cancel = nullptr;
  std::exception_ptr error;
  bool done = false;
  std::condition_variable wake;
};

struct BatchScheduler::Impl {
  Impl(WhisperModel& model, BatchOptions options);

  WhisperModel& model;
  BatchOptions options;
  int encode_budget = 1;
  BatchClock::duration exclusive_budget{};  // options.exclusive_budget_ms, or HARK_EXCLUSIVE_BUDGET_MS
  bool one_prefill_per_call = false;       // HARK_BATCH_PREFILL=each (run_prefill)
  int prompt_step_tokens = 0;              // prompts this short go through the steps (0: none)

  mutable std::mutex mutex;
  std::condition_variable work;  // the scheduler's thread waits here
  bool stopping = false;
  std::deque<std::shared_ptr<EncodeRequest>> encodes;
  std::deque<std::shared_ptr<ExclusiveRequest>> exclusives;
  std::vector<std::shared_ptr<SequenceGroup>> groups;  // every group with a live Inference
  std::deque<std::shared_ptr<SequenceGroup>> admission;  // waiting for rows, in ticket order
  std::vector<std::shared_ptr<SequenceGroup>> releasing;  // Inference gone: rows to free
  uint64_t next_ticket = 1;
  BatchStats stats;

  // The slot state (scheduler thread only) and which group holds each row.
  std::unique_ptr<DecoderState> state;
  std::vector<SequenceGroup*> row_owner;
  int64_t state_frames = 0;
  int steps_since_resize = 0;
  double last_step_ms = 0;
  std::thread thread;

  // The encoder lane (batch_encoder_lane.cc): a model on a second backend and the thread
  // that encodes the queued windows on it; null when windows are encoded between steps.
  std::unique_ptr<WhisperModel> lane_model;
  std::thread lane_thread;
  std::condition_variable lane_work;  // the lane's thread waits here
  int lane_windows = 0;               // windows in the lane's current encoder call

  // batch_scheduler.cc
  // Queues a window for the encoder and wakes whoever encodes (the mutex held).
  std::shared_ptr<EncodeRequest> queue_encode(const Tensor& mel, int audio_ctx, const std::atomic<bool>* cancel);
  void loop();
  bool actionable() const;
  void fail_everything(std::unique_lock<std::mutex>& lock);
  void reap(std::unique_lock<std::mutex>& lock);
  // One encoder call over the oldest waiting windows, on `on` (the model or the lane's).
  bool run_encodes(std::unique_lock<std::mutex>& lock, WhisperModel& on);
  int encode_room() const;  // encoder calls that may start now (rows free for their windows)
  void drop_cancelled_requests();
  // batch_encoder_lane.cc
  void start_lane();
  void lane_loop();
  std::vector<std::shared_ptr<const AudioContext>> encode_on_lane(std::span<const Tensor> mels, int audio_ctx);
  bool run_exclusive(std::unique_lock<std::mutex>& lock);  // the oldest waiting call, if any
  // The calls waiting now, until exclusive_budget has passed (at least one).
  void run_exclusives(std::unique_lock<std::mutex>& lock);
  // batch_rows.cc
  int capacity() const { return state ? state->batch() : 0; }
  int rows_in_use() const;
  int queued_rows() const;  // rows asked for by groups waiting for admission
  int rows_limit(int group_rows) const;
  bool admit(std::unique_lock<std::mutex>& lock);
  int find_free_run(int rows) const;
  void release_rows(SequenceGroup& g);
  void maybe_shrink();
  int run_prefill(std::unique_lock<std::mutex>& lock);  // row-tokens prefilled (0: none waiting)
  // A waiting prompt that the steps feed, a token a step (prompt_step_tokens).
  bool prompt_by_steps(const SequenceGroup& g) const;
  bool run_step(std::unique_lock<std::mutex>& lock);
  void apply_reorder(SequenceGroup& g);
  void finish_call(SequenceGroup& g, std::exception_ptr error = nullptr);
  // After a step: a greedy run's choice handed over and its next token fed back, or the
  // call finished.
  void step_done(SequenceGroup& g);
  void kill(SequenceGroup& g, std::exception_ptr why);
  // batch_inference.cc: the calling thread's side of a group's call.
  void call(SequenceGroup& g, std::unique_lock<std::mutex>& lock);
};

}  // namespace hark
