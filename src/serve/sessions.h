// Streaming transcription sessions (dictation): audio arrives in chunks and every
// completed 30 s window is transcribed while the rest is still being recorded. The
// registry lives on HTTP threads; each session's StreamingRun is only touched by engine
// worker jobs, which may run on different threads and hold the session's mutex.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hark/engine.h"
#include "serve/transcribe_request.h"

namespace hark::serve {

// The audio after the last final segment: what a partial-text preview transcribes. It is
// kept beside the StreamingRun (which holds the whole take but does not expose it) and
// capped at one window, because a preview is one Whisper window.
struct PendingAudio {
  static constexpr size_t kMaxSamples = 30 * 16000;
  std::vector<float> samples;
  size_t start = 0;  // index of samples[0] in the whole take

  void append(const std::vector<float>& chunk);
  void drop_before(size_t take_index);  // once a segment up to take_index is final
};

class EngineWorker;

struct Session {
  std::string id;
  EngineWorker* worker = nullptr;  // the worker (device) holding the session's state
  TranscribeRequest params;
  // Held by the worker job that uses the fields below, and while a job is submitted.
  std::mutex mutex;
  std::condition_variable settled;  // jobs_in_flight fell to 0
  int jobs_in_flight = 0;           // submitted, not finished (the close job waits for them)
  bool closing = false;             // a close job is queued: no further jobs
  // Set when the session is deleted: its running job stops at the next decoder step.
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  // Worker-thread state: created by the open job, destroyed by finish/delete/expiry jobs.
  std::unique_ptr<StreamingRun> run;
  std::atomic<bool> finished{false};  // finish ran; later audio/finish calls are 409 (read by HTTP threads)
  bool closed = false;    // deleted or expired; the run is gone
  size_t samples = 0;     // samples fed so far
  PendingAudio pending;   // worker-thread state, for ?partial previews
  std::chrono::steady_clock::time_point last_activity;
};

class SessionRegistry {
 public:
  SessionRegistry(size_t max_open, double idle_sec) : max_open_(max_open), idle_sec_(idle_sec) {}

  // Registers a new session; ApiError 429 when max_open sessions are already open.
  std::shared_ptr<Session> create(TranscribeRequest params);
  // ApiError 404 when the id is unknown (never created, deleted or expired).
  std::shared_ptr<Session> get(const std::string& id);
  void touch(Session& s);
  void remove(const std::string& id);
  // Sessions idle for longer than idle_sec, removed from the registry.
  std::vector<std::shared_ptr<Session>> take_expired();
  std::vector<std::shared_ptr<Session>> take_all();
  size_t open_count() const;  // created and not finished
  void mark_finished(Session& s);

  // New ids are sess_<key>_<random>, so a proxy can route a session to its instance.
  void set_route_key(std::string key);
  // The server is draining: every session is removed and returned (to be closed), and from
  // now on get() answers 503 session_closed and create() 503 server_draining.
  std::vector<std::shared_ptr<Session>> close_for_drain();

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  size_t max_open_;
  double idle_sec_;
  std::string route_key_;
  bool draining_ = false;
};

// sess_<route_key>_<24 hex digits> (sess_<24 hex digits> without a key).
std::string random_session_id(const std::string& route_key = "");
// The key in a session id, or "" when it has none.
std::string session_route_key(const std::string& id);

}  // namespace hark::serve
