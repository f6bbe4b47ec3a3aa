// Pure parsing: multipart bodies, JSON and form requests, base64, UTF-8 checks.
#include <gtest/gtest.h>

#include "serve/api_error.h"
#include "serve/base64.h"
#include "serve/multipart.h"
#include "serve/transcribe_request.h"

namespace hark::serve {
namespace {

std::string form(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& b = "XyZ") {
  std::string body;
  for (const auto& [name, value] : fields) {
    body += "--" + b + "\r\nContent-Disposition: form-data; name=\"" + name + "\"";
    if (name == "file") body += "; filename=\"a.wav\"\r\nContent-Type: audio/wav";
    body += "\r\n\r\n" + value + "\r\n";
  }
  return body + "--" + b + "--\r\n";
}

int status_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const ApiError& e) {
    if (message) *message = e.what();
    return e.status();
  }
  return 0;
}

TEST(Multipart, SplitsPartsWithNamesFilenamesAndTypes) {
  auto parts = parse_multipart(form({{"file", "RIFF\r\n--not-a-boundary"}, {"language", "de"}}), "XyZ");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "file");
  EXPECT_EQ(parts[0].filename, "a.wav");
  EXPECT_EQ(parts[0].content_type, "audio/wav");
  EXPECT_EQ(parts[0].data, "RIFF\r\n--not-a-boundary");
  EXPECT_EQ(parts[1].name, "language");
  EXPECT_EQ(parts[1].data, "de");
}

TEST(Multipart, IgnoresPreambleAndReadsQuotedBoundary) {
  std::string body = "preamble text\r\n" + form({{"language", "fr"}}, "a;b");
  EXPECT_EQ(multipart_boundary("multipart/form-data; boundary=\"a;b\""), "a;b");
  auto parts = parse_multipart(body, "a;b");
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].data, "fr");
}

TEST(Multipart, MalformedBodiesAreClear400s) {
  std::string msg;
  EXPECT_EQ(status_of([] { multipart_boundary("multipart/form-data"); }, &msg), 400);
  EXPECT_NE(msg.find("no boundary"), std::string::npos);
  EXPECT_EQ(status_of([] { multipart_boundary("multipart/form-data; boundary=" + std::string(71, 'a')); }), 400);
  EXPECT_EQ(status_of([] { parse_multipart("--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue", "XyZ"); }, &msg), 400);
  EXPECT_NE(msg.find("no closing boundary"), std::string::npos);
  EXPECT_EQ(status_of([] { parse_multipart("hello", "XyZ"); }, &msg), 400);
  EXPECT_NE(msg.find("never occurs"), std::string::npos);
  EXPECT_EQ(status_of([] { parse_multipart("--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--", "XyZ"); }, &msg), 400);
  EXPECT_NE(msg.find("Content-Disposition"), std::string::npos);
  EXPECT_EQ(status_of([] { parse_multipart("--XyZ\r\nno colon here\r\n\r\nv\r\n--XyZ--", "XyZ"); }), 400);
  EXPECT_EQ(status_of([] { parse_multipart("--XyZ garbage", "XyZ"); }), 400);
}

TEST(Multipart, MediaTypeIsCaseInsensitiveWithoutParameters) {
  EXPECT_EQ(media_type("Multipart/Form-Data; boundary=x"), "multipart/form-data");
  EXPECT_EQ(media_type(" application/json "), "application/json");
  EXPECT_EQ(media_type(""), "");
}

TEST(Base64, RoundTripsAndRejectsGarbage) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto decoded = base64_decode(base64_encode(s));
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(*decoded, s);
  }
  EXPECT_EQ(*base64_decode("aGVsbG8"), "hello");  // padding optional
  EXPECT_EQ(*base64_decode("aGVs\nbG8="), "hello");
  EXPECT_FALSE(base64_decode("a").has_value());
  EXPECT_FALSE(base64_decode("aGVsbG8=x").has_value());
  EXPECT_FALSE(base64_decode("!!!!").has_value());
}

