// A catalogue of bad requests, each expecting its status and message, with the server
// still healthy after every one of them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "fake_engine.h"
#include "serve/base64.h"

namespace hark::serve::test {
namespace {

using json = nlohmann::json;

std::string multipart(const std::vector<std::pair<std::string, std::string>>& fields, const std::string& b = "B0und") {
  std::string body;
  for (const auto& [name, value] : fields) {
    body += "--" + b + "\r\nContent-Disposition: form-data; name=\"" + name + "\"";
    if (name == "file") body += "; filename=\"clip.wav\"";
    body += "\r\n\r\n" + value + "\r\n";
  }
  return body + "--" + b + "--\r\n";
}
const std::string kMultipart = "multipart/form-data; boundary=B0und";

// Sends raw bytes and returns the status code of the reply (0 when the server closed
// the connection without one).
int raw_exchange(int port, const std::string& bytes, int stall_ms = 0, std::string* reply = nullptr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return -1;
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  if (stall_ms) std::this_thread::sleep_for(std::chrono::milliseconds(stall_ms));
  std::string in;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof buf, 0)) > 0) {
    in.append(buf, n);
    if (in.find("\r\n\r\n") != std::string::npos && in.size() > 200) break;
  }
  close(fd);
  if (reply) *reply = in;
  if (in.rfind("HTTP/1.1 ", 0) != 0) return 0;
  return std::stoi(in.substr(9, 3));
}

struct BadRequest {
  std::string name, method, path, content_type, body;
  int status;
  std::string needle;  // expected inside error.message
};

class BadRequests : public ServerFixture {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.max_upload_bytes = 1 << 20;
    o.max_audio_sec = 10;
    o.max_sessions = 3;
    o.read_timeout_sec = 1;
    o.upload_timeout_sec = 2;
    start_server(o);
  }
  void expect_healthy() {
    auto r = client().Get("/health");
    ASSERT_TRUE(r) << "server stopped answering";
    EXPECT_EQ(r->status, 200);
  }
  std::string open_session(const std::string& params = "{}") {
    auto r = client().Post("/v1/audio/sessions", params, "application/json");
    EXPECT_EQ(r->status, 200) << r->body;
    return json::parse(r->body)["id"];
  }
};

