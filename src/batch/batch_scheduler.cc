// The scheduler's thread: one loop that takes turns between encoder batches, the other
// model calls, admissions, one prefill and one batched decoder step, and the calls the
// runs' threads make to queue that work.
#include "batch/batch_internal.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

namespace hark {
namespace {

// How often a waiting scheduler looks at the runs' cancel flags (nobody signals them).
constexpr auto kCancelPoll = std::chrono::milliseconds(20);

std::exception_ptr unavailable() {
  return std::make_exception_ptr(
      Error(ErrorCode::Unavailable, "[batch] the engine is shutting down; send the request again"));
}

std::exception_ptr cancelled() {
  return std::make_exception_ptr(Error(ErrorCode::Cancelled, "[batch] cancelled"));
}

bool is_set(const std::atomic<bool>* flag) { return flag && flag->load(); }

// Waits for a queued request to be done, then rethrows what it failed with.
template <class Request>
void wait_done(Request& r, std::unique_lock<std::mutex>& lock) {
  r.wake.wait(lock, [&] { return r.done; });
  if (r.error) std::rethrow_exception(r.error);
}

}  // namespace

BatchScheduler::Impl::Impl(WhisperModel& m, BatchOptions o) : model(m), options(o) {
  if (options.max_rows < 1) options.max_rows = 1;
  encode_budget = options.max_encode_windows > 0 ? options.max_encode_windows
                  : model.backend().device() == Device::Cpu ? 1
                                                            : 16;
  stats.max_rows = options.max_rows;
  double budget_ms = std::max(0.0, options.exclusive_budget_ms);
  if (const char* env = std::getenv("HARK_EXCLUSIVE_BUDGET_MS")) budget_ms = std::max(0.0, std::atof(env));
  exclusive_budget =
      std::chrono::duration_cast<BatchClock::duration>(std::chrono::duration<double, std::milli>(budget_ms));
  const char* prefill = std::getenv("HARK_BATCH_PREFILL");
  one_prefill_per_call = prefill && std::string(prefill) == "each";
  // Auto: only on the fast path, where a pass's rounding already depends on its row count.
  // The fp32 paths keep the prompt in one pass, as alone (bit for bit on the CPU).
  const bool fast = model.backend().device() != Device::Cpu && model.backend().act_dtype() != DType::F32;
  prompt_step_tokens = options.prompt_step_tokens >= 0 ? options.prompt_step_tokens : fast ? kPromptStepTokens : 0;
  if (prefill && std::string(prefill) == "passes") prompt_step_tokens = 0;
}

BatchScheduler::BatchScheduler(WhisperModel& model, BatchOptions options)
    : impl_(std::make_unique<Impl>(model, options)) {
  impl_->start_lane();
  impl_->thread = std::thread([impl = impl_.get()] { impl->loop(); });
}

BatchScheduler::~BatchScheduler() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->stopping = true;
  }
  impl_->work.notify_all();
  impl_->lane_work.notify_all();
  if (impl_->thread.joinable()) impl_->thread.join();
  if (impl_->lane_thread.joinable()) impl_->lane_thread.join();
}

const BatchOptions& BatchScheduler::options() const { return impl_->options; }

BatchStats BatchScheduler::stats() const {
  std::lock_guard lock(impl_->mutex);
  BatchStats s = impl_->stats;
  s.groups_waiting = static_cast<int>(impl_->admission.size());
  s.windows_waiting = static_cast<int>(impl_->encodes.size());
  s.windows_encoding = impl_->lane_windows;
  s.calls_waiting = static_cast<int>(impl_->exclusives.size());
  s.encoder_lane = impl_->lane_model != nullptr;
  return s;
}

std::shared_ptr<EncodeRequest> BatchScheduler::Impl::queue_encode(const Tensor& mel, int audio_ctx,
                                                                  const std::atomic<bool>* cancel) {
  if (stopping) std::rethrow_exception(unavailable());
  auto r = std::make_shared<EncodeRequest>();
  r->mel = mel;
  r->audio_ctx = audio_ctx;
  r->cancel = cancel;
  encodes.push_back(r);
  if (lane_model)
    lane_work.notify_one();
  else
    work.notify_one();
  return r;
}

