// A corpus of broken, hostile and out-of-limit inputs, each expecting its error code and
// an "[audio]" message — never a crash, a hang or a huge allocation (this binary also
// runs under ASan/UBSan in CI).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include "audio/audio.h"
#include "audio_test_util.h"
#include "test_support.h"

namespace hark {
namespace {

using test::put16;
using test::put32;

std::string riff(const std::string& chunks) {
  std::string wav = "RIFF";
  put32(wav, uint32_t(chunks.size() + 4));
  return wav + "WAVE" + chunks;
}
std::string chunk(const char* id, const std::string& body) {
  std::string s;
  test::put_chunk(s, id, body);
  return s;
}
std::string raw_chunk(const char* id, uint32_t size, const std::string& body = {}) {
  std::string s(id, 4);
  put32(s, size);
  return s + body;
}
std::string pcm16(double seconds, int rate = 16000, int channels = 1) {
  return test::encode_samples(std::vector<double>(size_t(seconds * rate) * channels, 0.25), 1, 16);
}
// A 'fmt ' body with every field given (so absurd values can be written).
std::string fmt_raw(uint16_t tag, uint16_t channels, uint32_t rate, uint16_t block, uint16_t bits) {
  std::string f;
  put16(f, tag), put16(f, channels), put32(f, rate), put32(f, rate * block), put16(f, block), put16(f, bits);
  return f;
}
std::string good_fmt() { return fmt_raw(1, 1, 16000, 2, 16); }
std::string float_wav_with(float bad) {
  std::vector<double> v(3200, 0.1);
  std::string data = test::encode_samples(v, 3, 32);
  std::memcpy(data.data() + 400, &bad, 4);
  return riff(chunk("fmt ", fmt_raw(3, 1, 16000, 4, 32)) + chunk("data", data));
}
std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = char(rng() & 0xFF);
  return s;
}
std::string file(const char* name) { return test::read_file(test::data_path(std::string("audio/") + name)); }
std::string aiff_with(uint16_t channels, uint32_t frames, uint16_t bits) {
  std::string comm;
  auto be16 = [&](uint16_t v) { comm.push_back(char(v >> 8)), comm.push_back(char(v & 0xFF)); };
  be16(channels), be16(uint16_t(frames >> 16)), be16(uint16_t(frames & 0xFFFF)), be16(bits);
  comm += std::string("\x40\x0C\xFA\x00\x00\x00\x00\x00\x00\x00", 10);  // 16000 as 80-bit float
  std::string body = "AIFF" + std::string("COMM") + std::string("\x00\x00\x00\x12", 4) + comm + "SSND" +
                     std::string("\x00\x00\x10\x08", 4) + std::string(8, '\0') + std::string(4096, '\x10');
  std::string out = "FORM";
  out.push_back(char(body.size() >> 24)), out.push_back(char(body.size() >> 16));
  out.push_back(char(body.size() >> 8)), out.push_back(char(body.size()));
  return out + body;
}

struct Case {
  const char* name;
  std::function<std::string()> bytes;
  ErrorCode expected;
  AudioLimits limits = {};
  const char* hint = "upload";
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"empty", [] { return std::string(); }, ErrorCode::InvalidAudio},
      {"riff_magic_only", [] { return std::string("RIFF"); }, ErrorCode::InvalidAudio},
      {"riff_header_no_chunks", [] { return riff(""); }, ErrorCode::InvalidAudio},
      {"fmt_without_data", [] { return riff(chunk("fmt ", good_fmt())); }, ErrorCode::InvalidAudio},
      {"data_without_fmt", [] { return riff(chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"fmt_too_small", [] { return riff(chunk("fmt ", good_fmt().substr(0, 10)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"fmt_truncated", [] { return riff(raw_chunk("fmt ", 16, good_fmt().substr(0, 9))); }, ErrorCode::InvalidAudio},
      {"zero_channels", [] { return riff(chunk("fmt ", fmt_raw(1, 0, 16000, 0, 16)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"65535_channels", [] { return riff(chunk("fmt ", fmt_raw(1, 65535, 16000, 65534, 16)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"zero_rate", [] { return riff(chunk("fmt ", fmt_raw(1, 1, 0, 2, 16)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"rate_4e9", [] { return riff(chunk("fmt ", fmt_raw(1, 1, 4000000000u, 2, 16)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"zero_bits", [] { return riff(chunk("fmt ", fmt_raw(1, 1, 16000, 2, 0)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"pcm_40_bits", [] { return riff(chunk("fmt ", fmt_raw(1, 1, 16000, 5, 40)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"float_16_bits", [] { return riff(chunk("fmt ", fmt_raw(3, 1, 16000, 2, 16)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"block_align_mismatch", [] { return riff(chunk("fmt ", fmt_raw(1, 2, 16000, 3, 16)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"block_align_zero", [] { return riff(chunk("fmt ", fmt_raw(1, 1, 16000, 0, 16)) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"extensible_short_fmt", [] { return riff(chunk("fmt ", fmt_raw(0xFFFE, 1, 16000, 2, 16) + std::string(2, '\0')) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"extensible_valid_bits_too_many",
       [] {
         std::string f = fmt_raw(0xFFFE, 1, 16000, 2, 16);
         put16(f, 22), put16(f, 24), put32(f, 4), put16(f, 1);
         f += std::string("\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71", 14);
         return riff(chunk("fmt ", f) + chunk("data", pcm16(1)));
       },
       ErrorCode::InvalidAudio},
      {"two_fmt_chunks", [] { return riff(chunk("fmt ", good_fmt()) + chunk("fmt ", good_fmt()) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"float_nan_sample", [] { return float_wav_with(std::nanf("")); }, ErrorCode::InvalidAudio},
      {"float_inf_sample", [] { return float_wav_with(-INFINITY); }, ErrorCode::InvalidAudio},
      {"wav_50ms", [] { return riff(chunk("fmt ", good_fmt()) + chunk("data", pcm16(0.05))); }, ErrorCode::AudioTooShort},
      {"wav_no_samples", [] { return riff(chunk("fmt ", good_fmt()) + chunk("data", "")); }, ErrorCode::AudioTooShort},
      {"wav_partial_frame_only", [] { return riff(chunk("fmt ", fmt_raw(1, 2, 16000, 4, 16)) + chunk("data", "abc")); }, ErrorCode::AudioTooShort},
      {"wav_99ms_at_44k", [] { return riff(chunk("fmt ", fmt_raw(1, 1, 44100, 2, 16)) + chunk("data", pcm16(0.099, 44100))); }, ErrorCode::AudioTooShort},
      {"over_duration_limit", [] { return riff(chunk("fmt ", good_fmt()) + chunk("data", pcm16(2))); }, ErrorCode::TooLarge, {.max_seconds = 1.0}},
      {"fmt_size_absurd", [] { return riff(raw_chunk("fmt ", 0xFFFFFF00u, good_fmt()) + chunk("data", pcm16(1))); }, ErrorCode::InvalidAudio},
      {"over_byte_limit", [] { return riff(chunk("fmt ", good_fmt()) + chunk("data", pcm16(1))); }, ErrorCode::TooLarge, {.max_bytes = 1000}},
      {"wav_codec_mp3_garbage", [] { return riff(chunk("fmt ", fmt_raw(0x55, 1, 16000, 1, 0)) + chunk("data", random_bytes(4000, 1))); }, ErrorCode::InvalidAudio},
      {"wav_mulaw_zero_channels", [] { return riff(chunk("fmt ", fmt_raw(7, 0, 8000, 1, 8)) + chunk("data", random_bytes(4000, 2))); }, ErrorCode::InvalidAudio},
      {"random_4k", [] { return random_bytes(4096, 3); }, ErrorCode::InvalidAudio},
      {"zeros_4k", [] { return std::string(4096, '\0'); }, ErrorCode::InvalidAudio},
      {"text", [] { return std::string(2000, 'a') + " hello world\n"; }, ErrorCode::UnsupportedFormat, {}, "notes.txt"},
      {"png_image",
       [] { return std::string("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00\x90\x91\x68\x36", 33) + std::string(200, '\0'); },
       ErrorCode::UnsupportedFormat, {}, "picture.png"},
      {"hls_playlist_pointing_at_local_file",
       [] { return std::string("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n"); },
       ErrorCode::UnsupportedFormat, {}, "list.m3u8"},
      {"ffconcat_script", [] { return std::string("ffconcat version 1.0\nfile '/etc/passwd'\n"); }, ErrorCode::UnsupportedFormat, {}, "x.ffconcat"},
      {"mp3_first_300_bytes", [] { return file("jfk.mp3").substr(0, 300); }, ErrorCode::InvalidAudio, {}, "jfk.mp3"},
      {"mp3_first_900_bytes", [] { return file("jfk.mp3").substr(0, 900); }, ErrorCode::AudioTooShort, {}, "jfk.mp3"},
      {"flac_first_1000_bytes", [] { return file("ls-test.flac").substr(0, 1000); }, ErrorCode::InvalidAudio, {}, "ls.flac"},
      {"flac_9000_bytes_under_min_half_second", [] { return file("ls-test.flac").substr(0, 9000); }, ErrorCode::AudioTooShort, {.min_seconds = 0.5}, "ls.flac"},
      {"flac_magic_only", [] { return std::string("fLaC"); }, ErrorCode::InvalidAudio, {}, "x.flac"},
      {"ogg_page_header_only", [] { return std::string("OggS\x00\x02", 6) + std::string(40, '\0'); }, ErrorCode::InvalidAudio, {}, "x.ogg"},
      {"aiff_zero_channels", [] { return aiff_with(0, 2048, 16); }, ErrorCode::InvalidAudio, {}, "x.aiff"},
      {"aiff_absurd_bits", [] { return aiff_with(1, 2048, 999); }, ErrorCode::InvalidAudio, {}, "x.aiff"},
      {"mp3_over_duration_limit", [] { return file("jfk.mp3"); }, ErrorCode::TooLarge, {.max_seconds = 5.0}, "jfk.mp3"},
  };
  return all;
}

class Malformed : public ::testing::TestWithParam<size_t> {};

TEST_P(Malformed, GivesItsErrorCode) {
  const Case& c = cases()[GetParam()];
  std::string bytes = c.bytes();
  try {
    std::vector<float> out = decode_audio_memory(bytes.data(), bytes.size(), c.limits, c.hint);
    ADD_FAILURE() << c.name << ": decoded " << out.size() << " samples, expected " << to_string(c.expected);
  } catch (const Error& e) {
    RecordProperty("message", e.what());
    // Without FFmpeg, whatever is not a PCM WAV is refused with a message naming the option.
    const bool refused_without_ffmpeg = !audio_has_ffmpeg() && e.code() == ErrorCode::UnsupportedFormat &&
                                        std::string(e.what()).find("HARK_FFMPEG") != std::string::npos;
    if (!refused_without_ffmpeg) EXPECT_EQ(e.code(), c.expected) << c.name << ": " << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("[audio]", 0), 0u) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, Malformed, ::testing::Range<size_t>(0, cases().size()),
                         [](const auto& info) { return std::string(cases()[info.param].name); });

TEST(MalformedCorpus, HasAtLeastThirtyCases) { EXPECT_GE(cases().size(), 30u); }

TEST(MalformedFiles, MissingAndDirectory) {
  EXPECT_THROW(decode_audio_file("/nonexistent/hark.wav"), Error);
  try {
    decode_audio_file(test::data_path("audio"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  }
}

// Error messages tell the user what would have worked.
TEST(MalformedMessages, NameAcceptedFormats) {
  std::string junk = random_bytes(4096, 9);
  try {
    decode_audio_memory(junk.data(), junk.size(), {}, "junk.bin");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("junk.bin"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("accepted: WAV"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hark
