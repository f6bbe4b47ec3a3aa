// Rows of the shared slot state: admission in ticket order into contiguous free rows
// (growing the state by powers of two up to the row budget, shrinking it when the load
// drops), prefills on a group's own rows, and the batched single-token step.
#include <algorithm>
#include <bit>
#include <deque>

#include "batch/batch_internal.h"

namespace hark {
namespace {

// A state this many steps old may shrink: resizes copy every cache, so they are rare.
constexpr int kStepsBeforeShrink = 64;

int pow2_at_least(int n) { return static_cast<int>(std::bit_ceil(static_cast<unsigned>(std::max(n, 1)))); }

bool same_rules(const SelectionRules& a, const SelectionRules& b) {
  return a.suppress_blank == b.suppress_blank && a.blank == b.blank && a.suppress == b.suppress &&
         a.timestamps == b.timestamps && a.timestamp_begin == b.timestamp_begin &&
         a.no_timestamps == b.no_timestamps && a.eot == b.eot && a.max_initial_timestamp == b.max_initial_timestamp;
}

bool pending(const SequenceGroup& g, SequenceGroup::Call call) { return !g.dead && g.call == call && !g.done; }

}  // namespace

int BatchScheduler::Impl::rows_in_use() const {
  return static_cast<int>(std::count_if(row_owner.begin(), row_owner.end(), [](auto* o) { return o != nullptr; }));
}

int BatchScheduler::Impl::queued_rows() const {
  int rows = 0;
  for (const auto& g : admission)
    if (!g->dead) rows += g->rows;
  return rows;
}

// The row budget while a group of `group_rows` waits: --max-batch, or the group alone when
// it is larger than that.
int BatchScheduler::Impl::rows_limit(int group_rows) const { return std::max(options.max_rows, group_rows); }

int BatchScheduler::Impl::find_free_run(int rows) const {
  int run = 0;
  for (int r = 0; r < static_cast<int>(row_owner.size()); ++r) {
    run = row_owner[r] ? 0 : run + 1;
    if (run == rows) return r - rows + 1;
  }
  return -1;
}

void BatchScheduler::Impl::release_rows(SequenceGroup& g) {
  if (g.first < 0) return;
  if (state) model.free_rows(*state, g.first, g.rows);
  for (int r = g.first; r < g.first + g.rows && r < static_cast<int>(row_owner.size()); ++r) row_owner[r] = nullptr;
  g.first = -1;
  stats.rows_active = rows_in_use();
}

// Admits waiting groups in ticket order while rows are free: the head waits rather than
// letting later groups pass it, so a large group is not starved by a stream of small ones.
bool BatchScheduler::Impl::admit(std::unique_lock<std::mutex>& lock) {
  bool any = false;
  while (!admission.empty()) {
    std::shared_ptr<SequenceGroup> g = admission.front();
    if (g->dead) {
      admission.pop_front();
      continue;
    }
    const int need = g->rows, limit = rows_limit(need);
    if (rows_in_use() + need > limit) break;
    try {
      const int64_t frames = g->audio->frames();
      if (state && frames != state_frames)
        throw Error(ErrorCode::InvalidArgument, "[batch] a window of " + std::to_string(frames) +
                                                    " frames cannot join a batch of windows of " +
                                                    std::to_string(state_frames) + " (audio_ctx runs alone)");
      if (!state) {
        state_frames = frames;
        state = model.new_slot_state(pow2_at_least(need), pow2_at_least(need), frames);
        row_owner.assign(state->batch(), nullptr);
        steps_since_resize = 0;
      }
      int first = find_free_run(need);
      while (first < 0 && capacity() < pow2_at_least(limit)) {
        const int grown = std::min(pow2_at_least(limit), capacity() * 2);
        state = model.resize_slot_state(*state, grown, grown);
        row_owner.resize(grown, nullptr);
        steps_since_resize = 0;
        first = find_free_run(need);
      }
      if (first < 0) break;  // fragmented: wait for rows to come back
      admission.pop_front();
      g->queued = false;
      // The window goes into the window slot that has the group's first row's index, so
      // windows and rows shrink together.
      lock.unlock();
      try {
        model.load_window(*state, first, *g->audio);
        model.start_rows(*state, first, need, first);
      } catch (...) {
        lock.lock();
        throw;
      }
      lock.lock();
      g->first = first;
      for (int r = first; r < first + need; ++r) row_owner[r] = g.get();
      stats.rows_active = rows_in_use();
      stats.row_capacity = capacity();
      any = true;
    } catch (...) {
      admission.pop_front();
      kill(*g, std::current_exception());
    }
  }
  return any;
}

void BatchScheduler::Impl::maybe_shrink() {
  if (!state) return;
  if (rows_in_use() == 0 && admission.empty()) {  // idle: give the buffers back to the pool
    state.reset();
    row_owner.clear();
    stats.row_capacity = 0;
    return;
  }
  if (!admission.empty() || steps_since_resize < kStepsBeforeShrink || capacity() <= 1) return;
  int highest = -1;
  for (int r = 0; r < capacity(); ++r)
    if (row_owner[r]) highest = r;
  const int half = capacity() / 2;
  if (highest >= half || rows_in_use() * 2 > half) return;
  state = model.resize_slot_state(*state, half, half);
  row_owner.resize(half);
  steps_since_resize = 0;
  stats.row_capacity = capacity();
}

void BatchScheduler::Impl::apply_reorder(SequenceGroup& g) {
  if (g.pending_reorder.empty()) return;
  std::vector<int> source = std::move(g.pending_reorder);
  g.pending_reorder.clear();
  model.reorder_rows(*state, g.first, source);
}

// The waiting prompts, oldest first, n tokens each on the group's own rows, between two
// steps of the batch, up to kPrefillRowTokens row-tokens (at least one prompt). Each
// prompt's pass takes the waiting prompts of the same length on the rows next to it
// (groups admitted together sit side by side), where each pass of a few rows costs about
// as much as a step; the passes are queued together and waited for once
// (WhisperModel::decode_row_prompts), or one at a time with HARK_BATCH_PREFILL=each (a
// measurement switch). Rows are computed independently, so each group gets the logits it
// would get alone — bit for bit on the CPU, whose products are row-exact up to 32 rows (a
// merged pass stays within them there), and on a GPU up to the products' rounding at
// another row count (the fast path's rule).
int BatchScheduler::Impl::run_prefill(std::unique_lock<std::mutex>& lock) {
  const int limit = model.backend().device() == Device::Cpu ? kCpuExactRows : kPrefillRowTokens;
  std::vector<std::deque<std::shared_ptr<SequenceGroup>>> passes;
  std::vector<const SequenceGroup*> taken;
  auto is_taken = [&](const SequenceGroup& c) { return std::find(taken.begin(), taken.end(), &c) != taken.end(); };
  auto waiting = [&](const SequenceGroup& c) {
    return c.first >= 0 && pending(c, SequenceGroup::Call::Prefill) && !prompt_by_steps(c) && !is_taken(c);
  };
  int turn_tokens = 0;
  while (passes.empty() || (!one_prefill_per_call && turn_tokens < kPrefillRowTokens)) {
    std::shared_ptr<SequenceGroup> g;
    for (const auto& candidate : groups)
      if (waiting(*candidate) && (!g || candidate->ticket < g->ticket)) g = candidate;
    if (!g) break;
    if (!passes.empty() && turn_tokens + g->rows * g->n_new > kPrefillRowTokens) break;
    std::deque<std::shared_ptr<SequenceGroup>> run{g};
    taken.push_back(g.get());
    int row_tokens = g->rows * g->n_new;
    for (bool grew = row_tokens < limit; grew;) {
      grew = false;
      for (const auto& c : groups) {
        if (!waiting(*c) || c->n_new != g->n_new || c->also_position != g->also_position ||
            row_tokens + c->rows * c->n_new > limit)
          continue;
        if (c->first + c->rows == run.front()->first) {  // ends just before the run
          run.push_front(c);
        } else if (c->first == run.back()->first + run.back()->rows) {  // starts just after it
          run.push_back(c);
        } else {
          continue;
        }
        taken.push_back(c.get());
        row_tokens += c->rows * c->n_new;
        grew = true;
      }
    }
    turn_tokens += row_tokens;
    passes.push_back(std::move(run));
  }
  if (passes.empty()) return 0;
  std::vector<std::vector<int32_t>> tokens(passes.size());
  std::vector<WhisperModel::RowPrompt> prompts(passes.size());
  for (size_t i = 0; i < passes.size(); ++i) {
    const SequenceGroup& head = *passes[i].front();
    WhisperModel::RowPrompt& p = prompts[i];
    p.first = head.first;
    p.n_new = head.n_new;
    p.also_position = head.also_position;
    for (const auto& m : passes[i]) {
      p.count += m->rows;
      tokens[i].insert(tokens[i].end(), m->tokens.begin(), m->tokens.end());
    }
    p.tokens = tokens[i];
  }
  std::exception_ptr error;
  std::vector<Tensor> logits;
  const auto start = BatchClock::now();
  lock.unlock();
  try {
    for (const auto& run : passes)
      for (const auto& m : run) apply_reorder(*m);
    logits = model.decode_row_prompts(*state, prompts);
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  stats.prefill_seconds += std::chrono::duration<double>(BatchClock::now() - start).count();
  stats.prefill_calls += passes.size();
  // Each pass answers [count, vocab], or with a second position [2·count, vocab], that
  // position's rows first: each group takes its rows of each half.
  for (size_t i = 0; i < passes.size(); ++i) {
    const int count = prompts[i].count, also = prompts[i].also_position;
    const int64_t vocab = error ? 0 : logits[i].dim(1);
    int offset = 0;
    for (const auto& m : passes[i]) {
      ++stats.prefills;
      if (!error) {
        const float* all = logits[i].data<float>();
        m->logits.clear();
        for (int half = 0; half < (also >= 0 ? 2 : 1); ++half) {
          const float* from = all + (static_cast<int64_t>(half) * count + offset) * vocab;
          m->logits.insert(m->logits.end(), from, from + m->rows * vocab);
        }
      }
      offset += m->rows;
      finish_call(*m, error);
    }
  }
  return std::max(1, turn_tokens);
}

// Short prompts on the fast path go through the steps: each prefill pass of its own is
// ~50 small kernels that wait for the GPU behind the encoder lane's work (1.7 s of a
// 7.5 s run of 64 clients on an H100, with the scheduler's thread the run's critical
// path), where a prompt row in a step costs what any row does. The prompt's row joins
// n_new steps, one token each; its logits come back at the last token (and at
// also_position, first), as a pass returns them.
bool BatchScheduler::Impl::prompt_by_steps(const SequenceGroup& g) const {
  return pending(g, SequenceGroup::Call::Prefill) && g.n_new <= prompt_step_tokens;
}

// The batched step. Waits up to gather_ms for every admitted group to hand in its next
// token, then advances the groups that did; the others keep their rows and join a later step.
bool BatchScheduler::Impl::run_step(std::unique_lock<std::mutex>& lock) {
  auto admitted_ready = [&] {
    for (const auto& g : groups)
      if (!g->dead && g->first >= 0 && !g->between_runs && !(g->call != SequenceGroup::Call::None && !g->done))
        return false;
    return true;
  };
  auto steps = [&](const SequenceGroup& g) {
    return g.first >= 0 && (pending(g, SequenceGroup::Call::Step) || prompt_by_steps(g));
  };
  auto any_step = [&] { return std::any_of(groups.begin(), groups.end(), [&](const auto& g) { return steps(*g); }); };
  if (!any_step()) return false;
  // A group that misses a step loses a whole step, so the wait scales with the step time.
  const auto gather_start = BatchClock::now();
  const double wait_ms = std::max(options.gather_ms, 0.5 * last_step_ms);
  const auto deadline = gather_start + std::chrono::duration_cast<BatchClock::duration>(
                                           std::chrono::duration<double, std::milli>(wait_ms));
  work.wait_until(lock, deadline, [&] { return stopping || admitted_ready(); });
  if (stopping) return false;
  const auto step_start = BatchClock::now();
  stats.gather_seconds += std::chrono::duration<double>(step_start - gather_start).count();
  std::vector<std::shared_ptr<SequenceGroup>> stepping;
  const int text_ctx = model.hparams().n_text_ctx;
  for (const auto& g : groups) {
    if (!steps(*g)) continue;
    if (g->call == SequenceGroup::Call::Prefill) {  // a prompt fed a token a step
      if (state->length(g->first) + g->n_new - g->prompt_fed > text_ctx) {
        finish_call(*g, std::make_exception_ptr(Error(ErrorCode::InvalidArgument,
                                                      "[decoder] sequence would exceed the text context of " +
                                                          std::to_string(text_ctx) + " tokens")));
        continue;
      }
      stepping.push_back(g);
      continue;
    }
    if (state->length(g->first) + 1 > text_ctx) {
      if (g->on_choice)  // a greedy run ends where the context does
        finish_call(*g);
      else  // fails its call alone, not the shared step
        finish_call(*g, std::make_exception_ptr(Error(ErrorCode::InvalidArgument,
                                                      "[decoder] sequence would exceed the text context of " +
                                                          std::to_string(text_ctx) + " tokens")));
      continue;
    }
    stepping.push_back(g);
  }
  if (stepping.empty()) return false;
  const int rows = capacity();
  std::vector<int32_t> tokens(rows, 0);
  std::vector<uint8_t> active(rows, 0);
  auto prompt = [](const SequenceGroup& g) { return g.call == SequenceGroup::Call::Prefill; };
  for (const auto& g : stepping)
    for (int i = 0; i < g->rows; ++i) {
      tokens[g->first + i] = prompt(*g) ? g->tokens[i * g->n_new + g->prompt_fed] : g->tokens[i];
      active[g->first + i] = 1;
    }
  std::exception_ptr error;
  int computed = 0;
  lock.unlock();
  try {
    for (const auto& g : stepping) apply_reorder(*g);
    // A prompt's logits come back at its last token (and at also_position first).
    auto reads_logits = [&](const SequenceGroup& g) {
      return prompt(g) ? g.prompt_fed == g.also_position || g.prompt_fed == g.n_new - 1 : !g.select;
    };
    // No logits read on the host and a selection to come: the selection's wait covers the
    // step's too (prompts in the middle of their tokens read nothing).
    const bool selection_waits =
        std::any_of(stepping.begin(), stepping.end(), [&](const auto& g) { return g->select && !prompt(*g); }) &&
        std::none_of(stepping.begin(), stepping.end(), [&](const auto& g) { return reads_logits(*g); });
    computed = model.step_rows(*state, tokens, active, !selection_waits);
    for (const auto& g : stepping) {
      if (prompt(*g)) {  // logits at also_position, then at the last token
        if (g->prompt_fed == 0) g->logits.clear();
        if (reads_logits(*g)) {
          const std::vector<float> at = model.slot_logits(*state, g->first, g->rows).to_vector();
          g->logits.insert(g->logits.end(), at.begin(), at.end());
        }
      } else if (!g->select) {
        g->logits = model.slot_logits(*state, g->first, g->rows).to_vector();
      }
    }
    // Groups choosing next to the logits: one selection per distinct rule set and width.
    std::vector<bool> chosen(stepping.size(), false);
    for (size_t i = 0; i < stepping.size(); ++i) {
      if (!stepping[i]->select || prompt(*stepping[i]) || chosen[i]) continue;
      std::vector<int> rows_of_class;
      std::vector<SampledSummary> summaries;
      std::vector<size_t> members;
      for (size_t j = i; j < stepping.size(); ++j) {
        SequenceGroup& o = *stepping[j];
        if (!o.select || prompt(o) || chosen[j] || o.k != stepping[i]->k || !same_rules(o.rules, stepping[i]->rules))
          continue;
        chosen[j] = true;
        members.push_back(j);
        for (int r = 0; r < o.rows; ++r) rows_of_class.push_back(o.first + r);
        summaries.insert(summaries.end(), o.summaries.begin(), o.summaries.end());
      }
      const int k = stepping[i]->k;
      std::vector<TokenChoice> out = model.select_rows(*state, rows_of_class, stepping[i]->rules, summaries, k);
      size_t at = 0;
      for (size_t j : members) {
        SequenceGroup& o = *stepping[j];
        o.choices.assign(out.begin() + at, out.begin() + at + static_cast<size_t>(o.rows) * k);
        at += static_cast<size_t>(o.rows) * k;
      }
    }
  } catch (...) {
    error = std::current_exception();
  }
  lock.lock();
  last_step_ms = std::chrono::duration<double, std::milli>(BatchClock::now() - step_start).count();
  stats.step_seconds += last_step_ms / 1000;
  ++stats.steps;
  stats.rows_computed += static_cast<uint64_t>(computed);
  ++steps_since_resize;
  for (const auto& g : stepping) {
    stats.rows_stepped += g->rows;
    if (error) {
      kill(*g, error);
    } else if (prompt(*g)) {
      if (++g->prompt_fed == g->n_new) {
        ++stats.prefills;
        ++stats.prompts_stepped;
        finish_call(*g);
      }
    } else {
      step_done(*g);
    }
  }
  return true;
}

void BatchScheduler::Impl::step_done(SequenceGroup& g) {
  if (!g.on_choice) return finish_call(g);
  const TokenChoice choice = g.choices.at(0);
  bool go_on = false;
  try {
    go_on = (*g.on_choice)(choice);
  } catch (...) {
    return finish_call(g, std::current_exception());
  }
  ++g.handed;
  ++stats.tokens_fed_back;
  if (!go_on || --g.steps_left <= 0) return finish_call(g);
  // The next step's token and summary, as select_feed_back advances them on a GPU; the
  // call stays pending: the group is ready for the next step.
  g.tokens.assign(1, advance_summary(g.summaries.at(0), choice.token, g.rules));
}

}  // namespace hark