std::shared_ptr<const AudioContext> BatchScheduler::encode(const Tensor& mel, int audio_ctx,
                                                           const std::atomic<bool>* cancel) {
  if (is_set(cancel)) std::rethrow_exception(cancelled());
  std::unique_lock lock(impl_->mutex);
  auto r = impl_->queue_encode(mel, audio_ctx, cancel);
  wait_done(*r, lock);
  return r->result;
}

namespace {

class QueuedEncode final : public PendingEncode {
 public:
  QueuedEncode(BatchScheduler::Impl& impl, std::shared_ptr<EncodeRequest> request)
      : impl_(impl), request_(std::move(request)) {}
  ~QueuedEncode() override {
    if (collected_) return;
    std::lock_guard lock(impl_.mutex);
    ++impl_.stats.windows_ahead_unused;
  }
  std::shared_ptr<const AudioContext> collect() override {
    if (collected_) throw Error(ErrorCode::Internal, "[batch] a window encoded ahead was collected twice");
    collected_ = true;
    std::unique_lock lock(impl_.mutex);
    wait_done(*request_, lock);
    return std::exchange(request_->result, nullptr);
  }

 private:
  BatchScheduler::Impl& impl_;
  std::shared_ptr<EncodeRequest> request_;
  bool collected_ = false;
};

}  // namespace

std::unique_ptr<PendingEncode> BatchScheduler::encode_ahead(const Tensor& mel, int audio_ctx,
                                                            const std::atomic<bool>* cancel) {
  if (is_set(cancel)) std::rethrow_exception(cancelled());
  std::lock_guard lock(impl_->mutex);
  auto r = impl_->queue_encode(mel, audio_ctx, cancel);
  ++impl_->stats.windows_ahead;
  return std::make_unique<QueuedEncode>(*impl_, std::move(r));
}

bool BatchScheduler::has_encoder_lane() const { return impl_->lane_model != nullptr; }

void BatchScheduler::run_exclusive(const std::function<void()>& fn, const std::atomic<bool>* cancel) {
  if (is_set(cancel)) std::rethrow_exception(cancelled());
  auto r = std::make_shared<ExclusiveRequest>();
  r->fn = fn;
  r->cancel = cancel;
  std::unique_lock lock(impl_->mutex);
  if (impl_->stopping) std::rethrow_exception(unavailable());
  impl_->exclusives.push_back(r);
  impl_->work.notify_one();
  wait_done(*r, lock);
}

void BatchScheduler::Impl::loop() {
  std::unique_lock lock(mutex);
  while (true) {
    const bool idle =
        groups.empty() && (lane_model || encodes.empty()) && exclusives.empty() && releasing.empty();
    if (idle)
      work.wait(lock, [&] { return stopping || actionable(); });
    else
      work.wait_for(lock, kCancelPoll, [&] { return stopping || actionable(); });
    if (stopping) return fail_everything(lock);
    reap(lock);
    if (!lane_model)
      for (int calls = encode_room(); calls > 0 && !encodes.empty() && !stopping; --calls) run_encodes(lock, model);
    run_exclusives(lock);
    admit(lock);
    // Prompts of newly admitted groups, up to a budget of tokens between two steps.
    for (int tokens = 0; tokens < kPrefillRowTokens && !stopping;) {
      const int done = run_prefill(lock);
      if (done == 0) break;
      tokens += done;
    }
    run_step(lock);
    if (lane_model) lane_work.notify_one();  // rows may have come free for waiting windows
  }
}

// Windows are encoded while the batch has rows for the sequences they will start (so steps
// carry as many rows as they can); when it is full they wait for rows to free up.
int BatchScheduler::Impl::encode_room() const {
  return std::max(options.max_rows - rows_in_use() - queued_rows() - lane_windows, 0);
}

bool BatchScheduler::Impl::actionable() const {
  if (!exclusives.empty() || !releasing.empty()) return true;
  if (!lane_model && !encodes.empty() && encode_room() > 0) return true;
  for (const auto& g : groups)
    if (!g->dead && g->call != SequenceGroup::Call::None && !g->done && g->first >= 0) return true;
  if (!admission.empty()) {
    const SequenceGroup& head = *admission.front();
    if (head.dead) return true;
    const int need = head.rows;
    if (rows_in_use() + need <= rows_limit(need) &&
        (find_free_run(need) >= 0 || capacity() < rows_limit(need) || !state))
      return true;
  }
  return false;
}