TEST_F(BadRequests, Catalogue) {
  const std::string wav = make_wav(1.0);
  const std::string b64 = base64_encode(wav);
  const std::string T = "/v1/audio/transcriptions";
  const std::string finished = open_session();
  {
    std::string pcm(16000 * 4, '\0');
    ASSERT_EQ(client().Post("/v1/audio/sessions/" + finished + "/audio", pcm, "audio/pcm;rate=16000")->status, 200);
    ASSERT_EQ(client().Post("/v1/audio/sessions/" + finished + "/finish", "", "application/json")->status, 200);
  }
  const std::string live = open_session();
  const float nan_sample = std::nanf("");
  const std::string nan_chunk(reinterpret_cast<const char*>(&nan_sample), 4);
  const std::vector<BadRequest> cases = {
      {"text content type", "POST", T, "text/plain", "hello", 415, "is not accepted"},
      {"no content type", "POST", T, "", "hello", 415, "is not accepted"},
      {"urlencoded form", "POST", T, "application/x-www-form-urlencoded", "file=abc", 415, "multipart/form-data"},
      {"xml", "POST", T, "application/xml", "<file/>", 415, "is not accepted"},
      {"multipart without file", "POST", T, kMultipart, multipart({{"language", "en"}}), 400, "missing 'file'"},
      {"multipart empty file", "POST", T, kMultipart, multipart({{"file", ""}}), 400, "is empty"},
      {"multipart two files", "POST", T, kMultipart, multipart({{"file", wav}, {"file", wav}}), 400, "appears twice"},
      {"multipart no boundary param", "POST", T, "multipart/form-data", multipart({{"file", wav}}), 400, "no boundary"},
      {"multipart boundary mismatch", "POST", T, "multipart/form-data; boundary=other", multipart({{"file", wav}}), 400, "never occurs"},
      {"multipart unterminated", "POST", T, kMultipart, "--B0und\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nRIFF", 400, "no closing boundary"},
      {"multipart part without disposition", "POST", T, kMultipart, "--B0und\r\nContent-Type: audio/wav\r\n\r\nRIFF\r\n--B0und--", 400, "Content-Disposition"},
      {"multipart part without name", "POST", T, kMultipart, "--B0und\r\nContent-Disposition: form-data\r\n\r\nx\r\n--B0und--", 400, "no name"},
      {"multipart boundary too long", "POST", T, "multipart/form-data; boundary=" + std::string(80, 'x'), "x", 400, "1 to 70"},
      {"json syntax error", "POST", T, "application/json", "{\"file\": ", 400, "not valid JSON"},
      {"json not an object", "POST", T, "application/json", "[\"file\"]", 400, "must be a JSON object"},
      {"json without audio", "POST", T, "application/json", R"({"language":"en"})", 400, "missing audio"},
      {"bad base64", "POST", T, "application/json", R"({"file":"@@@not base64@@@"})", 400, "not valid base64"},
      {"data url without base64", "POST", T, "application/json", R"({"file":"data:audio/wav,abc"})", 400, "base64 data: URL"},
      {"input_audio not object", "POST", T, "application/json", R"({"input_audio":"abc"})", 400, "must be an object"},
      {"undecodable audio", "POST", T, kMultipart, multipart({{"file", "this is not audio at all, just text"}}), 400, "cannot decode"},
      {"undecodable base64 audio", "POST", T, "application/json", json{{"file", base64_encode("garbage bytes here")}}.dump(), 400, "cannot decode"},
      {"too short", "POST", T, kMultipart, multipart({{"file", make_wav(0.05)}}), 400, "shorter than 0.1 s"},
      {"unsupported rate", "POST", T, kMultipart, multipart({{"file", make_wav(1.0, 8000)}}), 400, "16 kHz"},
      {"negative temperature", "POST", T, kMultipart, multipart({{"file", wav}, {"temperature", "-0.2"}}), 400, "'temperature' must be between 0 and 1"},
      {"temperature above 1", "POST", T, "application/json", json{{"file", b64}, {"temperature", 1.5}}.dump(), 400, "'temperature' must be between 0 and 1"},
      {"temperature not a number", "POST", T, kMultipart, multipart({{"file", wav}, {"temperature", "warm"}}), 400, "must be a number"},
      {"beam with temperature", "POST", T, kMultipart, multipart({{"file", wav}, {"beam_size", "5"}, {"temperature", "0.5"}}), 400, "requires temperature 0"},
      {"beam size zero", "POST", T, "application/json", json{{"file", b64}, {"beam_size", 0}}.dump(), 400, "'beam_size' must be between 1 and 16"},
      {"unknown response format", "POST", T, kMultipart, multipart({{"file", wav}, {"response_format", "docx"}}), 400, "'response_format' must be one of"},
      {"bad granularity", "POST", T, kMultipart, multipart({{"file", wav}, {"timestamp_granularities[]", "phoneme"}}), 400, "accepts 'segment' and 'word'"},
      {"stream with srt", "POST", T, kMultipart, multipart({{"file", wav}, {"stream", "true"}, {"response_format", "srt"}}), 400, "'stream' works with"},
      {"stream not bool", "POST", T, "application/json", json{{"file", b64}, {"stream", "yes please"}}.dump(), 400, "must be true or false"},
      {"invalid utf-8 prompt (multipart)", "POST", T, kMultipart, multipart({{"file", wav}, {"prompt", "caf\xe9"}}), 400, "not valid UTF-8"},
      {"invalid utf-8 prompt (json)", "POST", T, "application/json", "{\"file\":\"" + b64 + "\",\"prompt\":\"caf\xe9\"}", 400, "not valid JSON"},
      {"vad threshold out of range", "POST", T, kMultipart, multipart({{"file", wav}, {"vad_threshold", "2"}}), 400, "'vad_threshold'"},
      {"audio_ctx zero", "POST", T, "application/json", json{{"file", b64}, {"audio_ctx", 0}}.dump(), 400, "'audio_ctx' must be between 1 and 1500"},
      {"sample_len too long", "POST", T, kMultipart, multipart({{"file", wav}, {"sample_len", "500"}}), 400, "'sample_len' must be between 1 and 224"},
      {"language too long", "POST", T, kMultipart, multipart({{"file", wav}, {"language", std::string(40, 'x')}}), 400, "'language' is too long"},
      {"deeply nested json", "POST", T, "application/json", "{\"a\":" + std::string(5000, '[') + std::string(5000, ']') + "}", 400, "nested deeper"},
      {"huge json", "POST", T, "application/json", "{\"file\":\"" + std::string(2 << 20, 'A') + "\"}", 413, "larger than the 1 MB limit"},
      {"audio over the duration limit", "POST", T, kMultipart, multipart({{"file", make_wav(11.0)}}), 413, "the limit is 10 s"},
      {"translation without file", "POST", "/v1/audio/translations", kMultipart, multipart({{"model", "whisper-1"}}), 400, "missing 'file'"},
      {"unknown session audio", "POST", "/v1/audio/sessions/sess_nope/audio", "audio/pcm;rate=16000", std::string(64, '\0'), 404, "no session 'sess_nope'"},
      {"unknown session finish", "POST", "/v1/audio/sessions/sess_nope/finish", "application/json", "", 404, "no session"},
      {"unknown session delete", "DELETE", "/v1/audio/sessions/sess_nope", "", "", 404, "no session"},
      {"finished session audio", "POST", "/v1/audio/sessions/" + finished + "/audio", "audio/pcm;rate=16000", std::string(64, '\0'), 409, "is finished"},
      {"finished session finish", "POST", "/v1/audio/sessions/" + finished + "/finish", "application/json", "", 409, "is finished"},
      {"pcm chunk not whole floats", "POST", "/v1/audio/sessions/" + live + "/audio", "audio/pcm;rate=16000", "abcde", 400, "whole number of float32"},
      {"pcm chunk at 8 kHz", "POST", "/v1/audio/sessions/" + live + "/audio", "audio/pcm;rate=8000", std::string(64, '\0'), 415, "must be 16 kHz"},
      {"pcm chunk with NaN", "POST", "/v1/audio/sessions/" + live + "/audio", "audio/pcm;rate=16000", nan_chunk, 400, "NaN"},
      {"empty chunk", "POST", "/v1/audio/sessions/" + live + "/audio", "audio/pcm;rate=16000", "", 400, "empty audio chunk"},
      {"undecodable chunk", "POST", "/v1/audio/sessions/" + live + "/audio", "audio/wav", "not a wav", 400, "cannot decode"},
      {"session params not json", "POST", "/v1/audio/sessions", "text/plain", "language=en", 415, "must be a JSON object"},
      {"session srt format", "POST", "/v1/audio/sessions", "application/json", R"({"response_format":"srt"})", 400, "json or verbose_json"},
      {"session bad field", "POST", "/v1/audio/sessions", "application/json", R"({"beam_size":99})", 400, "'beam_size'"},
      {"unknown route", "GET", "/v2/everything", "", "", 404, "no route GET /v2/everything"},
      {"wrong method", "GET", T, "", "", 404, "no route GET /v1/audio/transcriptions"},
      {"unknown model", "GET", "/v1/models/gpt-4", "", "", 404, "serves 'whisper' only"},
  };
  ASSERT_GE(cases.size(), 40u);
  auto c = client();
  for (const auto& bad : cases) {
    httplib::Headers headers;
    auto send = [&]() -> httplib::Result {
      if (bad.method == "GET") return c.Get(bad.path);
      if (bad.method == "DELETE") return c.Delete(bad.path);
      if (bad.content_type.empty()) return c.Post(bad.path, headers, bad.body.data(), bad.body.size(), "");
      return c.Post(bad.path, bad.body, bad.content_type);
    };
    auto r = send();
    ASSERT_TRUE(r) << bad.name << ": no response";
    EXPECT_EQ(r->status, bad.status) << bad.name << ": " << r->body;
    auto j = json::parse(r->body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << bad.name << ": " << r->body;
    EXPECT_NE(j["error"]["message"].get<std::string>().find(bad.needle), std::string::npos)
        << bad.name << ": " << j["error"]["message"];
    EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("code")) << bad.name;
    expect_healthy();
  }
  // The live session survived its bad chunks.
  auto fin = client().Post("/v1/audio/sessions/" + live + "/finish", "", "application/json");
  EXPECT_EQ(fin->status, 200) << fin->body;
}