TEST(Utf8, AcceptsValidAndRejectsMalformed) {
  EXPECT_TRUE(is_valid_utf8("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xc3"));            // truncated
  EXPECT_FALSE(is_valid_utf8("\xc0\xaf"));        // overlong
  EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));    // surrogate
  EXPECT_FALSE(is_valid_utf8("\xf8\x88\x80\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("\x80"));
}

TEST(JsonRequest, ReadsEveryField) {
  auto r = parse_json_request(R"({"file":"UklGRg==","model":"whisper-1","language":"de","prompt":"Hallo",
      "response_format":"verbose_json","temperature":0,"stream":false,"timestamp_granularities":["segment","word"],
      "beam_size":5,"vocabulary":["Sotto","SwiftUI"],"condition_on_previous_text":false,"no_speech_threshold":0.3,
      "without_timestamps":true,"vad":true,"vad_threshold":0.4,"vad_min_speech_ms":100,"faithful":true,"audio_ctx":768,"sample_len":100})",
                              Task::Translate);
  EXPECT_EQ(r.audio, "RIFF");
  EXPECT_EQ(r.model, "whisper-1");
  EXPECT_EQ(r.options.language, "de");
  EXPECT_EQ(r.options.task, Task::Translate);
  EXPECT_EQ(r.options.prompt, "Hallo");
  EXPECT_EQ(r.format, ResponseFormat::VerboseJson);
  ASSERT_EQ(r.options.temperatures.size(), 1u);
  EXPECT_EQ(r.options.temperatures[0], 0.0f);
  EXPECT_TRUE(r.options.word_timestamps);
  EXPECT_EQ(r.options.beam_size, 5);
  EXPECT_EQ(r.options.vocabulary, (std::vector<std::string>{"Sotto", "SwiftUI"}));
  EXPECT_FALSE(r.options.condition_on_previous_text);
  EXPECT_FLOAT_EQ(*r.options.no_speech_threshold, 0.3f);
  EXPECT_TRUE(r.options.without_timestamps);
  EXPECT_EQ(r.options.vad, VadMode::Gate);
  EXPECT_FLOAT_EQ(r.options.vad_threshold, 0.4f);
  EXPECT_EQ(r.options.vad_min_speech_ms, 100);
  EXPECT_TRUE(r.options.faithful);
  EXPECT_EQ(r.options.audio_ctx, 768);
  EXPECT_EQ(r.options.sample_len, 100);
}

TEST(JsonRequest, AudioAliasesAndDataUrls) {
  EXPECT_EQ(parse_json_request(R"({"audio":"UklGRg=="})", Task::Transcribe).audio, "RIFF");
  EXPECT_EQ(parse_json_request(R"({"input_audio":{"data":"UklGRg==","format":"wav"}})", Task::Transcribe).audio, "RIFF");
  auto r = parse_json_request(R"({"file":"data:audio/wav;base64,UklGRg=="})", Task::Transcribe);
  EXPECT_EQ(r.audio, "RIFF");
  EXPECT_EQ(r.audio_content_type, "audio/wav");
  EXPECT_EQ(parse_json_request(R"({"file":"UklGRg==","language":"auto"})", Task::Transcribe).options.language, "");
  // Defaults: the fallback ladder, greedy, json.
  auto d = parse_json_request(R"({"file":"UklGRg==","unknown_field":{"x":1},"prompt":null})", Task::Transcribe);
  EXPECT_EQ(d.options.temperatures.size(), 6u);
  EXPECT_EQ(d.format, ResponseFormat::Json);
}

