// The scheduler's promises: a short request is not stuck behind long ones (it is admitted
// in the order it asked, between two windows of the long ones), a cancelled run gives its
// rows back at the next step while the others finish unchanged, a group larger than the
// row budget runs alone, runs that cannot share the batch (audio_ctx) run between steps,
// and misuse of the Inference fails the one group that misused it; the other model calls
// waiting at a turn all run in it, not one per step.
#include <thread>

#include "batch/batch_scheduler.h"
#include "batch_test_util.h"

namespace hark::test {
namespace {

using Clock = std::chrono::steady_clock;

TranscribeOptions quick(int sample_len = 8) {
  TranscribeOptions o;
  o.language = "en";
  o.temperatures = {0.0f};
  o.sample_len = sample_len;
  return o;
}

// Polls (never asserts a time) until `done` or a generous deadline.
template <class F>
bool eventually(F done) {
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!done()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

TEST(BatchScheduler, ShortRequestIsAdmittedBetweenTheWindowsOfLongOnes) {
  // Two rows, both taken by long runs of eight windows each: the short run asks for rows
  // while they decode and gets the first row given back, before their next windows.
  auto engine = narrow_engine(2);
  std::atomic<int> finished{0};
  std::vector<int> order(3, -1);
  auto run = [&](int who, double seconds) {
    engine->transcribe(voice_like(seconds, who + 1), quick());
    order[who] = finished++;
  };
  std::thread long_a(run, 0, 235.0), long_b(run, 1, 235.0);
  ASSERT_TRUE(eventually([&] { return engine->batch_stats().rows_active == 2; }));
  std::thread short_one(run, 2, 4.0);
  short_one.join();
  long_a.join();
  long_b.join();
  EXPECT_EQ(order[2], 0) << "the short request finished after a long one";
}

// The narrow test checkpoint on a CPU backend of two threads, for tests of the scheduler alone.
WhisperModel narrow_model() {
  BackendOptions bo;
  bo.threads = 2;
  return WhisperModel(narrow_checkpoint(), std::shared_ptr<Backend>(make_cpu_backend(bo)));
}

// A 600 s run on its own thread that `cancel` stops; what it failed with goes to `error`.
std::thread cancellable_long_run(Engine& engine, const TranscribeOptions& options, const std::atomic<bool>& cancel,
                                 std::string& error) {
  return std::thread([&engine, options, &cancel, &error] {
    RunHooks hooks;
    hooks.cancel = &cancel;
    try {
      engine.transcribe(voice_like(600, 9), options, hooks);
    } catch (const Error& e) {
      error = to_string(e.code());
    }
  });
}

TEST(BatchScheduler, CancelledRunGivesItsRowsBackAndOthersFinishUnchanged) {
  const std::vector<float> short_audio = voice_like(12, 3);
  const Transcript alone = narrow_engine(1)->transcribe(short_audio, quick());
  auto engine = narrow_engine(4);
  std::atomic<bool> cancel{false};
  std::string long_error;
  std::thread long_run = cancellable_long_run(*engine, quick(40), cancel, long_error);
  ASSERT_TRUE(eventually([&] { return engine->batch_stats().steps > 3; }));
  Transcript together;
  std::thread short_run([&] { together = engine->transcribe(short_audio, quick()); });
  cancel = true;
  long_run.join();
  short_run.join();
  EXPECT_EQ(long_error, to_string(ErrorCode::Cancelled));
  expect_identical(together, alone, "short run next to a cancelled one");
  EXPECT_TRUE(eventually([&] { return engine->batch_stats().rows_active == 0; }));
}

// A run that queued its next window ahead (HARK_ENCODE_AHEAD=1, the lane forced on the CPU)
// and is cancelled leaves nothing behind: it ends Cancelled, the window it will not use is
// counted unused, its rows come back, and a request after it decodes what it decodes alone.
TEST(BatchScheduler, CancelledRunWithAWindowEncodedAheadLeavesNothingBehind) {
  TranscribeOptions text = quick(40);
  text.without_timestamps = true;
  const std::vector<float> short_audio = voice_like(40, 3);
  const Transcript alone = narrow_engine(1)->transcribe(short_audio, text);
  ::setenv("HARK_ENCODE_AHEAD", "1", 1);
  auto engine = narrow_engine(4, 2, 448, /*select=*/false, EncoderLane::On);
  std::atomic<bool> cancel{false};
  std::string long_error;
  std::thread long_run = cancellable_long_run(*engine, text, cancel, long_error);
  ASSERT_TRUE(eventually([&] { return engine->batch_stats().windows_ahead >= 2; }));
  cancel = true;
  long_run.join();
  EXPECT_EQ(long_error, to_string(ErrorCode::Cancelled));
  EXPECT_TRUE(eventually([&] { return engine->batch_stats().windows_ahead_unused >= 1; }));
  const Transcript after = engine->transcribe(short_audio, text);
  ::unsetenv("HARK_ENCODE_AHEAD");
  expect_identical(after, alone, "a request after the cancelled one");
  EXPECT_TRUE(eventually([&] {
    const BatchStats b = engine->batch_stats();
    return b.rows_active == 0 && b.windows_waiting == 0;
  }));
}

// The scheduler's side of encoding ahead: a queued window is collected once, a dropped one
// is counted unused, and a cancelled run cannot queue one.
TEST(BatchScheduler, WindowsEncodedAheadAreCollectedOnceOrCountedUnused) {
  WhisperModel model = narrow_model();
  BatchScheduler scheduler(model, {4});
  Tensor mel = Tensor::zeros({model.hparams().n_mels, 3000});
  auto pending = scheduler.encode_ahead(mel, 0, nullptr);
  auto audio = pending->collect();
  ASSERT_TRUE(audio);
  EXPECT_EQ(audio->cross_kv.to_vector(), scheduler.encode(mel, 0, nullptr)->cross_kv.to_vector());
  EXPECT_THROW(pending->collect(), Error);  // once only
  pending.reset();
  EXPECT_EQ(scheduler.stats().windows_ahead, 1u);
  EXPECT_EQ(scheduler.stats().windows_ahead_unused, 0u);
  scheduler.encode_ahead(mel, 0, nullptr).reset();  // never collected
  EXPECT_EQ(scheduler.stats().windows_ahead, 2u);
  EXPECT_EQ(scheduler.stats().windows_ahead_unused, 1u);
  std::atomic<bool> cancel{true};
  EXPECT_THROW(scheduler.encode_ahead(mel, 0, &cancel), Error);
  EXPECT_EQ(scheduler.stats().windows_ahead, 2u);
}

TEST(BatchScheduler, GroupLargerThanTheBudgetAndExclusiveRunsFinishAsAlone) {
  TranscribeOptions beams = quick();
  beams.beam_size = 4;  // four rows with a budget of two: runs alone
  TranscribeOptions short_ctx = quick();
  short_ctx.audio_ctx = 750;  // other window length: runs between steps, not in the batch
  TranscribeOptions detect = quick();
  detect.language = "";
  const std::vector<TranscribeOptions> options = {beams, short_ctx, detect, quick()};
  std::vector<Transcript> alone;
  {
    auto reference = narrow_engine(1);
    for (size_t i = 0; i < options.size(); ++i) alone.push_back(reference->transcribe(voice_like(8, int(i)), options[i]));
  }
  auto engine = narrow_engine(2);
  std::vector<Transcript> together(options.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < options.size(); ++i)
    threads.emplace_back([&, i] { together[i] = engine->transcribe(voice_like(8, int(i)), options[i]); });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < options.size(); ++i) expect_identical(together[i], alone[i], "run " + std::to_string(i));
}

TEST(BatchScheduler, MisuseFailsOnlyTheGroupThatMisusedIt) {
  WhisperModel model = narrow_model();
  BatchScheduler scheduler(model, {4});
  Tensor mel = Tensor::zeros({model.hparams().n_mels, 3000});
  EXPECT_THROW(scheduler.encode(Tensor::zeros({3, 3}), 0, nullptr), Error);  // not a mel window
  auto audio = scheduler.encode(mel, 0, nullptr);
  ASSERT_TRUE(audio);
  auto bad = scheduler.inference(audio, nullptr);
  EXPECT_THROW(bad->step(std::vector<int32_t>{50258}, 1), Error);  // before begin()
  bad->begin(2);
  EXPECT_THROW(bad->step(std::vector<int32_t>{50258}, 1), Error);            // one token for two rows
  EXPECT_THROW(bad->reorder(std::vector<int>{0, 5}), Error);                 // a row outside the group
  EXPECT_THROW(bad->step(std::vector<int32_t>{50258, 1 << 20}, 1), Error);  // outside the vocabulary
  EXPECT_EQ(bad->step(std::vector<int32_t>{50258, 50258}, 1).size(), 2u * model.hparams().n_vocab);  // still usable
  // A good group on the same scheduler decodes what a plain state decodes.
  auto good = scheduler.inference(audio, nullptr);
  good->begin(1);
  std::vector<float> got = good->step(std::vector<int32_t>{50258, 50259, 50359}, 3);
  got = good->step(std::vector<int32_t>{440}, 1);
  auto state = model.new_state(audio, 1);
  model.decode(*state, std::vector<int32_t>{50258, 50259, 50359}, 3);
  EXPECT_EQ(got, model.decode(*state, std::vector<int32_t>{440}, 1).to_vector());
  // Cancelled before asking: the call fails at once.
  std::atomic<bool> cancel{true};
  auto cancelled = scheduler.inference(audio, &cancel);
  cancelled->begin(1);
  EXPECT_THROW(cancelled->step(std::vector<int32_t>{50258}, 1), Error);
  EXPECT_THROW(scheduler.encode(mel, 0, &cancel), Error);
}

// A batching GPU engine sends every run's STFT here: one call a turn held it to one window
// a step (docs/benchmarks.md, 2026-12-06). Calls queued while another runs all run at the
// next turn, with no step between them, while a group keeps stepping.
TEST(BatchScheduler, CallsWaitingAtATurnAllRunInIt) {
  WhisperModel model = narrow_model();
  BatchOptions options;
  options.max_rows = 4;
  // The rule under test, not the time budget: a descheduled thread on a loaded machine
  // must not end the turn early.
  options.exclusive_budget_ms = 600000;
  BatchScheduler scheduler(model, options);
  auto audio = scheduler.encode(Tensor::zeros({model.hparams().n_mels, 3000}), 0, nullptr);
  std::atomic<bool> stop{false};
  std::thread stepping([&] {
    auto group = scheduler.inference(audio, nullptr);
    group->begin(1);
    group->step(std::vector<int32_t>{50258, 50259, 50359}, 3);
    // Within the model's 448 positions; the calls below are queued within a few steps.
    for (int i = 0; i < 400 && !stop; ++i) group->step(std::vector<int32_t>{440}, 1);
  });
  ASSERT_TRUE(eventually([&] { return scheduler.stats().steps > 2; }));

  constexpr int kQueued = 7;
  std::vector<uint64_t> steps_seen(kQueued, 0);
  std::atomic<bool> holding{false};
  std::thread first([&] {
    // Holds the scheduler's thread until the others are queued behind it.
    scheduler.run_exclusive([&] {
      holding = true;
      eventually([&] { return scheduler.stats().calls_waiting == kQueued; });
    }, nullptr);
  });
  ASSERT_TRUE(eventually([&] { return holding.load(); }));
  std::vector<std::thread> queued;
  for (int i = 0; i < kQueued; ++i)
    queued.emplace_back([&, i] { scheduler.run_exclusive([&] { steps_seen[i] = scheduler.stats().steps; }, nullptr); });
  for (auto& t : queued) t.join();
  first.join();
  stop = true;
  stepping.join();
  for (int i = 1; i < kQueued; ++i) EXPECT_EQ(steps_seen[i], steps_seen[0]) << "a step ran between two waiting calls";
}

}  // namespace
}  // namespace hark::test
