// A Hugging Face hub look-alike on 127.0.0.1 for the download tests: the file-list API
// (/api/models/<repo>[/revision/<rev>]), /<repo>/resolve/<rev>/<file> with the hub's
// headers (X-Repo-Commit, X-Linked-Etag, X-Linked-Size, ETag), Range requests, gated
// repos, and switches to drop a connection half-way or serve corrupt bytes.
#pragma once

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "hub/hash.h"

namespace hark::test {

class FakeHub {
 public:
  struct File {
    std::string content;
    bool lfs = true;
  };

  FakeHub() {
    server_.set_read_timeout(5, 0);
    server_.set_write_timeout(5, 0);
    server_.set_keep_alive_max_count(1);
    server_.Get(R"(/api/models/([^/]+)/([^/]+)(/revision/([^/]+))?)",
                [this](const httplib::Request& req, httplib::Response& res) { serve_listing(req, res); });
    server_.Get(R"(/([^/]+)/([^/]+)/resolve/([^/]+)/(.+))",
                [this](const httplib::Request& req, httplib::Response& res) { serve_file(req, res); });
    server_.Get(R"(/plain/(.+))", [this](const httplib::Request& req, httplib::Response& res) { serve_plain(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ~FakeHub() {
    server_.stop();
    thread_.join();
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void add(const std::string& repo, const std::string& name, const std::string& content, bool lfs = true) {
    std::lock_guard<std::mutex> lock(mutex_);
    repos_[repo][name] = File{content, lfs};
  }

  // Knobs, set before a download.
  std::string commit = "0123456789abcdef0123456789abcdef01234567";
  std::string gated_repo;         // needs "Bearer <token>"
  std::string token = "hf_secret";
  std::atomic<long> drop_at{-1};  // the next file response closes after this many bytes
  std::atomic<bool> ignore_range{false};
  std::string corrupt_file;       // served with one byte flipped
  bool thin_listing = false;      // like a mirror without LFS metadata: pointer blob ids and sizes

  // What the server saw.
  std::vector<std::string> ranges() {
    std::lock_guard<std::mutex> lock(mutex_);
    return ranges_;
  }
  std::vector<std::string> authorizations() {
    std::lock_guard<std::mutex> lock(mutex_);
    return authorizations_;
  }
  int file_requests() const { return file_requests_; }

 private:
  bool known_revision(const std::string& rev, httplib::Response& res) {
    if (rev.empty() || rev == "main" || rev == commit) return true;
    res.status = 404;
    res.set_header("X-Error-Code", "RevisionNotFound");
    return false;
  }

  void serve_listing(const httplib::Request& req, httplib::Response& res) {
    std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
    std::lock_guard<std::mutex> lock(mutex_);
    if (!allowed_locked(repo, req, res) || !known_revision(req.matches[4].str(), res)) return;
    nlohmann::json siblings = nlohmann::json::array();
    for (const auto& [name, file] : repos_[repo]) {
      nlohmann::json entry = {{"rfilename", name}, {"size", file.content.size()}};
      if (file.lfs && thin_listing) {
        std::string pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:" + hub::sha256_hex(file.content) + "\n";
        entry = {{"rfilename", name}, {"size", pointer.size()}, {"blobId", git_blob_id(pointer)}};
      } else if (file.lfs) {
        entry["lfs"] = {{"sha256", hub::sha256_hex(file.content)}, {"size", file.content.size()}};
      } else {
        entry["blobId"] = git_blob_id(file.content);
      }
      siblings.push_back(entry);
    }
    res.set_content(nlohmann::json{{"id", repo}, {"sha", commit}, {"siblings", siblings}}.dump(), "application/json");
  }

  void serve_file(const httplib::Request& req, httplib::Response& res) {
    std::string repo = req.matches[1].str() + "/" + req.matches[2].str();
    std::lock_guard<std::mutex> lock(mutex_);
    ++file_requests_;
    ranges_.push_back(req.get_header_value("Range"));
    if (!allowed_locked(repo, req, res) || !known_revision(req.matches[3].str(), res)) return;
    auto it = repos_[repo].find(req.matches[4].str());
    if (it == repos_[repo].end()) {
      res.status = 404;
      res.set_header("X-Error-Code", "EntryNotFound");
      return;
    }
    const File& file = it->second;
    res.set_header("X-Repo-Commit", commit);
    if (file.lfs) {
      res.set_header("X-Linked-Etag", "\"" + hub::sha256_hex(file.content) + "\"");
      res.set_header("X-Linked-Size", std::to_string(file.content.size()));
    }
    res.set_header("ETag", "\"" + git_blob_id(file.content) + "\"");
    std::string body = file.content;
    if (it->first == corrupt_file) body[body.size() / 2] ^= 0x55;
    send(req, res, body);
  }

  void serve_plain(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++file_requests_;
    ranges_.push_back(req.get_header_value("Range"));
    auto it = repos_["plain/files"].find(req.matches[1].str());
    if (it == repos_["plain/files"].end()) {
      res.status = 404;
      return;
    }
    res.set_header("X-Linked-Etag", "\"" + hub::sha256_hex(it->second.content) + "\"");
    std::string body = it->second.content;
    if (it->first == corrupt_file) body[body.size() / 2] ^= 0x55;
    send(req, res, body);
  }

  // Full body or, through httplib's Range support, the requested part; optionally cut
  // short once to simulate a dropped connection.
  void send(const httplib::Request& req, httplib::Response& res, const std::string& body) {
    if (ignore_range) {  // chunked, which httplib never cuts to a range: a plain 200
      auto whole = std::make_shared<std::string>(body);
      res.status = 200;
      res.set_chunked_content_provider("application/octet-stream", [whole](size_t, httplib::DataSink& sink) {
        sink.write(whole->data(), whole->size());
        sink.done();
        return true;
      });
      return;
    }
    long drop = drop_at.exchange(-1);
    auto shared = std::make_shared<std::string>(body);
    res.set_content_provider(body.size(), "application/octet-stream",
                             [shared, drop](size_t offset, size_t length, httplib::DataSink& sink) {
                               size_t end = offset + length;
                               if (drop >= 0 && end > static_cast<size_t>(drop)) {
                                 if (offset < static_cast<size_t>(drop)) sink.write(shared->data() + offset, drop - offset);
                                 return false;  // closes the connection mid-body
                               }
                               sink.write(shared->data() + offset, length);
                               return true;
                             });
    (void)req;
  }

  bool allowed_locked(const std::string& repo, const httplib::Request& req, httplib::Response& res) {
    authorizations_.push_back(req.get_header_value("Authorization"));
    if (repo == gated_repo && req.get_header_value("Authorization") != "Bearer " + token) {
      res.status = 401;
      res.set_header("X-Error-Code", "GatedRepo");
      res.set_content(R"({"error":"Access to this model is restricted."})", "application/json");
      return false;
    }
    if (!repos_.count(repo)) {
      res.status = 404;
      res.set_header("X-Error-Code", "RepoNotFound");
      res.set_content(R"({"error":"Repository not found"})", "application/json");
      return false;
    }
    return true;
  }

  static std::string git_blob_id(const std::string& content) {
    hub::Hasher hasher(hub::HashKind::GitBlobSha1, content.size());
    hasher.update(content.data(), content.size());
    return hasher.hex_digest();
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mutex_;
  std::map<std::string, std::map<std::string, File>> repos_;
  std::vector<std::string> ranges_;
  std::vector<std::string> authorizations_;
  std::atomic<int> file_requests_{0};
};

}  // namespace hark::test
