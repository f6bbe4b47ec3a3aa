// Every container/codec FFmpeg decodes for hark, from fixtures the ffmpeg CLI makes out
// of jfk.wav at test time. Each must match the WAV decode:
//   lossless codecs (FLAC, ALAC, PCM in AIFF/CAF/MOV): bit-identical;
//   lossy codecs: same length within 1 % (encoder padding is trimmed by the
//   containers' gapless metadata), correlation > 0.99 at the best lag within ±1200
//   samples (75 ms: codec/resampler delay), mean-square error < 1 % of the signal power.
#include <gtest/gtest.h>

#include <filesystem>

#include "audio/audio.h"
#include "audio_test_util.h"
#include "test_support.h"

namespace hark {
namespace {

struct Format {
  const char* name;
  const char* file;
  const char* ffmpeg_args;  // between "-i jfk.wav" and the output file
  bool lossless;
  const char* container;  // what probe reports
  const char* codec;
};

const Format kFormats[] = {
    {"mp3", "jfk.mp3", "-c:a libmp3lame -b:a 64k", false, "mp3", "mp3"},
    {"m4a_aac", "jfk.m4a", "-c:a aac -b:a 64k", false, "mov,mp4,m4a,3gp,3g2,mj2", "aac"},
    {"mp4_aac_with_video", "jfk.mp4", "-f lavfi -i testsrc=size=32x32:rate=5 -map 1:v -map 0:a -shortest -c:v mpeg4 -c:a aac -b:a 64k",
     false, "mov,mp4,m4a,3gp,3g2,mj2", "aac"},
    {"mov_alac", "jfk.mov", "-c:a alac", true, "mov,mp4,m4a,3gp,3g2,mj2", "alac"},
    {"flac", "jfk.flac", "-c:a flac", true, "flac", "flac"},
    {"ogg_vorbis", "jfk.ogg", "-c:a libvorbis -q:a 4", false, "ogg", "vorbis"},
    {"ogg_opus", "jfk.opus", "-c:a libopus -b:a 48k", false, "ogg", "opus"},
    {"webm_opus", "jfk.webm", "-c:a libopus -b:a 48k", false, "matroska,webm", "opus"},
    {"mkv_aac", "jfk.mkv", "-c:a aac -b:a 64k", false, "matroska,webm", "aac"},
    {"aiff", "jfk.aiff", "-c:a pcm_s16be", true, "aiff", "pcm_s16be"},
    {"caf", "jfk.caf", "-c:a pcm_s16le", true, "caf", "pcm_s16le"},
    {"wav_mulaw", "jfk-mulaw.wav", "-c:a pcm_mulaw", false, "wav", "pcm_mulaw"},
    {"wav_adpcm", "jfk-adpcm.wav", "-c:a adpcm_ima_wav", false, "wav", "adpcm_ima_wav"},
    {"flac_44k_stereo_24bit", "jfk-44k.flac", "-af 'pan=stereo|c0=c0|c1=c0' -ar 44100 -sample_fmt s32 -c:a flac", false, "flac", "flac"},
    {"mp3_48k_stereo", "jfk-48k.mp3", "-af 'pan=stereo|c0=c0|c1=c0' -ar 48000 -c:a libmp3lame -b:a 128k", false, "mp3", "mp3"},
};

class Formats : public ::testing::TestWithParam<Format> {
 protected:
  static void SetUpTestSuite() {
    if (!test::have_ffmpeg()) return;
    dir_ = new std::string(test::temp_dir("formats"));
    reference_ = new std::vector<float>(decode_audio_file(test::data_path("audio/jfk.wav")));
  }
  static void TearDownTestSuite() {
    if (dir_) std::filesystem::remove_all(*dir_);
    delete dir_, delete reference_;
    dir_ = nullptr, reference_ = nullptr;
  }
  void SetUp() override {
    if (!audio_has_ffmpeg()) GTEST_SKIP() << "built with -DHARK_FFMPEG=OFF";
    if (!dir_) GTEST_SKIP() << "the ffmpeg command-line tool is not installed (apt-get install ffmpeg)";
  }
  // Encodes jfk.wav with `f`'s arguments once; returns the fixture path.
  static std::string make(const Format& f) {
    std::string out = *dir_ + "/" + f.file;
    if (std::filesystem::exists(out)) return out;
    std::string args = "-i " + test::data_path("audio/jfk.wav") + " " + f.ffmpeg_args + " '" + out + "'";
    EXPECT_TRUE(test::ffmpeg(args)) << "ffmpeg " << args;
    return out;
  }
  static std::string* dir_;
  static std::vector<float>* reference_;
};
std::string* Formats::dir_ = nullptr;
std::vector<float>* Formats::reference_ = nullptr;

TEST_P(Formats, DecodesLikeTheWav) {
  const Format& f = GetParam();
  std::string path = make(f);
  std::vector<float> got = decode_audio_file(path);
  const std::vector<float>& ref = *reference_;
  if (f.lossless) {
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) ASSERT_EQ(got[i], ref[i]) << f.name << " sample " << i;
    return;
  }
  EXPECT_NEAR(double(got.size()), double(ref.size()), 0.01 * ref.size()) << f.name;
  int lag = 0;
  double corr = test::best_correlation(ref, got, 1200, &lag);
  EXPECT_GT(corr, 0.99) << f.name << " (lag " << lag << ")";
  double err = 0, power = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    int64_t j = int64_t(i) + lag;
    double y = j >= 0 && j < int64_t(got.size()) ? got[size_t(j)] : 0.0;
    err += (y - ref[i]) * (y - ref[i]), power += double(ref[i]) * ref[i];
  }
  EXPECT_LT(err / power, 0.01) << f.name;
  std::printf("[formats] %-22s samples %zu (wav %zu) lag %d corr %.5f relative mse %.2e\n", f.name, got.size(),
              ref.size(), lag, corr, err / power);
}

