#include "hub/http.h"

#include <cctype>
#include <exception>
#include <mutex>

#include <curl/curl.h>

#include "hark/error.h"

namespace hark::hub {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Per-transfer state shared by curl's callbacks.
struct Transfer {
  const StreamSink* sink = nullptr;
  HttpResult* result = nullptr;
  std::uint64_t offset = 0;
  bool started = false;
  bool sink_refused = false;
  bool saw_first_response = false;
  bool in_first_response = true;
  // An exception must not unwind through libcurl's C frames: it is parked here and
  // rethrown once curl_easy_perform has returned.
  std::exception_ptr failure;
};

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  std::string line(data, size * count);
  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
  if (line.rfind("HTTP/", 0) == 0) {  // a new response begins (one per redirect hop)
    auto space = line.find(' ');
    t.result->status = space == std::string::npos ? 0 : std::atol(line.c_str() + space + 1);
    t.in_first_response = !t.saw_first_response;
    t.saw_first_response = true;
    return size * count;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return size * count;
  std::string name = line.substr(0, colon);
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string value = line.substr(colon + 1);
  value.erase(0, value.find_first_not_of(" \t"));
  bool hub_header = name.rfind("x-", 0) == 0;
  if (!hub_header || t.in_first_response || !t.result->headers.count(name)) t.result->headers[name] = value;
  return size * count;
}

size_t deliver(Transfer& t, char* data, size_t bytes) {
  bool success = t.result->status >= 200 && t.result->status < 300;
  if (!t.sink || !success) {  // memory GETs, and error pages of streamed GETs
    if (t.sink && t.result->body.size() >= kMaxErrorBody) return bytes;
    t.result->body.append(data, bytes);
    return bytes;
  }
  if (!t.started) {
    t.started = true;
    if (t.sink->on_start && !t.sink->on_start(t.result->status, t.result->headers)) return t.sink_refused = true, 0;
  }
  if (!t.sink->on_data(data, bytes)) return t.sink_refused = true, 0;
  return bytes;
}

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto& t = *static_cast<Transfer*>(user);
  try {
    return deliver(t, data, size * count);
  } catch (...) {
    t.failure = std::current_exception();
    return 0;
  }
}

int on_progress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto& t = *static_cast<Transfer*>(user);
  bool success = t.result->status >= 200 && t.result->status < 300;
  try {
    if (t.sink && t.sink->on_progress && success)
      t.sink->on_progress(t.offset + static_cast<std::uint64_t>(now), total > 0 ? t.offset + total : 0);
  } catch (...) {
    t.failure = std::current_exception();
    return 1;  // aborts the transfer
  }
  return 0;
}

TransferError classify(CURLcode code) {
  switch (code) {
    case CURLE_OK: return TransferError::None;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT: return TransferError::Unreachable;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return TransferError::Interrupted;
    case CURLE_WRITE_ERROR:
    case CURLE_ABORTED_BY_CALLBACK: return TransferError::Aborted;
    default: return TransferError::Other;
  }
}

HttpResult perform(const std::string& url, std::uint64_t offset, const HttpConfig& config, const StreamSink* sink) {
  global_init_once();
  HttpResult result;
  Transfer transfer;
  transfer.sink = sink;
  transfer.result = &result;
  transfer.offset = offset;
  CURL* curl = curl_easy_init();
  if (!curl) throw Error(ErrorCode::Internal, "[hub] cannot create a libcurl handle");
  char error_text[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, config.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, config.connect_timeout_s);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, config.stall_timeout_s);
  // Weights are incompressible; asking for identity keeps byte offsets meaningful for Range.
  curl_easy_setopt(curl, CURLOPT_ACCEPT_ENCODING, sink ? "identity" : "");
  if (!config.token.empty()) {
    // CURLAUTH_BEARER is not forwarded to another host on redirect (the hub sends LFS
    // files from a CDN that must not see the token).
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
    curl_easy_setopt(curl, CURLOPT_XOAUTH2_BEARER, config.token.c_str());
  }
  // A plain Range header rather than curl's resume mode, which fails outright when a server
  // answers 200: the caller handles that case by starting the file over.
  std::string range = std::to_string(offset) + "-";
  if (offset > 0) curl_easy_setopt(curl, CURLOPT_RANGE, range.c_str());
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  CURLcode code = curl_easy_perform(curl);
  curl_easy_cleanup(curl);
  if (transfer.failure) std::rethrow_exception(transfer.failure);
  result.error = transfer.sink_refused ? TransferError::Aborted : classify(code);
  if (result.error != TransferError::None) result.error_message = error_text[0] ? error_text : curl_easy_strerror(code);
  return result;
}

}  // namespace

HttpResult http_get(const std::string& url, const HttpConfig& config) { return perform(url, 0, config, nullptr); }

HttpResult http_stream(const std::string& url, std::uint64_t offset, const HttpConfig& config, const StreamSink& sink) {
  return perform(url, offset, config, &sink);
}

std::string url_host(const std::string& url) {
  auto scheme = url.find("://");
  size_t begin = scheme == std::string::npos ? 0 : scheme + 3;
  return url.substr(begin, url.find('/', begin) - begin);
}

std::string url_encode_segment(const std::string& segment) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : segment) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

}  // namespace hark::hub
