// The Inference a run's DecodingTask talks to: each call hands the group's tokens to the
// scheduler and blocks until the batched step (or the group's prefill) is done. begin()
// starts a new group (a second begin(), after language detection, gives the first group's
// rows back); the destructor gives the rows back at the next step.
#include "batch/batch_internal.h"
#include "decode/model_inference.h"

namespace hark {
namespace {

class BatchedInference : public Inference {
 public:
  BatchedInference(BatchScheduler::Impl& scheduler, std::shared_ptr<const AudioContext> audio,
                   const std::atomic<bool>* cancel)
      : s_(scheduler), audio_(std::move(audio)), cancel_(cancel) {
    if (!audio_) throw Error(ErrorCode::InvalidArgument, "[batch] an inference needs an audio window");
  }

  ~BatchedInference() override {
    std::lock_guard lock(s_.mutex);
    retire();
  }

  void begin(int rows) override {
    if (rows < 1) throw Error(ErrorCode::InvalidArgument, "[batch] a sequence group needs at least one row");
    std::lock_guard lock(s_.mutex);
    retire();
    group_ = std::make_shared<SequenceGroup>();
    group_->audio = audio_;
    group_->cancel = cancel_;
    group_->rows = rows;
    s_.groups.push_back(group_);
  }

  std::vector<float> step(std::span<const int32_t> tokens, int n_new) override { return logits(tokens, n_new, -1); }

  // On the fast path the prompt is one prefill returning both positions, as alone.
  std::vector<float> step_two_positions(std::span<const int32_t> tokens, int n_new, int position) override {
    if (!can_select()) return Inference::step_two_positions(tokens, n_new, position);
    if (n_new < 2 || position < 0 || position >= n_new - 1)
      throw Error(ErrorCode::Internal, "[batch] step_two_positions needs a position before the last");
    return logits(tokens, n_new, position);
  }

  bool can_select() const override { return s_.model.selects_on_device(); }

  std::vector<TokenChoice> step_select(std::span<const int32_t> tokens, const SelectionRules& rules,
                                       std::span<const SampledSummary> rows, int k) override {
    SequenceGroup& g = checked(tokens, 1);
    if (static_cast<int>(rows.size()) != g.rows)
      throw Error(ErrorCode::InvalidArgument, "[batch] step_select needs one summary per row");
    std::unique_lock lock(s_.mutex);
    g.call = SequenceGroup::Call::Step;
    g.tokens.assign(tokens.begin(), tokens.end());
    g.n_new = 1;
    g.select = true;
    g.rules = rules;
    g.summaries.assign(rows.begin(), rows.end());
    g.k = k;
    s_.call(g, lock);
    return std::move(g.choices);
  }

  // One row choosing next to the logits: the scheduler runs the whole greedy run itself,
  // handing each choice to on_choice on its thread (SequenceGroup::on_choice).
  int greedy_steps(int32_t token, const SelectionRules& rules, SampledSummary summary, int max_steps,
                   const std::function<bool(const TokenChoice&)>& on_choice) override {
    SequenceGroup& g = checked(std::span<const int32_t>(&token, 1), 1);
    if (g.rows != 1 || !can_select()) return Inference::greedy_steps(token, rules, summary, max_steps, on_choice);
    if (max_steps <= 0) return 0;
    std::unique_lock lock(s_.mutex);
    g.call = SequenceGroup::Call::Step;
    g.tokens.assign(1, token);
    g.n_new = 1;
    g.select = true;
    g.rules = rules;
    g.summaries.assign(1, summary);
    g.k = 1;
    g.on_choice = &on_choice;
    g.steps_left = max_steps;
    g.handed = 0;
    try {
      s_.call(g, lock);
    } catch (...) {
      g.on_choice = nullptr;
      throw;
    }
    g.on_choice = nullptr;
    return g.handed;
  }

  void reorder(std::span<const int> source) override {
    if (!group_) throw Error(ErrorCode::Internal, "[batch] reorder() before begin()");
    if (static_cast<int>(source.size()) != group_->rows)
      throw Error(ErrorCode::InvalidArgument, "[batch] reorder needs one source row per row");
    for (int s : source)
      if (s < 0 || s >= group_->rows) throw Error(ErrorCode::InvalidArgument, "[batch] reorder row out of range");
    std::lock_guard lock(s_.mutex);
    // Two reorders before the next step compose: row i continues what row source[i] held.
    std::vector<int>& pending = group_->pending_reorder;
    if (pending.empty()) {
      pending.assign(source.begin(), source.end());
    } else {
      std::vector<int> composed(source.size());
      for (size_t i = 0; i < source.size(); ++i) composed[i] = pending[source[i]];
      pending = std::move(composed);
    }
  }

 private:
  // Bad input fails this call here, before it could fail a step shared with other groups.
  SequenceGroup& checked(std::span<const int32_t> tokens, int n_new) {
    if (!group_) throw Error(ErrorCode::Internal, "[batch] step() before begin()");
    if (n_new < 1 || tokens.size() != static_cast<size_t>(group_->rows) * static_cast<size_t>(n_new))
      throw Error(ErrorCode::InvalidArgument, "[batch] expected " + std::to_string(group_->rows) + " x " +
                                                  std::to_string(n_new) + " tokens, got " + std::to_string(tokens.size()));
    const int vocab = s_.model.hparams().n_vocab;
    for (int32_t id : tokens)
      if (id < 0 || id >= vocab)
        throw Error(ErrorCode::InvalidArgument, "[embedding] token id " + std::to_string(id) +
                                                    " outside the vocabulary of " + std::to_string(vocab));
    return *group_;
  }