TEST_F(BadRequests, OversizeDeclaredLengthIs413WithoutReadingTheBody) {
  std::string reply;
  int status = raw_exchange(port, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  "Content-Length: 999999999\r\n\r\n{\"file\":\"",
                            0, &reply);
  EXPECT_EQ(status, 413) << reply;
  EXPECT_NE(reply.find("request_too_large"), std::string::npos) << reply;
  expect_healthy();
}

TEST_F(BadRequests, MalformedHttpIs400) {
  std::string reply;
  EXPECT_EQ(raw_exchange(port, "THIS IS NOT HTTP\r\n\r\n", 0, &reply), 400) << reply;
  expect_healthy();
}

TEST_F(BadRequests, BrokenChunkedEncodingIs400) {
  std::string reply;
  int status = raw_exchange(port, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  "Transfer-Encoding: chunked\r\n\r\nZZZ\r\nhello\r\n0\r\n\r\n",
                            0, &reply);
  EXPECT_EQ(status, 400) << reply;
  expect_healthy();
}

TEST_F(BadRequests, SlowLorisUploadIsCutOff) {
  // Headers promise a body that then trickles in and stalls past the read timeout.
  auto started = std::chrono::steady_clock::now();
  std::string reply;
  int status = raw_exchange(port, "POST /v1/audio/transcriptions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  "Content-Length: 5000\r\n\r\n{\"file\":\"UklG",
                            0, &reply);
  EXPECT_TRUE(status == 400 || status == 408 || status == 0) << reply;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(9)) << "the stalled upload held the connection";
  expect_healthy();
}

