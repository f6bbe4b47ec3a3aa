// The native WAV parser: exact sample values for every sample format, the chunk layouts
// real writers produce, channel averaging.
#include <gtest/gtest.h>

#include <cstring>

#include "audio/audio.h"
#include "audio_test_util.h"
#include "test_support.h"

namespace hark {
namespace {

using test::make_wav;

std::vector<float> decode(const std::string& bytes, AudioLimits limits = {}) {
  return decode_audio_memory(bytes.data(), bytes.size(), limits, "test.wav");
}

// jfk.wav is 16 kHz mono PCM16: the decode must be bit-exact sample / 32768.
TEST(Wav, Jfk16kMonoIsBitExact) {
  std::string bytes = test::read_file(test::data_path("audio/jfk.wav"));
  size_t data = bytes.find("data");
  ASSERT_NE(data, std::string::npos);
  size_t n = (bytes.size() - data - 8) / 2;
  std::vector<float> got = decode_audio_file(test::data_path("audio/jfk.wav"));
  ASSERT_EQ(got.size(), n);
  for (size_t i = 0; i < n; ++i) {
    int16_t s;
    std::memcpy(&s, bytes.data() + data + 8 + 2 * i, 2);
    ASSERT_EQ(got[i], static_cast<float>(s) / 32768.0f) << "sample " << i;
  }
}

// Each PCM width, with values at the edges of its range.
TEST(Wav, EveryPcmWidthExact) {
  struct Width { int bits; double lsb; };
  for (Width w : {Width{8, 1 / 128.0}, Width{16, 1 / 32768.0}, Width{24, 1 / 8388608.0}, Width{32, 1 / 2147483648.0}}) {
    std::vector<double> v(1600);
    for (size_t i = 0; i < v.size(); ++i) v[i] = ((int(i) % 7) - 3) * 0.25;  // -0.75 .. 0.75
    v[0] = -1.0;
    v[1] = 1.0 - w.lsb;  // the largest positive value
    std::vector<float> got = decode(make_wav(v, 1, 16000, w.bits));
    ASSERT_EQ(got.size(), v.size()) << w.bits;
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(v[i])) << w.bits << "-bit sample " << i;
  }
}

// Mono 16-bit PCM has a fast path of its own: every one of the 65 536 values decodes to
// s / 32768 exactly, as the general path (two equal channels averaged) decodes it too.
TEST(Wav, EverySixteenBitValueOnBothPaths) {
  std::vector<double> v(65536);
  for (int i = 0; i < 65536; ++i) v[i] = (i - 32768) / 32768.0;
  const std::vector<float> mono = decode(make_wav(v, 1, 16000, 16));
  std::vector<double> stereo(2 * v.size());
  for (size_t i = 0; i < v.size(); ++i) stereo[2 * i] = stereo[2 * i + 1] = v[i];
  const std::vector<float> general = decode(make_wav(stereo, 2, 16000, 16));
  ASSERT_EQ(mono.size(), v.size());
  ASSERT_EQ(general.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    ASSERT_EQ(mono[i], static_cast<float>(static_cast<int>(i) - 32768) / 32768.0f) << "value " << i;
    ASSERT_EQ(mono[i], general[i]) << "value " << i;
  }
}

TEST(Wav, FloatFormatsExact) {
  std::vector<double> v = test::sine(440, 16000, 0.2, 0.9);
  v[5] = 1.5;  // float WAVs may exceed full scale; kept as is
  for (int bits : {32, 64}) {
    std::vector<float> got = decode(make_wav(v, 1, 16000, bits, 3));
    ASSERT_EQ(got.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(v[i])) << bits;
  }
}

// WAVE_FORMAT_EXTENSIBLE: 24 valid bits in 32-bit containers, and float.
TEST(Wav, Extensible) {
  auto extensible = [](uint16_t sub_tag, int channels, int container_bits, int valid_bits, const std::string& data) {
    std::string f = test::fmt_body(0xFFFE, channels, 16000, container_bits);
    test::put16(f, 22), test::put16(f, uint16_t(valid_bits)), test::put32(f, channels == 1 ? 4 : 3);
    test::put16(f, sub_tag);
    f += std::string("\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71", 14);
    std::string body = "WAVE";
    test::put_chunk(body, "fmt ", f);
    test::put_chunk(body, "data", data);
    std::string wav = "RIFF";
    test::put32(wav, uint32_t(body.size()));
    return wav + body;
  };
  std::vector<double> v(2000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = (int(i % 100) - 50) / 64.0;
  std::vector<float> got = decode(extensible(1, 1, 32, 24, test::encode_samples(v, 1, 32)));
  ASSERT_EQ(got.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], float(v[i]));
  got = decode(extensible(3, 1, 32, 32, test::encode_samples(v, 3, 32)));
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], float(v[i]));
  // Stereo extensible, averaged.
  std::vector<double> st;
  for (double x : v) st.push_back(x), st.push_back(-x / 2);
  got = decode(extensible(1, 2, 16, 16, test::encode_samples(st, 1, 16)));
  ASSERT_EQ(got.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], float(v[i] / 4));
}

