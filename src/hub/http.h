// The few HTTP operations `hark get` needs, over libcurl: a GET into memory and a
// streaming GET (optionally from a byte offset) into a caller's sink. Every transfer has
// a connect timeout and a stall timeout, so nothing hangs on a dead connection.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace hark::hub {

struct HttpConfig {
  std::string token;          // sent as a Bearer token, never to a host a redirect leads to
  long connect_timeout_s = 15;
  long stall_timeout_s = 30;  // give up when under 1 byte/s arrives for this long
  std::string user_agent = "hark/0.1";
};

// Lower-case names. Across redirects the hub's own x-* headers (x-linked-etag,
// x-repo-commit, x-error-code…) come from the first response, the others from the last.
using HttpHeaders = std::map<std::string, std::string>;

enum class TransferError {
  None,
  Unreachable,  // DNS failure, refused or timed-out connection: the network or host is down
  Interrupted,  // the connection broke or stalled mid-transfer: worth retrying from where it stopped
  Aborted,      // the sink refused data (disk full, …)
  Other,
};

struct HttpResult {
  long status = 0;
  HttpHeaders headers;
  std::string body;  // the whole body for http_get; the error body (capped) for http_stream
  TransferError error = TransferError::None;
  std::string error_message;  // curl's explanation when error != None
};

struct StreamSink {
  // Called before the first body byte of a successful (2xx) response; false aborts.
  std::function<bool(long status, const HttpHeaders& headers)> on_start;
  std::function<bool(const char* data, size_t size)> on_data;  // false aborts
  std::function<void(std::uint64_t received, std::uint64_t expected)> on_progress;
};

// GET `url` into memory. Never throws for HTTP statuses; the caller maps them.
HttpResult http_get(const std::string& url, const HttpConfig& config);

// GET `url` from byte `offset` (a Range request when offset > 0), streaming 2xx bodies
// into `sink`.
HttpResult http_stream(const std::string& url, std::uint64_t offset, const HttpConfig& config, const StreamSink& sink);

// "https://host:port/path" → "host:port", for messages.
std::string url_host(const std::string& url);
// Percent-encodes one path segment (revision names like "refs/pr/1").
std::string url_encode_segment(const std::string& segment);

}  // namespace hark::hub