void BatchScheduler::Impl::fail_everything(std::unique_lock<std::mutex>&) {
  for (auto& r : encodes) {
    r->error = unavailable();
    r->done = true;
    r->wake.notify_all();
  }
  encodes.clear();
  for (auto& r : exclusives) {
    r->error = unavailable();
    r->done = true;
    r->wake.notify_all();
  }
  exclusives.clear();
  for (auto& g : groups) kill(*g, unavailable());
  admission.clear();
  state.reset();
  row_owner.clear();
}

// Gives back the rows of groups whose Inference is gone and retires cancelled groups and
// requests: their threads get Cancelled and their rows are free for the next admission.
void BatchScheduler::Impl::reap(std::unique_lock<std::mutex>&) {
  for (auto& g : releasing) {
    release_rows(*g);
    std::erase(groups, g);
    std::erase(admission, g);
  }
  releasing.clear();
  for (auto& g : groups)
    if (!g->dead && is_set(g->cancel)) kill(*g, cancelled());
  drop_cancelled_requests();
  maybe_shrink();
}

void BatchScheduler::Impl::drop_cancelled_requests() {
  auto drop_cancelled = [](auto& queue) {
    std::erase_if(queue, [](const auto& r) {
      if (!is_set(r->cancel)) return false;
      r->error = cancelled();
      r->done = true;
      r->wake.notify_all();
      return true;
    });
  };
  drop_cancelled(encodes);
  drop_cancelled(exclusives);
}

// One encoder call over the oldest waiting windows of one audio_ctx, up to the budget.
bool BatchScheduler::Impl::run_encodes(std::unique_lock<std::mutex>& lock, WhisperModel& on) {
  if (encodes.empty()) return false;
  std::vector<std::shared_ptr<EncodeRequest>> batch;
  const int audio_ctx = encodes.front()->audio_ctx;
  for (auto it = encodes.begin(); it != encodes.end() && static_cast<int>(batch.size()) < encode_budget;) {
    if ((*it)->audio_ctx == audio_ctx) {
      batch.push_back(*it);
      it = encodes.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<Tensor> mels;
  for (const auto& r : batch) mels.push_back(r->mel);
  std::vector<std::shared_ptr<const AudioContext>> out;
  std::exception_ptr error;
  const auto start = BatchClock::now();
  const bool lane = &on == lane_model.get();
  if (lane) lane_windows = static_cast<int>(batch.size());
  lock.unlock();
  try {
    if (lane) {
      out = encode_on_lane(mels, audio_ctx);
    } else {
      out = on.prepare_audio_batch(mels, audio_ctx);
      on.backend().synchronize();
    }
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  if (lane) lane_windows = 0;
  stats.encode_seconds += std::chrono::duration<double>(BatchClock::now() - start).count();
  ++stats.encoder_calls;
  stats.windows_encoded += batch.size();
  for (size_t i = 0; i < batch.size(); ++i) {
    if (error)
      batch[i]->error = error;
    else
      batch[i]->result = out[i];
    batch[i]->done = true;
    batch[i]->wake.notify_all();
  }
  return true;
}

void BatchScheduler::Impl::run_exclusives(std::unique_lock<std::mutex>& lock) {
  const auto start = BatchClock::now();
  size_t left = exclusives.size();  // those waiting now: later ones wait for the next turn
  while (left-- > 0 && !stopping && run_exclusive(lock))
    if (BatchClock::now() - start >= exclusive_budget) break;
}

bool BatchScheduler::Impl::run_exclusive(std::unique_lock<std::mutex>& lock) {
  if (exclusives.empty()) return false;
  auto r = exclusives.front();
  exclusives.pop_front();
  lock.unlock();
  try {
    r->fn();
  } catch (...) {
    r->error = std::current_exception();
  }
  lock.lock();
  r->done = true;
  r->wake.notify_all();
  return true;
}

void BatchScheduler::Impl::finish_call(SequenceGroup& g, std::exception_ptr error) {
  g.between_runs = g.on_choice != nullptr;  // a greedy run's end: the thread has other work now
  g.error = error;
  g.done = true;
  g.wake.notify_all();
}

void BatchScheduler::Impl::kill(SequenceGroup& g, std::exception_ptr why) {
  if (g.dead) return;
  g.dead = true;
  g.death = why;
  if (g.call != SequenceGroup::Call::None && !g.done) finish_call(g, why);
  release_rows(g);
  g.queued = false;
}

}  // namespace hark