TEST(JsonRequest, BadFieldsNameTheField) {
  struct Case { const char* body; const char* needle; };
  const Case cases[] = {
      {R"({"file":"UklGRg==","temperature":-0.5})", "'temperature' must be between 0 and 1"},
      {R"({"file":"UklGRg==","temperature":"hot"})", "'temperature' must be a number"},
      {R"({"file":"UklGRg==","beam_size":5,"temperature":0.4})", "'beam_size' requires temperature 0"},
      {R"({"file":"UklGRg==","beam_size":0})", "'beam_size' must be between 1 and 16"},
      {R"({"file":"UklGRg==","beam_size":2.5})", "'beam_size' must be an integer"},
      {R"({"file":"UklGRg==","response_format":"xml"})", "'response_format' must be one of"},
      {R"({"file":"UklGRg==","stream":"maybe"})", "'stream' must be true or false"},
      {R"({"file":"UklGRg==","timestamp_granularities":["char"]})", "accepts 'segment' and 'word'"},
      {R"({"file":"UklGRg==","vad_threshold":1.5})", "'vad_threshold' must be between 0 and 1"},
      {R"({"file":"UklGRg==","audio_ctx":5000})", "'audio_ctx' must be between 1 and 1500"},
      {R"({"file":"UklGRg==","sample_len":0})", "'sample_len' must be between 1 and 224"},
      {R"({"file":"UklGRg==","sample_len":225})", "'sample_len' must be between 1 and 224"},
      {R"({"file":"UklGRg==","language":42})", "'language' must be a string"},
      {R"({"file":"not base64!"})", "not valid base64"},
      {R"({"file":"data:audio/wav,UklGRg=="})", "base64 data: URL"},
      {R"({"file":""})", "is empty"},
      {R"({"language":"en"})", "missing audio"},
      {R"([1,2,3])", "must be a JSON object"},
      {R"({"file": )", "not valid JSON"},
      {R"({"file":"UklGRg==","stream":true,"response_format":"srt"})", "'stream' works with"},
      {R"({"file":"UklGRg==","vocabulary":[1,2]})", "'vocabulary' must be a string"},
      {R"({"input_audio":"UklGRg=="})", "'input_audio' must be an object"},
  };
  for (const auto& c : cases) {
    std::string msg;
    EXPECT_EQ(status_of([&] { parse_json_request(c.body, Task::Transcribe); }, &msg), 400) << c.body;
    EXPECT_NE(msg.find(c.needle), std::string::npos) << c.body << " → " << msg;
  }
}

TEST(JsonRequest, RejectsDeepNestingAndInvalidUtf8) {
  std::string deep = R"({"file":"UklGRg==","x":)" + std::string(10000, '[') + std::string(10000, ']') + "}";
  std::string msg;
  EXPECT_EQ(status_of([&] { parse_json_request(deep, Task::Transcribe); }, &msg), 400);
  EXPECT_NE(msg.find("nested deeper"), std::string::npos);
  EXPECT_EQ(status_of([&] { parse_json_request("{\"file\":\"UklGRg==\",\"prompt\":\"\xff\xfe\"}", Task::Transcribe); }), 400);
}

TEST(FormRequest, ReadsFieldsAsStrings) {
  auto parts = parse_multipart(form({{"file", "RIFFdata"}, {"temperature", "0.2"}, {"stream", "true"},
                                     {"timestamp_granularities[]", "word"}, {"timestamp_granularities[]", "segment"},
                                     {"vocabulary", "Sotto, SwiftUI ,Metal"}, {"beam_size", "1"}}),
                               "XyZ");
  auto r = parse_form_request(parts, Task::Transcribe);
  EXPECT_EQ(r.audio, "RIFFdata");
  EXPECT_EQ(r.audio_name, "a.wav");
  EXPECT_FLOAT_EQ(r.options.temperatures.at(0), 0.2f);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.options.word_timestamps);
  EXPECT_EQ(r.options.vocabulary, (std::vector<std::string>{"Sotto", "SwiftUI", "Metal"}));
}

TEST(FormRequest, MissingOrDuplicateFileAndInvalidUtf8) {
  std::string msg;
  EXPECT_EQ(status_of([&] { parse_form_request(parse_multipart(form({{"language", "en"}}), "XyZ"), Task::Transcribe); }, &msg), 400);
  EXPECT_NE(msg.find("missing 'file'"), std::string::npos);
  EXPECT_EQ(status_of([&] { parse_form_request(parse_multipart(form({{"file", "a"}, {"file", "b"}}), "XyZ"), Task::Transcribe); }, &msg), 400);
  EXPECT_NE(msg.find("appears twice"), std::string::npos);
  EXPECT_EQ(status_of([&] { parse_form_request(parse_multipart(form({{"file", "a"}, {"prompt", "\xc3\x28"}}), "XyZ"), Task::Transcribe); }, &msg), 400);
  EXPECT_NE(msg.find("UTF-8"), std::string::npos);
  EXPECT_EQ(status_of([&] { parse_form_request(parse_multipart(form({{"file", "a"}, {"temperature", "1e"}}), "XyZ"), Task::Transcribe); }), 400);
}

}  // namespace
}  // namespace hark::serve