  // A step or prefill returning logits (at also_position too when ≥ 0, first).
  std::vector<float> logits(std::span<const int32_t> tokens, int n_new, int also_position) {
    SequenceGroup& g = checked(tokens, n_new);
    std::unique_lock lock(s_.mutex);
    g.call = n_new == 1 ? SequenceGroup::Call::Step : SequenceGroup::Call::Prefill;
    g.tokens.assign(tokens.begin(), tokens.end());
    g.n_new = n_new;
    g.also_position = also_position;
    g.prompt_fed = 0;
    g.select = false;
    s_.call(g, lock);
    return std::move(g.logits);
  }

  // Hands the current group to the scheduler to free (the mutex is held).
  void retire() {
    if (!group_) return;
    s_.releasing.push_back(std::move(group_));
    group_.reset();
    s_.work.notify_one();
  }

  BatchScheduler::Impl& s_;
  std::shared_ptr<const AudioContext> audio_;
  const std::atomic<bool>* cancel_;
  std::shared_ptr<SequenceGroup> group_;
};

class ExclusiveInference : public Inference {
 public:
  ExclusiveInference(BatchScheduler& scheduler, WhisperModel& model, std::shared_ptr<const AudioContext> audio,
                     const std::atomic<bool>* cancel)
      : s_(scheduler), inner_(std::make_unique<ModelInference>(model, std::move(audio))), cancel_(cancel) {}

  ~ExclusiveInference() override {
    try {
      s_.run_exclusive([&] { inner_.reset(); }, nullptr);  // its state goes back to the pool there
    } catch (...) {
      inner_.reset();  // the scheduler has stopped: nothing else uses the model
    }
  }

  void begin(int rows) override { on_scheduler([&] { inner_->begin(rows); }); }
  std::vector<float> step(std::span<const int32_t> tokens, int n_new) override {
    std::vector<float> out;
    on_scheduler([&] { out = inner_->step(tokens, n_new); });
    return out;
  }
  void reorder(std::span<const int> source) override { on_scheduler([&] { inner_->reorder(source); }); }
  bool can_select() const override { return inner_->can_select(); }
  std::vector<TokenChoice> step_select(std::span<const int32_t> tokens, const SelectionRules& rules,
                                       std::span<const SampledSummary> rows, int k) override {
    std::vector<TokenChoice> out;
    on_scheduler([&] { out = inner_->step_select(tokens, rules, rows, k); });
    return out;
  }
  // The whole run on the scheduler's thread (on_choice too, while this thread waits).
  int greedy_steps(int32_t token, const SelectionRules& rules, SampledSummary summary, int max_steps,
                   const std::function<bool(const TokenChoice&)>& on_choice) override {
    int handed = 0;
    on_scheduler([&] { handed = inner_->greedy_steps(token, rules, summary, max_steps, on_choice); });
    return handed;
  }
  std::vector<float> step_two_positions(std::span<const int32_t> tokens, int n_new, int position) override {
    std::vector<float> out;
    on_scheduler([&] { out = inner_->step_two_positions(tokens, n_new, position); });
    return out;
  }

 private:
  void on_scheduler(const std::function<void()>& fn) { s_.run_exclusive(fn, cancel_); }
  BatchScheduler& s_;
  std::unique_ptr<ModelInference> inner_;
  const std::atomic<bool>* cancel_;
};

}  // namespace

std::unique_ptr<Inference> exclusive_inference(BatchScheduler& scheduler, WhisperModel& model,
                                               std::shared_ptr<const AudioContext> audio,
                                               const std::atomic<bool>* cancel) {
  return std::make_unique<ExclusiveInference>(scheduler, model, std::move(audio), cancel);
}

// The calling thread's side of one call: queue the group for rows if it has none, wake
// the scheduler, wait for the result.
void BatchScheduler::Impl::call(SequenceGroup& g, std::unique_lock<std::mutex>& lock) {
  if (stopping) throw Error(ErrorCode::Unavailable, "[batch] the engine is shutting down; send the request again");
  if (g.dead) std::rethrow_exception(g.death);
  if (g.cancel && g.cancel->load()) throw Error(ErrorCode::Cancelled, "[batch] cancelled");
  if (g.first < 0 && !g.queued) {
    for (const auto& owned : groups)
      if (owned.get() == &g) admission.push_back(owned);
    g.ticket = next_ticket++;
    g.queued = true;
  }
  g.done = false;
  g.error = nullptr;
  g.between_runs = false;
  work.notify_one();
  g.wake.wait(lock, [&] { return g.done; });
  g.call = SequenceGroup::Call::None;
  if (g.error) std::rethrow_exception(g.error);
}

std::unique_ptr<Inference> BatchScheduler::inference(std::shared_ptr<const AudioContext> audio,
                                                     const std::atomic<bool>* cancel) {
  return std::make_unique<BatchedInference>(*impl_, std::move(audio), cancel);
}

}  // namespace hark
