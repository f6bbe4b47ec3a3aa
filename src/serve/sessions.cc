#include "serve/sessions.h"

#include <algorithm>
#include <random>

#include "serve/api_error.h"

namespace hark::serve {

std::string random_session_id(const std::string& route_key) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static const char hex[] = "0123456789abcdef";
  std::string id = route_key.empty() ? "sess_" : "sess_" + route_key + "_";
  for (int i = 0; i < 24; ++i) id += hex[rng() & 15];
  return id;
}

void PendingAudio::append(const std::vector<float>& chunk) {
  samples.insert(samples.end(), chunk.begin(), chunk.end());
  if (samples.size() > kMaxSamples) drop_before(start + samples.size() - kMaxSamples);
}

void PendingAudio::drop_before(size_t take_index) {
  if (take_index <= start) return;
  size_t n = std::min(take_index - start, samples.size());
  samples.erase(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(n));
  start += n;
}

std::string session_route_key(const std::string& id) {
  const std::string prefix = "sess_";
  if (id.rfind(prefix, 0) != 0) return "";
  size_t end = id.rfind('_');
  return end > prefix.size() ? id.substr(prefix.size(), end - prefix.size()) : "";
}

void SessionRegistry::set_route_key(std::string key) {
  std::lock_guard lock(mutex_);
  route_key_ = std::move(key);
}

std::vector<std::shared_ptr<Session>> SessionRegistry::close_for_drain() {
  std::lock_guard lock(mutex_);
  draining_ = true;
  std::vector<std::shared_ptr<Session>> out;
  for (auto& [id, s] : sessions_) out.push_back(s);
  sessions_.clear();
  return out;
}

std::shared_ptr<Session> SessionRegistry::create(TranscribeRequest params) {
  auto s = std::make_shared<Session>();
  s->params = std::move(params);
  s->last_activity = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (draining_)
    throw ApiError(503, "server_error", "server_draining",
                   "[serve] this instance is shutting down and opens no new sessions; retry on another instance");
  size_t open = 0;
  for (const auto& [id, other] : sessions_) open += !other->finished;
  if (open >= max_open_)
    throw ApiError(429, "rate_limit_error", "too_many_sessions",
                   "[serve] " + std::to_string(max_open_) +
                       " sessions are open; finish or DELETE one first (--max-sessions raises the limit)");
  do s->id = random_session_id(route_key_);
  while (sessions_.count(s->id));
  sessions_[s->id] = s;
  return s;
}

std::shared_ptr<Session> SessionRegistry::get(const std::string& id) {
  std::lock_guard lock(mutex_);
  if (draining_)
    throw ApiError(503, "server_error", "session_closed",
                   "[serve] this instance is shutting down and closed its streaming sessions ('" + id.substr(0, 64) +
                       "' included); open a new session with POST /v1/audio/sessions and send the audio again");
  auto it = sessions_.find(id);
  if (it == sessions_.end()) {
    const std::string key = session_route_key(id);
    if (!key.empty() && !route_key_.empty() && key != route_key_)
      throw ApiError(404, "invalid_request_error", "session_not_found",
                     "[serve] no session '" + id.substr(0, 64) + "' here: it was opened on instance '" + key.substr(0, 32) +
                         "' and this is '" + route_key_ + "'; route /v1/audio/sessions/{id}/... by the key in the id "
                         "(docs/deploy.md), or that instance has stopped");
    throw ApiError(404, "invalid_request_error", "session_not_found",
                   "[serve] no session '" + id.substr(0, 64) + "' (never created, deleted, or expired after idling)");
  }
  it->second->last_activity = std::chrono::steady_clock::now();
  return it->second;
}

void SessionRegistry::touch(Session& s) {
  std::lock_guard lock(mutex_);
  s.last_activity = std::chrono::steady_clock::now();
}

void SessionRegistry::remove(const std::string& id) {
  std::lock_guard lock(mutex_);
  sessions_.erase(id);
}

void SessionRegistry::mark_finished(Session& s) {
  std::lock_guard lock(mutex_);
  s.finished = true;
  s.last_activity = std::chrono::steady_clock::now();
}

std::vector<std::shared_ptr<Session>> SessionRegistry::take_expired() {
  auto now = std::chrono::steady_clock::now();
  std::vector<std::shared_ptr<Session>> out;
  std::lock_guard lock(mutex_);
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (std::chrono::duration<double>(now - it->second->last_activity).count() > idle_sec_) {
      out.push_back(it->second);
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

std::vector<std::shared_ptr<Session>> SessionRegistry::take_all() {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<Session>> out;
  for (auto& [id, s] : sessions_) out.push_back(s);
  sessions_.clear();
  return out;
}

size_t SessionRegistry::open_count() const {
  std::lock_guard lock(mutex_);
  size_t open = 0;
  for (const auto& [id, s] : sessions_) open += !s->finished;
  return open;
}

}  // namespace hark::serve
