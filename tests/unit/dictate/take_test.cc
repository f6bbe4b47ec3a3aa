// The take buffer, the WAV a failed take is kept in, the level meter and the file source.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <thread>

#include "audio/audio.h"
#include "dictate/capture.h"
#include "dictate/take.h"
#include "hark/error.h"

namespace hark::dictate {
namespace {

std::vector<float> sine(double seconds, float amplitude = 0.5f) {
  std::vector<float> out(static_cast<size_t>(seconds * 16000));
  for (size_t i = 0; i < out.size(); ++i) out[i] = amplitude * std::sin(2 * M_PI * 440 * i / 16000.0);
  return out;
}

std::filesystem::path temp_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("hark-dictate-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(Take, WaitForHandsOutChunksInOrderThenEnds) {
  Take take;
  std::thread producer([&] {
    for (int i = 0; i < 10; ++i) {
      std::vector<float> block(160, static_cast<float>(i));
      take.append(block);
    }
    take.close();
  });
  std::vector<float> got;
  size_t from = 0;
  for (std::vector<float> chunk; take.wait_for(from, 400, 500, chunk); chunk.clear()) {
    EXPECT_LE(chunk.size(), 500u);
    got.insert(got.end(), chunk.begin(), chunk.end());
    from += chunk.size();
  }
  producer.join();
  ASSERT_EQ(got.size(), 1600u);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(i / 160));
}

TEST(TakeWav, RoundTripsThroughTheAudioDecoder) {
  auto dir = temp_dir("wav");
  const std::string path = new_take_path(dir.string());
  EXPECT_EQ(std::filesystem::path(path).parent_path(), dir);
  auto samples = sine(1.5);
  samples[10] = 3.0f;  // clipped, not wrapped
  samples[11] = NAN;   // written as silence
  write_wav(path, samples);
  auto back = decode_audio_file(path);
  ASSERT_EQ(back.size(), samples.size());
  EXPECT_NEAR(back[10], 1.0f, 1e-3);
  EXPECT_EQ(back[11], 0.0f);
  for (size_t i = 100; i < back.size(); i += 97) ASSERT_NEAR(back[i], samples[i], 1.0 / 32767 + 1e-6);
  EXPECT_NE(new_take_path(dir.string()), path) << "an existing take is never overwritten";
  std::filesystem::remove_all(dir);
}

TEST(TakeWav, UnwritablePathIsAClearError) {
  try {
    write_wav("/nonexistent-dir/take.wav", sine(0.1));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Io);
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/take.wav"), std::string::npos);
  }
}

TEST(LevelMeter, DecibelsAndBar) {
  EXPECT_NEAR(level_dbfs(sine(0.1, 1.0f)), -3.01, 0.02);
  EXPECT_NEAR(level_dbfs(sine(0.1, 0.1f)), -23.01, 0.02);
  EXPECT_EQ(level_dbfs(std::vector<float>(100, 0.0f)), -120.0);
  EXPECT_EQ(level_dbfs({}), -120.0);
  EXPECT_EQ(level_bar(-120, 10), "[..........]");
  EXPECT_EQ(level_bar(-30, 10), "[#####.....]");
  EXPECT_EQ(level_bar(3, 10), "[##########]");
}

TEST(FileSource, DeliversTheWholeFileThenEnds) {
  auto dir = temp_dir("source");
  std::filesystem::create_directories(dir);
  const auto samples = sine(2.0);
  write_wav((dir / "a.wav").string(), samples);
  auto source = open_file_source((dir / "a.wav").string(), {false, false});
  source->start();
  std::vector<float> got;
  while (source->read(got, std::chrono::milliseconds(100))) {}
  ASSERT_EQ(got.size(), samples.size());
  EXPECT_NEAR(got[1234], samples[1234], 1e-4);
  std::filesystem::remove_all(dir);
}

TEST(FileSource, SilenceFollowsTheFileUntilStopped) {
  auto dir = temp_dir("silence");
  std::filesystem::create_directories(dir);
  write_wav((dir / "a.wav").string(), sine(0.2));
  auto source = open_file_source((dir / "a.wav").string(), {false, true});
  source->start();
  std::vector<float> got;
  while (got.size() < 16000) ASSERT_TRUE(source->read(got, std::chrono::milliseconds(100)));
  source->stop();
  while (source->read(got, std::chrono::milliseconds(100))) {}
  EXPECT_GE(got.size(), 16000u);
  EXPECT_EQ(got.back(), 0.0f);
  std::filesystem::remove_all(dir);
}

TEST(FileSource, BadFileFailsBeforeTheTake) {
  EXPECT_THROW(open_file_source("/nonexistent.wav", {}), Error);
}

}  // namespace
}  // namespace hark::dictate
