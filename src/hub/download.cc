#include "hub/download.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "hark/error.h"
#include "hub/discovery.h"
#include "hub/hash.h"
#include "hub/inspect.h"
#include "hub/part_file.h"
#include "hub/paths.h"
#include "hub/plan.h"
#include "hub/resolve.h"
#include "hub/catalog.h"

namespace hark::hub {
namespace fs = std::filesystem;
namespace {

struct Context {
  const GetOptions& options;
  HttpConfig http;
  std::string endpoint;
  std::string repo;
  std::string revision;

  void say(const std::string& message) const {
    if (options.on_message) options.on_message(message);
  }
  std::string retry_command() const { return "`hark get " + options.name + "`"; }
};

std::string header(const HttpResult& result, const std::string& name) {
  auto it = result.headers.find(name);
  return it == result.headers.end() ? "" : it->second;
}

[[noreturn]] void throw_unreachable(const Context& ctx, const HttpResult& result, const std::string& url) {
  throw Error(ErrorCode::Network, "[get] cannot reach " + url_host(url) + " (" + result.error_message +
                                      "): check the network connection, or point HF_ENDPOINT / --endpoint at a "
                                      "mirror you can reach, then run " + ctx.retry_command() + " again");
}

[[noreturn]] void throw_http_error(const Context& ctx, const HttpResult& result, const std::string& what) {
  std::string code = header(result, "x-error-code");
  std::string page = ctx.endpoint + "/" + ctx.repo;
  std::string prefix = "[get] " + what + ": ";
  switch (result.status) {
    case 401:
      if (ctx.http.token.empty())
        throw Error(ErrorCode::Unavailable,
                    prefix + "401 Unauthorized: the repo is gated or private (or does not exist). If it is gated, "
                             "accept its terms at " + page + ", create a read token at "
                             "https://huggingface.co/settings/tokens and pass it: `hark get " + ctx.options.name +
                             " --token hf_...` or `export HF_TOKEN=hf_...`");
      throw Error(ErrorCode::Unavailable, prefix + "401 Unauthorized: the hub rejected the token; check that it is valid "
                                                   "and can read " + ctx.repo + " (https://huggingface.co/settings/tokens)");
    case 403:
      throw Error(ErrorCode::Unavailable, prefix + "403 Forbidden: the repo is gated and this token's account has not "
                                                   "been granted access yet; request it at " + page);
    case 404:
      if (code == "RevisionNotFound")
        throw Error(ErrorCode::NotFound, prefix + "revision '" + ctx.revision + "' does not exist (404); see " + page);
      if (code == "EntryNotFound") throw Error(ErrorCode::NotFound, prefix + "no such file in the repo (404)");
      throw Error(ErrorCode::NotFound, prefix + "404 Not Found on " + ctx.endpoint +
                                           ": check the name (`hark get --list` shows the short names)");
    case 429:
      throw Error(ErrorCode::Network, prefix + "the hub is rate-limiting requests (429): wait a minute, then run " +
                                          ctx.retry_command() + " again");
    default: {
      std::string detail = header(result, "x-error-message");
      throw Error(ErrorCode::Network, prefix + "HTTP " + std::to_string(result.status) + " from " +
                                          url_host(ctx.endpoint) + (detail.empty() ? "" : " (" + detail + ")"));
    }
  }
}

// Broken or stalled transfers and server-side hiccups are retried; 4xx answers are final.
bool worth_retrying(const HttpResult& result) {
  if (result.error == TransferError::Interrupted || result.error == TransferError::Unreachable) return true;
  return result.error == TransferError::None && (result.status >= 500 || result.status == 408);
}

void wait_before_retry(const Context& ctx, int attempt) {
  double delay = std::min(30.0, ctx.options.retry_delay_s * (1 << std::min(attempt, 10)));
  std::this_thread::sleep_for(std::chrono::duration<double>(delay));
}

RepoListing fetch_listing(const Context& ctx) {
  std::string url = ctx.endpoint + "/api/models/" + ctx.repo + "/revision/" + url_encode_segment(ctx.revision) +
                    "?blobs=true";
  for (int attempt = 0;; ++attempt) {
    HttpResult result = http_get(url, ctx.http);
    if (result.error == TransferError::None && result.status == 200) {
      auto json = nlohmann::json::parse(result.body, nullptr, false);
      if (json.is_discarded())
        throw Error(ErrorCode::Network, "[get] " + url_host(url) + " sent a file list that is not JSON: is " +
                                            ctx.endpoint + " a Hugging Face hub?");
      return parse_repo_listing(json);
    }
    int max_retries = result.error == TransferError::Unreachable ? std::min(1, ctx.options.max_retries)
                                                                 : ctx.options.max_retries;
    if (!worth_retrying(result) || attempt >= max_retries) {
      if (result.error != TransferError::None) throw_unreachable(ctx, result, url);
      throw_http_error(ctx, result, ctx.repo);
    }
    wait_before_retry(ctx, attempt);
  }
}

// "sha256:…", "\"…\"" and "W/\"…\"" all carry the hex digest the hub computed.
std::string sha256_from_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  etag.erase(std::remove(etag.begin(), etag.end(), '"'), etag.end());
  bool hex = etag.size() == 64 && std::all_of(etag.begin(), etag.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  return hex ? etag : "";
}

// Fills what the listing did not say (plain URLs) from the response headers.
void learn_from_headers(RemoteFile& expected, const HttpHeaders& headers, long status) {
  auto get = [&](const char* name) { auto it = headers.find(name); return it == headers.end() ? std::string() : it->second; };
  std::string linked = get("x-linked-size"), range = get("content-range"), length = get("content-length");
  // X-Linked-* only come with LFS files. When the listing had no LFS metadata (a thin
  // mirror), its blob id and size describe the pointer file, so the headers win.
  std::string linked_sha = sha256_from_etag(get("x-linked-etag"));
  if (expected.sha256.empty() && !linked_sha.empty()) {
    expected.sha256 = linked_sha;
    expected.git_sha1.clear();
    if (!linked.empty()) expected.size = std::strtoull(linked.c_str(), nullptr, 10);
  }
  if (expected.size != 0) return;
  if (!linked.empty()) expected.size = std::strtoull(linked.c_str(), nullptr, 10);
  else if (status == 206 && range.find('/') != std::string::npos) expected.size = std::strtoull(range.c_str() + range.find('/') + 1, nullptr, 10);
  else if (status == 200 && !length.empty()) expected.size = std::strtoull(length.c_str(), nullptr, 10);
}

bool matches(const std::string& path, const RemoteFile& expected, std::string* got = nullptr) {
  std::error_code ec;
  if (expected.size != 0 && fs::file_size(path, ec) != expected.size) {
    if (got) *got = std::to_string(fs::file_size(path, ec)) + " bytes instead of " + std::to_string(expected.size);
    return false;
  }
  if (!expected.sha256.empty()) {
    std::string digest = hash_file(path, HashKind::Sha256);
    if (got) *got = "SHA-256 " + digest + " instead of " + expected.sha256;
    return digest == expected.sha256;
  }
  if (!expected.git_sha1.empty()) {
    std::string digest = hash_file(path, HashKind::GitBlobSha1);
    if (got) *got = "git blob id " + digest + " instead of " + expected.git_sha1;
    return digest == expected.git_sha1;
  }
  return true;
}

void ensure_directory(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::Io, "[get] cannot create '" + dir.string() + "': " + io_error_text(ec.value()));
}

// Fails early, rather than at 95 % of a 3 GB file, when the disk cannot hold the rest.
void check_free_space(const fs::path& dir, std::uint64_t needed) {
  std::error_code ec;
  auto space = fs::space(dir, ec);
  if (ec || needed == 0 || space.available >= needed) return;
  throw Error(ErrorCode::Io, "[get] not enough space in '" + dir.string() + "': " + human_bytes(needed) +
                                 " needed, " + human_bytes(space.available) + " free; " + io_error_text(ENOSPC));
}

// Streams one attempt into `out`; returns the transfer's result.
HttpResult download_attempt(const std::string& url, RemoteFile& expected, PartFile& out, DownloadProgress& progress,
                            const Context& ctx) {
  std::uint64_t offset = out.size();
  StreamSink sink;
  sink.on_start = [&](long status, const HttpHeaders& headers) {
    if (offset > 0 && status == 200) {  // the server ignored the Range: start over
      out.truncate();
      progress.resumed_from = 0;
    } else if (status == 206) {
      auto range = headers.count("content-range") ? headers.at("content-range") : "";
      auto space = range.find(' ');
      if (space == std::string::npos || std::strtoull(range.c_str() + space + 1, nullptr, 10) != offset) {
        out.truncate();  // an unexpected range: refetch the file from the start
        return false;
      }
    }
    learn_from_headers(expected, headers, status);
    progress.total = expected.size;
    return true;
  };
  sink.on_data = [&](const char* data, size_t size) {
    if (!out.append(data, size)) return false;
    progress.done = out.size();
    if (ctx.options.on_progress) ctx.options.on_progress(progress);
    return true;
  };
  return http_stream(url, offset, ctx.http, sink);
}

// Downloads `remote` to `dest` through dest.part; false when a verified copy was already there.
bool fetch_file(const std::string& url, RemoteFile expected, const fs::path& dest, DownloadProgress progress,
                const Context& ctx) {
  ensure_directory(dest.parent_path());
  bool verifiable = !expected.sha256.empty() || !expected.git_sha1.empty();
  std::error_code ec;
  if (verifiable && fs::is_regular_file(dest, ec) && matches(dest.string(), expected)) {
    ctx.say(progress.file + ": already present and verified");
    return false;
  }
  std::string part = dest.string() + ".part";
  PartFile out(part);
  check_free_space(dest.parent_path(), expected.size > out.size() ? expected.size - out.size() : 0);
  progress.total = expected.size;
  progress.resumed_from = progress.done = out.size();
  if (progress.done > 0) ctx.say("resuming " + progress.file + " from " + human_bytes(progress.done));
  for (int attempt = 0;; ++attempt) {
    if (expected.size != 0 && out.size() > expected.size) out.truncate();
    if (expected.size != 0 && out.size() == expected.size) break;  // an earlier run fetched it all
    HttpResult result = download_attempt(url, expected, out, progress, ctx);
    if (result.error == TransferError::Aborted && out.write_errno() != 0)
      throw Error(ErrorCode::Io, "[get] cannot write '" + part + "': " + io_error_text(out.write_errno()) +
                                     "; run " + ctx.retry_command() + " again to resume");
    if (result.error == TransferError::None && result.status == 416 && out.size() > 0) break;
    if (result.error == TransferError::None && result.status >= 200 && result.status < 300) break;
    bool retry = worth_retrying(result) || result.error == TransferError::Aborted;
    // A host that cannot be reached at all rarely comes back within seconds: one retry.
    int max_retries = result.error == TransferError::Unreachable ? std::min(1, ctx.options.max_retries)
                                                                 : ctx.options.max_retries;
    if (!retry || attempt >= max_retries) {
      if (result.error == TransferError::Unreachable) throw_unreachable(ctx, result, url);
      if (result.error == TransferError::None) throw_http_error(ctx, result, progress.file);
      throw Error(ErrorCode::Network, "[get] the download of " + progress.file + " broke off at " +
                                          human_bytes(out.size()) + " (" + result.error_message + "); run " +
                                          ctx.retry_command() + " again to resume from there");
    }
    ctx.say("connection lost during " + progress.file + " at " + human_bytes(out.size()) + "; retrying");
    wait_before_retry(ctx, attempt);
  }
  out.close();
  progress.verifying = true;
  if (ctx.options.on_progress) ctx.options.on_progress(progress);
  progress.verifying = false;
  std::string got;
  if (!verifiable) ctx.say(progress.file + ": the server publishes no checksum; size checked only");
  if (!matches(part, expected, &got)) {
    fs::remove(part, ec);
    throw Error(ErrorCode::Checksum, "[get] " + progress.file + " is corrupt (" + got + "); the bad download was "
                                         "removed: run " + ctx.retry_command() + " again");
  }
  fs::rename(part, dest, ec);
  if (ec) throw Error(ErrorCode::Io, "[get] cannot move '" + part + "' into place: " + io_error_text(ec.value()));
  progress.done = progress.total = fs::file_size(dest, ec);
  progress.finished = true;
  if (ctx.options.on_progress) ctx.options.on_progress(progress);
  return true;
}

bool same_name(std::string a, std::string b) {
  auto lower = [](std::string& s) { for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  lower(a), lower(b);
  return a == b;
}

// A checkpoint found by discovery (hark's folder, HF cache, whisper.cpp) for this target.
// A bare short name ("turbo") is satisfied by any build of it, as --model would be.
std::string find_on_disk(const GetTarget& target, const GetOptions& options) {
  auto short_name = parse_short_name(options.name);
  if (short_name && !short_name->format && !options.format) {
    try {
      return resolve_model(options.name);
    } catch (const Error&) {
      return "";
    }
  }
  if (target.repo.empty()) return "";
  for (const auto& model : discover_models(SearchPaths::from_environment())) {
    bool match = target.file.empty()
                     ? model.format != CheckpointFormat::Ggml && same_name(model.name, target.repo)
                     : model.format == CheckpointFormat::Ggml && same_name(model.name + ".bin", fs::path(target.file).filename().string());
    if (match) return model.path;
  }
  return "";
}

std::string encode_path(const std::string& path) {
  std::string out;
  size_t begin = 0;
  for (size_t slash; (slash = path.find('/', begin)) != std::string::npos; begin = slash + 1)
    out += url_encode_segment(path.substr(begin, slash - begin)) + "/";
  return out + url_encode_segment(path.substr(begin));
}

}  // namespace

std::string default_hub_token() {
  if (!env("HF_TOKEN").empty()) return env("HF_TOKEN");
  if (!env("HUGGING_FACE_HUB_TOKEN").empty()) return env("HUGGING_FACE_HUB_TOKEN");
  std::string file = env("HF_TOKEN_PATH");
  if (file.empty()) file = (env("HF_HOME").empty() ? expand_home("~/.cache/huggingface") : env("HF_HOME")) + "/token";
  std::ifstream in(expand_home(file));
  std::string token;
  std::getline(in, token);
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  return token;
}

std::string default_hub_endpoint() {
  std::string endpoint = env("HF_ENDPOINT").empty() ? "https://huggingface.co" : env("HF_ENDPOINT");
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
  return endpoint;
}

// Resolve the name, skip what is already on disk, list the repo, then fetch each chosen
// file in order (weights first, config.json last).
GetResult get_model(const GetOptions& options) {
  GetTarget target = parse_get_target(options.name, options.format, options.revision);
  Context ctx{options, options.http, target.endpoint.empty() ? options.endpoint : target.endpoint, target.repo,
              target.revision};
  while (!ctx.endpoint.empty() && ctx.endpoint.back() == '/') ctx.endpoint.pop_back();
  if (ctx.endpoint.empty()) ctx.endpoint = default_hub_endpoint();
  ctx.http.token = options.token.empty() ? default_hub_token() : options.token;

  GetResult result;
  result.repo = target.repo;
  if (!options.force && options.dir.empty() && target.revision == "main") {
    if (std::string path = find_on_disk(target, options); !path.empty()) {
      result.path = path;
      result.already_on_disk = true;
      return result;
    }
  }
  if (!target.url.empty()) {  // a single file outside the hub's layout
    std::string name = fs::path(target.url.substr(0, target.url.find_first_of("?#"))).filename().string();
    if (!is_safe_relative_path(name)) throw Error(ErrorCode::InvalidArgument, "[get] cannot tell a file name from " + target.url);
    fs::path dest = fs::path(options.dir.empty() ? hark_home() + "/models" : options.dir) / name;
    RemoteFile file{name, 0, "", ""};
    if (fetch_file(target.url, file, dest, DownloadProgress{name, 1, 1}, ctx)) result.downloaded.push_back(name);
    else result.reused.push_back(name);
    result.path = dest.string();
    return result;
  }
  RepoListing listing = fetch_listing(ctx);
  auto files = choose_files(listing, target.file, target.repo);
  result.commit = listing.commit.empty() ? target.revision : listing.commit;
  fs::path dir = options.dir.empty() ? hark_home() + "/models/" + repo_dir_name(target.repo) : options.dir;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!is_safe_relative_path(files[i].name))
      throw Error(ErrorCode::Network, "[get] the hub listed an unsafe file name '" + files[i].name + "'");
    // Pinning the commit keeps every file of one download from the same revision even if
    // the branch moves while a large file is in flight.
    std::string url = ctx.endpoint + "/" + target.repo + "/resolve/" + url_encode_segment(result.commit) + "/" +
                      encode_path(files[i].name);
    DownloadProgress progress{files[i].name, static_cast<int>(i + 1), static_cast<int>(files.size())};
    bool fetched = fetch_file(url, files[i], dir / files[i].name, progress, ctx);
    (fetched ? result.downloaded : result.reused).push_back(files[i].name);
  }
  result.path = target.file.empty() ? dir.string() : (dir / target.file).string();
  return result;
}

}  // namespace hark::hub
