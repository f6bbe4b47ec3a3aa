// The --manifest file loop with a fake transcriber: failures logged and skipped, outputs
// written atomically, --resume skipping finished inputs, and the summary line.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/batch.h"
#include "hark/error.h"

namespace hark::cli {
namespace {

namespace fs = std::filesystem;

ino_t inode(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Batch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("hark-batch-" + std::to_string(getpid()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    options.output_dir = dir;
    options.shard_label = "1/3";
    callbacks.prepare = [this] { ++prepared; };
    callbacks.transcribe = [this](const std::string& path) {
      transcribed.push_back(path);
      if (path.find("bad") != std::string::npos) throw Error(ErrorCode::InvalidAudio, "[audio] cannot decode " + path);
      if (path.find("odd") != std::string::npos) throw std::runtime_error("something odd");
      Transcript t;
      t.text = " text of " + path;
      t.duration = 1800;  // half an hour each
      Segment s;
      s.end = 2;
      s.text = t.text;
      t.segments = {s};
      return t;
    };
    callbacks.log = [this](const std::string& line) { log.push_back(line); };
  }
  void TearDown() override { fs::remove_all(dir); }
  std::set<std::string> files_in_dir() {
    std::set<std::string> out;
    for (auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) out.insert(fs::relative(e.path(), dir).string());
    return out;
  }

  fs::path dir;
  BatchOptions options;
  BatchCallbacks callbacks;
  std::vector<std::string> transcribed, log;
  int prepared = 0;
};

TEST_F(Batch, FailedFilesAreLoggedAndSkippedTheRestWritten) {
  auto summary = run_batch({"a.wav", "rec/bad.wav", "rec/b.wav", "odd.wav"}, options, callbacks);
  EXPECT_EQ(summary.files, 4u);
  EXPECT_EQ(summary.done, 2u);
  EXPECT_EQ(summary.failed, 2u);
  EXPECT_EQ(summary.skipped, 0u);
  EXPECT_DOUBLE_EQ(summary.audio_sec, 3600);
  EXPECT_EQ(prepared, 1);
  EXPECT_EQ(files_in_dir(), (std::set<std::string>{"a.txt", "rec/b.txt"})) << "no output, and no temp file, for failures";
  EXPECT_EQ(slurp(dir / "rec/b.txt"), "text of rec/b.wav\n");
  ASSERT_EQ(log.size(), 5u);
  EXPECT_EQ(log[1], "[2/4] failed rec/bad.wav: [audio] cannot decode rec/bad.wav");
  EXPECT_EQ(log[3], "[4/4] failed odd.wav: something odd");
  EXPECT_EQ(log[4].rfind("summary shard=1/3 files=4 done=2 skipped=0 failed=2 audio_hours=1.000 wall_sec=", 0), 0u)
      << log[4];
  EXPECT_NE(log[4].find(" rtfx="), std::string::npos);
}

TEST_F(Batch, ResumeSkipsFilesWhoseEveryOutputExists) {
  options.formats = {OutputFormat::Txt, OutputFormat::Srt};
  run_batch({"a.wav", "b.wav"}, options, callbacks);
  const ino_t a_inode = inode(dir / "a.txt");  // a rewrite renames a new file onto it
  fs::remove(dir / "b.srt");                                      // b is incomplete now
  std::ofstream(dir / "a.srt", std::ios::app) << "kept";          // a marker a redo would overwrite
  transcribed.clear();
  log.clear();
  options.resume = true;
  auto summary = run_batch({"a.wav", "b.wav", "c.wav"}, options, callbacks);
  EXPECT_EQ(transcribed, (std::vector<std::string>{"b.wav", "c.wav"}));
  EXPECT_EQ(summary.skipped, 1u);
  EXPECT_EQ(summary.done, 2u);
  EXPECT_NE(slurp(dir / "a.srt").find("kept"), std::string::npos) << "a finished file was redone";
  EXPECT_EQ(inode(dir / "a.txt"), a_inode);
  EXPECT_TRUE(fs::exists(dir / "b.srt"));
  EXPECT_EQ(log.front(), "--resume: 1 of 3 files already done");
}

TEST_F(Batch, AFullyResumedShardNeverLoadsTheModel) {
  run_batch({"a.wav"}, options, callbacks);
  options.resume = true;
  prepared = 0;
  auto summary = run_batch({"a.wav"}, options, callbacks);
  EXPECT_EQ(prepared, 0);
  EXPECT_EQ(summary.skipped, 1u);
}

TEST_F(Batch, ModelLoadFailureEndsTheRunWithTheSummary) {
  callbacks.prepare = [] { throw Error(ErrorCode::NotFound, "[hub] no model 'tiny'"); };
  EXPECT_THROW(run_batch({"a.wav", "b.wav"}, options, callbacks), Error);
  EXPECT_TRUE(transcribed.empty());
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log.back().find("done=0"), std::string::npos);
  EXPECT_NE(log.back().find("stopped=early"), std::string::npos) << log.back();
}

TEST_F(Batch, CancelEndsTheRun) {
  callbacks.transcribe = [](const std::string&) -> Transcript { throw Error(ErrorCode::Cancelled, "[cli] interrupted"); };
  try {
    run_batch({"a.wav", "b.wav"}, options, callbacks);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Cancelled);
  }
}

TEST_F(Batch, UnwritableOutputIsFatalAndSaysWhere) {
  fs::create_directories(dir);
  std::ofstream(dir / "rec") << "a file where a folder should be";
  try {
    run_batch({"rec/a.wav", "b.wav"}, options, callbacks);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Io);
    EXPECT_NE(std::string(e.what()).find("--output-dir"), std::string::npos) << e.what();
  }
  EXPECT_EQ(transcribed.size(), 1u) << "stopped at the first write failure";
}