TEST_P(Formats, MemoryEqualsFileAndProbeNamesIt) {
  const Format& f = GetParam();
  std::string path = make(f), bytes = test::read_file(path);
  std::vector<float> from_file = decode_audio_file(path);
  EXPECT_EQ(decode_audio_memory(bytes.data(), bytes.size(), {}, f.file), from_file);
  ProbeInfo info = probe_audio_memory(bytes.data(), bytes.size(), {}, f.file);
  EXPECT_EQ(info.container, f.container);
  EXPECT_EQ(info.codec, f.codec);
  EXPECT_EQ(info.decoded_samples, int64_t(from_file.size()));
  EXPECT_GE(info.channels, 1);
  EXPECT_GE(info.sample_rate, 8000);
}

// A video file without an audio track is InvalidAudio that says so.
TEST_F(Formats, VideoOnlyIsAnError) {
  std::string path = *dir_ + "/video-only.mp4";
  ASSERT_TRUE(test::ffmpeg("-f lavfi -i testsrc=size=32x32:rate=5 -t 1 -c:v mpeg4 '" + path + "'"));
  try {
    decode_audio_file(path);
    ADD_FAILURE() << "decoded a video-only file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidAudio);
    EXPECT_NE(std::string(e.what()).find("no audio stream"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(All, Formats, ::testing::ValuesIn(kFormats),
                         [](const auto& info) { return std::string(info.param.name); });

// The committed FLAC is the lossless source of the committed ls-test.wav.
TEST(FormatsCommitted, LsTestFlacEqualsWav) {
  if (!audio_has_ffmpeg()) GTEST_SKIP() << "built with -DHARK_FFMPEG=OFF";
  std::vector<float> flac = decode_audio_file(test::data_path("audio/ls-test.flac"));
  std::vector<float> wav = decode_audio_file(test::data_path("audio/ls-test.wav"));
  EXPECT_EQ(flac, wav);
  EXPECT_EQ(wav.size(), 106640u);
}

TEST(FormatsCommitted, JfkMp3MatchesWav) {
  if (!audio_has_ffmpeg()) GTEST_SKIP() << "built with -DHARK_FFMPEG=OFF";
  std::vector<float> mp3 = decode_audio_file(test::data_path("audio/jfk.mp3"));
  std::vector<float> wav = decode_audio_file(test::data_path("audio/jfk.wav"));
  EXPECT_NEAR(double(mp3.size()), double(wav.size()), 0.01 * wav.size());
  EXPECT_GT(test::best_correlation(wav, mp3, 1200), 0.99);
}

TEST(FormatsCommitted, Aepyx8kResamplesToSameDuration) {
  ProbeInfo info = probe_audio_file(test::data_path("audio/aepyx-8k.wav"));
  EXPECT_EQ(info.sample_rate, 8000);
  EXPECT_EQ(info.codec, "pcm_s16le");
  std::string bytes = test::read_file(test::data_path("audio/aepyx-8k.wav"));
  size_t data = bytes.find("data");
  ASSERT_NE(data, std::string::npos);
  double source_frames = double(bytes.size() - data - 8) / (2 * info.channels);
  EXPECT_NEAR(double(info.decoded_samples), source_frames * 2, 2.0);
}

}  // namespace
}  // namespace hark
