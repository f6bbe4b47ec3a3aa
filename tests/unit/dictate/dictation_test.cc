// A take from capture to transcript with a scripted transcriber: the whole take reaches
// it, a forgotten session is replaced and the take resent, and a take that cannot be
// transcribed is kept in a WAV file with a failure that says so.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "audio/audio.h"
#include "dictate/dictation.h"
#include "dictate/take.h"
#include "hark/error.h"

namespace hark::dictate {
namespace {

class ScriptedTranscriber : public Transcriber {
 public:
  int fail_feed = -1;  // the feed (1-based, counted over the take) that throws
  ErrorCode fail_code = ErrorCode::Network;
  std::vector<std::vector<float>> sessions;
  int feeds = 0, previews = 0, finishes = 0, discards = 0;

  std::string describe() const override { return "scripted"; }
  void prepare() override {}
  void begin() override { sessions.emplace_back(); }
  Heard feed(std::span<const float> samples, bool partial) override {
    if (++feeds == fail_feed) throw Error(fail_code, "[dictate] scripted failure");
    sessions.back().insert(sessions.back().end(), samples.begin(), samples.end());
    previews += partial;
    return {"", partial ? "preview" : ""};
  }
  std::string finish() override {
    ++finishes;
    return " heard " + std::to_string(sessions.back().size()) + " samples";
  }
  void discard() noexcept override { ++discards; }
  void cancel() noexcept override {}
};

class Dictation : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("hark-dictation-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    options_.save_dir = (dir_ / "takes").string();
    options_.max_chunk_seconds = 0.5;  // several uploads even though the file is read at once
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // `seconds` of a 300 Hz tone (or silence) as a file played as fast as possible.
  SourceFactory clip(double seconds, float amplitude = 0.3f) {
    std::vector<float> s(static_cast<size_t>(seconds * 16000));
    for (size_t i = 0; i < s.size(); ++i) s[i] = amplitude * std::sin(2 * M_PI * 300 * i / 16000.0);
    const std::string path = (dir_ / "clip.wav").string();
    write_wav(path, s);
    return [path] { return open_file_source(path, {false, false}); };
  }

  std::filesystem::path dir_;
  DictationOptions options_;
};

TEST_F(Dictation, TheWholeTakeReachesTheTranscriber) {
  ScriptedTranscriber t;
  TakeResult r = run_take(t, clip(2.0), options_);
  EXPECT_TRUE(r.started);
  ASSERT_TRUE(r.transcribed) << r.failure;
  EXPECT_EQ(r.text, " heard 32000 samples");
  EXPECT_DOUBLE_EQ(r.seconds, 2.0);
  EXPECT_GE(t.feeds, 1);
  EXPECT_GE(t.previews, 1);
  EXPECT_TRUE(r.saved_path.empty()) << "a transcribed take is not kept unless --save asks";
}

TEST_F(Dictation, ForgottenSessionIsReplacedAndTheTakeSentAgain) {
  ScriptedTranscriber t;
  t.fail_feed = 2;
  t.fail_code = ErrorCode::NotFound;
  TakeResult r = run_take(t, clip(3.0), options_);
  ASSERT_TRUE(r.transcribed) << r.failure;
  ASSERT_EQ(t.sessions.size(), 2u);
  EXPECT_EQ(r.text, " heard 48000 samples") << "the new session got the take from its start";
}

TEST_F(Dictation, UnreachableServerKeepsTheTakeInAWavFile) {
  ScriptedTranscriber t;
  t.fail_feed = 2;
  t.fail_code = ErrorCode::Network;
  TakeResult r = run_take(t, clip(3.0), options_);
  EXPECT_FALSE(r.transcribed);
  EXPECT_EQ(r.failure_code, ErrorCode::Network);
  EXPECT_NE(r.failure.find("scripted failure"), std::string::npos);
  ASSERT_FALSE(r.saved_path.empty());
  EXPECT_EQ(std::filesystem::path(r.saved_path).parent_path(), dir_ / "takes");
  EXPECT_EQ(decode_audio_file(r.saved_path).size(), 48000u) << "nothing recorded is lost";
}

TEST_F(Dictation, SaveKeepsATranscribedTakeToo) {
  ScriptedTranscriber t;
  options_.save_path = (dir_ / "mine.wav").string();
  TakeResult r = run_take(t, clip(1.0), options_);
  ASSERT_TRUE(r.transcribed);
  EXPECT_EQ(r.saved_path, options_.save_path);
  EXPECT_EQ(decode_audio_file(r.saved_path).size(), 16000u);
}

TEST_F(Dictation, MaxSecondsEndsTheTake) {
  ScriptedTranscriber t;
  options_.max_seconds = 1.0;
  TakeResult r = run_take(t, clip(5.0), options_);
  ASSERT_TRUE(r.transcribed);
  EXPECT_DOUBLE_EQ(r.seconds, 1.0);
  EXPECT_EQ(t.sessions.back().size(), 16000u);
}

TEST_F(Dictation, VadGateSkipsATakeWithoutSpeech) {
  ScriptedTranscriber t;
  options_.vad_gate = true;
  TakeResult r = run_take(t, clip(1.5, 0.0f), options_);
  ASSERT_TRUE(r.transcribed) << r.failure;
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(t.finishes, 0);
  EXPECT_EQ(t.discards, 1);
}

}  // namespace
}  // namespace hark::dictate