// Layouts from real writers: LIST/fact chunks before and after the data, an odd-sized
// chunk with its pad byte, 'fmt ' after 'data', and streaming sizes 0 / 0xFFFFFFFF.
TEST(Wav, OddChunkLayouts) {
  std::vector<double> v = test::sine(300, 16000, 0.25, 0.5);
  std::string fmt = test::fmt_body(1, 1, 16000, 16), data = test::encode_samples(v, 1, 16);
  auto riff = [](const std::string& body, uint32_t size) {
    std::string wav = "RIFF";
    test::put32(wav, size);
    return wav + "WAVE" + body;
  };
  auto chunk = [](const char* id, const std::string& b) {
    std::string s;
    test::put_chunk(s, id, b);
    return s;
  };
  auto raw_chunk = [](const char* id, uint32_t size, const std::string& b) {
    std::string s(id, 4);
    test::put32(s, size);
    return s + b;
  };
  std::string list = chunk("LIST", std::string("INFOISFT\x05\x00\x00\x00hark\x00\x00", 18));
  std::string odd = chunk("junk", "abc");  // 3 bytes + pad byte
  std::string fact = chunk("fact", std::string("\x10\x0f\x00\x00", 4));
  std::vector<std::pair<std::string, std::string>> layouts = {
      {"list-fact-before", riff(list + chunk("fmt ", fmt) + fact + odd + chunk("data", data), 0)},
      {"data-not-last", riff(chunk("fmt ", fmt) + chunk("data", data) + list + odd, 1234)},
      {"fmt-after-data", riff(chunk("data", data) + chunk("fmt ", fmt), 0xFFFFFFFF)},
      {"streaming-size-0", riff(chunk("fmt ", fmt) + raw_chunk("data", 0, data), 0)},
      {"streaming-size-ffffffff", riff(chunk("fmt ", fmt) + raw_chunk("data", 0xFFFFFFFF, data), 0xFFFFFFFF)},
      {"data-size-too-large", riff(chunk("fmt ", fmt) + raw_chunk("data", 1 << 30, data), 36)},
      {"trailing-partial-sample", riff(chunk("fmt ", fmt) + raw_chunk("data", 0, data + "\x01"), 0)},
  };
  for (auto& [name, bytes] : layouts) {
    std::vector<float> got = decode(bytes);
    ASSERT_EQ(got.size(), v.size()) << name;
    for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(got[i], float(std::lround(v[i] * 32768) / 32768.0)) << name;
  }
}

TEST(Wav, Rf64WithDs64) {
  std::vector<double> v = test::sine(300, 16000, 0.2);
  std::string data = test::encode_samples(v, 1, 16);
  std::string ds64;
  for (uint64_t x : {uint64_t(0), uint64_t(data.size()), uint64_t(v.size())}) test::put32(ds64, uint32_t(x)), test::put32(ds64, uint32_t(x >> 32));
  test::put32(ds64, 0);
  std::string body = "WAVE";
  test::put_chunk(body, "ds64", ds64);
  test::put_chunk(body, "fmt ", test::fmt_body(1, 1, 16000, 16));
  body += "data";
  test::put32(body, 0xFFFFFFFF);
  body += data + "trailing junk that is not audio";
  std::string wav = "RF64";
  test::put32(wav, 0xFFFFFFFF);
  std::vector<float> got = decode(wav + body);
  EXPECT_EQ(got.size(), v.size());
}

TEST(Wav, ChannelsAreAveraged) {
  std::vector<double> left = test::sine(500, 16000, 0.5, 0.5), st, six;
  for (double x : left) st.push_back(x), st.push_back(-x);  // opposite phase cancels
  for (float s : decode(make_wav(st, 2, 16000, 16))) ASSERT_EQ(s, 0.0f);
  for (size_t i = 0; i < left.size(); ++i)
    for (int c = 0; c < 6; ++c) six.push_back(c == 2 ? left[i] : 0.0);  // only one of 6 channels
  std::vector<float> got = decode(make_wav(six, 6, 16000, 32, 3));
  ASSERT_EQ(got.size(), left.size());
  for (size_t i = 0; i < left.size(); ++i) ASSERT_NEAR(got[i], left[i] / 6, 1e-7);
}

TEST(Wav, ProbeReportsHeader) {
  std::string bytes = make_wav(test::sine(440, 44100, 0.5), 1, 44100, 24);
  ProbeInfo info = probe_audio_memory(bytes.data(), bytes.size());
  EXPECT_EQ(info.container, "wav");
  EXPECT_EQ(info.codec, "pcm_s24le");
  EXPECT_EQ(info.channels, 1);
  EXPECT_EQ(info.sample_rate, 44100);
  EXPECT_NEAR(info.decoded_samples, 8000, 2);
  EXPECT_NEAR(info.duration_s, 0.5, 0.001);
}

}  // namespace
}  // namespace hark