// --parallel: the fixture's transcriber again, made safe for many threads, which also
// records how many inputs were in progress at once.
class ParallelBatch : public Batch {
 protected:
  void SetUp() override {
    Batch::SetUp();
    auto serial = callbacks.transcribe;
    callbacks.transcribe = [this, serial](const std::string& path) {
      {
        std::unique_lock lock(mutex);
        ++in_flight;
        most_in_flight = std::max(most_in_flight, in_flight);
        // The first `expect_together` inputs wait for each other (bounded: a failure to run
        // them at once shows as most_in_flight, not as a hang).
        if (seen++ < expect_together) {
          if (in_flight >= expect_together) gathered = true;
          together.notify_all();
          together.wait_for(lock, gather_timeout, [this] { return gathered; });
        }
      }
      Transcript t;
      std::exception_ptr error;
      {
        std::lock_guard lock(mutex);  // the fixture's lists
        try {
          t = serial(path);
        } catch (...) {
          error = std::current_exception();
        }
      }
      std::lock_guard lock(mutex);
      --in_flight;
      if (error) std::rethrow_exception(error);
      return t;
    };
    options.parallel = 3;
  }
  std::mutex mutex;
  std::condition_variable together;
  int in_flight = 0, most_in_flight = 0, seen = 0, expect_together = 3;
  bool gathered = false;  // expect_together inputs were in progress at once
  std::chrono::milliseconds gather_timeout{10000};
};

// The code of the Error that `run` throws (none: nothing thrown).
std::optional<ErrorCode> error_code_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.code();
  }
  return std::nullopt;
}

TEST_F(ParallelBatch, RunsInputsAtOnceAndWritesEveryOutput) {
  std::vector<std::string> inputs;
  for (int i = 0; i < 10; ++i) inputs.push_back("rec/" + std::to_string(i) + (i == 4 ? "-bad" : "") + ".wav");
  auto summary = run_batch(inputs, options, callbacks);
  EXPECT_EQ(most_in_flight, 3);
  EXPECT_EQ(summary.done, 9u);
  EXPECT_EQ(summary.failed, 1u);
  EXPECT_DOUBLE_EQ(summary.audio_sec, 9 * 1800.0);
  EXPECT_EQ(prepared, 1);
  std::multiset<std::string> once(transcribed.begin(), transcribed.end());
  EXPECT_EQ(once, std::multiset<std::string>(inputs.begin(), inputs.end())) << "each input exactly once";
  std::set<std::string> want;
  for (int i = 0; i < 10; ++i)
    if (i != 4) want.insert("rec/" + std::to_string(i) + ".txt");
  EXPECT_EQ(files_in_dir(), want) << "no output for the failure, no temporary left";
  EXPECT_EQ(slurp(dir / "rec/7.txt"), "text of rec/7.wav\n");
  // One line per input, numbered in the order they finished, then the summary.
  ASSERT_EQ(log.size(), 11u);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(log[k].rfind("[" + std::to_string(k + 1) + "/10] ", 0), 0u) << log[k];
  EXPECT_EQ(std::count_if(log.begin(), log.end(), [](auto& l) { return l.find("] failed rec/4-bad.wav: ") != l.npos; }), 1);
  EXPECT_EQ(log.back().rfind("summary shard=1/3 files=10 done=9 skipped=0 failed=1 ", 0), 0u) << log.back();
}