TEST_F(BadRequests, TooManySessionsIs429) {
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(open_session());
  auto r = client().Post("/v1/audio/sessions", "{}", "application/json");
  ASSERT_EQ(r->status, 429);
  EXPECT_NE(json::parse(r->body)["error"]["message"].get<std::string>().find("3 sessions are open"), std::string::npos);
  ASSERT_EQ(client().Delete("/v1/audio/sessions/" + ids[0])->status, 204);
  EXPECT_EQ(client().Post("/v1/audio/sessions", "{}", "application/json")->status, 200) << "a slot was freed";
  expect_healthy();
}

class ApiKey : public ServerFixture {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.api_key = "s3cret";
    start_server(o);
  }
};

TEST_F(ApiKey, EveryRouteButHealthAndTheWebPageNeedsTheBearerToken) {
  for (const char* path : {"/", "/audio-worklet.js"})
    EXPECT_EQ(client().Get(path)->status, 200) << path << ": a browser must load the page to type the key into it";
  EXPECT_EQ(client().Post("/", "", "text/plain")->status, 401) << "only GET is public";
  for (const char* path : {"/v1", "/v1/models", "/stats", "/metrics"}) {
    auto r = client().Get(path);
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_NE(r->body.find("missing API key"), std::string::npos) << path;
    EXPECT_EQ(client("wrong").Get(path)->status, 401) << path;
    EXPECT_EQ(client("s3cret").Get(path)->status, 200) << path;
  }
  auto post = client("nope").Post("/v1/audio/transcriptions", make_wav(1.0), "audio/wav");
  EXPECT_EQ(post->status, 401);
  EXPECT_NE(post->body.find("invalid API key"), std::string::npos);
  EXPECT_EQ(client().Post("/v1/audio/sessions", "{}", "application/json")->status, 401);
  EXPECT_EQ(client().Post("/admin/transcription/unload", "", "application/json")->status, 401);
  EXPECT_EQ(client().Get("/health")->status, 200);
  httplib::MultipartFormDataItems items = {{"file", make_wav(1.0), "a.wav", "audio/wav"}};
  EXPECT_EQ(client("s3cret").Post("/v1/audio/transcriptions", items)->status, 200);
}

}  // namespace
}  // namespace hark::serve::test