TEST_F(ParallelBatch, MoreWorkersThanInputs) {
  options.parallel = 8;
  expect_together = 2;
  auto summary = run_batch({"a.wav", "b.wav"}, options, callbacks);
  EXPECT_EQ(most_in_flight, 2);
  EXPECT_EQ(summary.done, 2u);
}

TEST_F(ParallelBatch, ATranscriberOfOneAtATimeGetsOneAtATime) {
  // The first two calls each wait up to 0.3 s for a second input in progress: without the
  // cap a second worker would join the first and most_in_flight would be 2.
  expect_together = 2;
  gather_timeout = std::chrono::milliseconds(300);
  callbacks.max_parallel = [] { return 1; };
  auto summary = run_batch({"a.wav", "b.wav", "c.wav", "d.wav"}, options, callbacks);
  EXPECT_EQ(most_in_flight, 1);
  EXPECT_EQ(transcribed, (std::vector<std::string>{"a.wav", "b.wav", "c.wav", "d.wav"})) << "in list order";
  EXPECT_EQ(summary.done, 4u);
}

TEST_F(ParallelBatch, CancelStopsTakingInputsAndIsRethrown) {
  expect_together = 0;
  callbacks.transcribe = [this](const std::string& path) -> Transcript {
    std::lock_guard lock(mutex);
    transcribed.push_back(path);
    throw Error(ErrorCode::Cancelled, "[cli] interrupted");
  };
  std::vector<std::string> inputs(50, "x.wav");
  EXPECT_EQ(error_code_of([&] { run_batch(inputs, options, callbacks); }), ErrorCode::Cancelled);
  EXPECT_LE(transcribed.size(), 3u) << "each worker stops at its first cancel";
}

TEST_F(ParallelBatch, UnwritableOutputIsFatal) {
  expect_together = 0;
  fs::create_directories(dir);
  std::ofstream(dir / "rec") << "a file where a folder should be";
  std::vector<std::string> inputs;
  for (int i = 0; i < 40; ++i) inputs.push_back("rec/" + std::to_string(i) + ".wav");
  EXPECT_EQ(error_code_of([&] { run_batch(inputs, options, callbacks); }), ErrorCode::Io);
  EXPECT_LE(transcribed.size(), 3u) << "no worker takes another input after a write failure";
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log.back().find("stopped=early"), std::string::npos) << log.back();
}

TEST(WriteAtomically, ReplacesTheWholeFileAndLeavesNoTemporary) {
  const fs::path dir = fs::temp_directory_path() / ("hark-atomic-" + std::to_string(getpid()));
  fs::remove_all(dir);
  write_atomically(dir / "deep/x.txt", "first version, longer\n");
  write_atomically(dir / "deep/x.txt", "second\n");
  EXPECT_EQ(slurp(dir / "deep/x.txt"), "second\n");
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir / "deep")) ++entries;
  EXPECT_EQ(entries, 1u);
  write_atomically(dir / "empty.txt", "");
  EXPECT_EQ(fs::file_size(dir / "empty.txt"), 0u);
  fs::remove_all(dir);
}

TEST(BatchSummary, LineWithNothingDone) {
  BatchSummary s;
  EXPECT_EQ(s.line(),
            "summary shard=0/1 files=0 done=0 skipped=0 failed=0 audio_hours=0.000 wall_sec=0.0 rtfx=0.0 load_sec=0.0");
}

}  // namespace
}  // namespace hark::cli
