#include "dictate/dictation.h"

#include <signal.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <thread>

#include "dictate/take.h"
#include "dictate/terminal.h"
#include "hark/error.h"
#include "vad/gate.h"
#include "vad/silero.h"

namespace hark::dictate {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_stop_signal{0};

extern "C" void on_dictate_stop_signal(int sig) { g_stop_signal.store(sig); }

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool has_speech(const std::vector<float>& samples) {
  static const vad::SileroModel model = vad::SileroModel::load_default();
  return vad::vad_gate(vad::get_speech_timestamps(model, samples));
}

// Streams the take into the transcriber on its own thread, so a slow server never
// holds up the capture; the take loop reads what it has heard so far.
class Uploader {
 public:
  Uploader(Transcriber& transcriber, Take& take, const DictationOptions& options)
      : transcriber_(transcriber), take_(take), options_(options) {
    thread_ = std::thread([this] { run(); });
  }
  ~Uploader() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_; }
  std::string text_so_far() {
    std::lock_guard lock(mutex_);
    return heard_.text();
  }
  std::string notice() {
    std::lock_guard lock(mutex_);
    return notice_;
  }
  // After join(): the transcript, or the failure that stopped the upload.
  bool transcribed() const { return transcribed_; }
  const std::string& transcript() const { return transcript_; }
  const std::string& failure() const { return failure_; }
  ErrorCode failure_code() const { return failure_code_; }

 private:
  void run() {
    try {
      stream();
      conclude();
      transcribed_ = true;
    } catch (const Error& e) {
      failure_ = e.what();
      failure_code_ = e.code();
    } catch (const std::exception& e) {
      failure_ = std::string("[dictate] ") + e.what();
      failure_code_ = ErrorCode::Internal;
    }
    if (!transcribed_) {
      std::lock_guard lock(mutex_);
      notice_ = "cannot transcribe now; recording goes on and the take will be saved";
    }
    done_ = true;
  }

  void stream() {
    transcriber_.begin();
    const size_t chunk = std::max<size_t>(1, static_cast<size_t>(options_.chunk_seconds * 16000));
    const size_t max_chunk = std::max(chunk, static_cast<size_t>(options_.max_chunk_seconds * 16000));
    auto last_preview = Clock::now() - std::chrono::hours(1);
    std::vector<float> samples;
    for (;;) {
      samples.clear();
      if (!take_.wait_for(sent_, chunk, max_chunk, samples)) break;
      // A preview costs a Whisper window: none while the upload lags behind the take.
      const bool behind = take_.size() > sent_ + samples.size() + chunk;
      const bool preview = options_.partial && !behind && seconds_since(last_preview) >= options_.partial_every;
      Heard heard = feed_or_recover(samples, preview);
      sent_ += samples.size();
      if (preview) last_preview = Clock::now();
      std::lock_guard lock(mutex_);
      if (!preview && heard.final_text == heard_.final_text) heard.partial = heard_.partial;
      heard_ = std::move(heard);
    }
  }

  // A session the server forgot (expired, or the server restarted) is replaced once: a
  // new one gets the whole take so far.
  Heard feed_or_recover(const std::vector<float>& samples, bool preview) {
    try {
      return transcriber_.feed(samples, preview);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::NotFound || recovered_) throw;
    }
    resend(sent_);
    return transcriber_.feed(samples, preview);
  }

  void resend(size_t upto) {
    recovered_ = true;
    {
      std::lock_guard lock(mutex_);
      notice_ = "the server had lost the session (expired or restarted); the take was sent again";
    }
    transcriber_.begin();
    const std::vector<float> all = take_.samples();
    const size_t max_chunk = static_cast<size_t>(std::max(options_.max_chunk_seconds, options_.chunk_seconds) * 16000);
    for (size_t at = 0; at < upto; at += max_chunk) {
      const size_t n = std::min(max_chunk, upto - at);
      transcriber_.feed(std::span<const float>(all.data() + at, n), false);
    }
  }

  void conclude() {
    if (options_.vad_gate && !has_speech(take_.samples())) {
      transcriber_.discard();
      return;  // an empty transcript: Whisper would only invent text for silence
    }
    try {
      transcript_ = transcriber_.finish();
      return;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::NotFound || recovered_) throw;
    }
    resend(sent_);
    transcript_ = transcriber_.finish();
  }

  Transcriber& transcriber_;
  Take& take_;
  const DictationOptions& options_;
  std::thread thread_;
  std::mutex mutex_;
  Heard heard_;
  std::string notice_;
  size_t sent_ = 0;
  bool recovered_ = false;
  std::atomic<bool> done_{false};
  bool transcribed_ = false;
  std::string transcript_, failure_;
  ErrorCode failure_code_ = ErrorCode::Internal;
};

// The level of the last 100 ms, for the meter.
class LevelMeter {
 public:
  void add(const std::vector<float>& samples) {
    recent_.insert(recent_.end(), samples.begin(), samples.end());
    if (recent_.size() > kWindow) recent_.erase(recent_.begin(), recent_.end() - kWindow);
  }
  double dbfs() const { return level_dbfs(recent_); }

 private:
  static constexpr size_t kWindow = 1600;
  std::vector<float> recent_;
};

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%5.1f s", s);
  return buf;
}

std::string recording_line(double seconds, double dbfs, const std::string& hint, const std::string& text, int width) {
  char db[16];
  std::snprintf(db, sizeof db, "%4.0f dB", std::max(dbfs, -99.0));
  std::string head = "REC " + format_seconds(seconds) + " " + level_bar(dbfs, 16) + " " + db + "  ";
  std::string body = text.empty() ? hint : text;
  while (!body.empty() && body.front() == ' ') body.erase(0, 1);
  return head + tail_to_width(body, width - 1 - static_cast<int>(head.size()));
}

std::string start_hint(const Terminal& terminal) {
  return terminal.key_up_reported()
             ? "Hold Space to talk and release to stop (a tap starts, the next press stops; Enter toggles); q quits"
             : "Hold Space to talk (or tap it: the next press stops; Enter toggles); q quits";
}

// Waits for the key that starts a take; false when the user quits instead.
bool wait_for_start(Terminal& terminal, HoldDetector& hold, StatusLine& status, Clock::time_point t0) {
  const std::string hint = start_hint(terminal);
  if (status.enabled()) status.show(tail_to_width(hint, status.width() - 1));
  else std::fprintf(stderr, "%s\n", hint.c_str());
  for (;;) {
    if (stop_requested()) return false;
    for (const KeyEvent& e : terminal.poll_keys(50)) {
      if (e.key == Key::Quit && e.action == KeyAction::Press) return false;
      if (hold.on_key(e, seconds_since(t0)) == TakeCommand::Start) return true;
    }
    hold.tick(seconds_since(t0));
  }
}

// Samples the take may still grow by under --max-seconds.
size_t take_room(const Take& take, const DictationOptions& o) {
  if (o.max_seconds <= 0) return SIZE_MAX;
  const size_t limit = static_cast<size_t>(o.max_seconds * 16000);
  return limit > take.size() ? limit - take.size() : 0;
}

struct RecordingEnd {
  bool quit = false;
  std::string reason;  // why the take stopped when it was not a key
};

RecordingEnd record(AudioSource& source, Take& take, Terminal* terminal, HoldDetector& hold, StatusLine& status,
                    Uploader& uploader, const DictationOptions& o, Clock::time_point t0) {
  LevelMeter meter;
  std::vector<float> block;
  auto next_draw = Clock::now();
  const std::string hint = terminal && !terminal->key_up_reported() ? "(tap Space or press Enter to stop)"
                           : terminal ? "(release Space to stop)" : "(Ctrl-C stops)";
  for (;;) {
    block.clear();
    const bool open = source.read(block, std::chrono::milliseconds(20));
    if (block.size() > take_room(take, o)) block.resize(take_room(take, o));
    if (!block.empty()) {
      take.append(block);
      meter.add(block);
    }
    if (!open) return {false, "end of the input"};
    if (terminal) {
      for (const KeyEvent& e : terminal->poll_keys(0)) {
        if (e.key == Key::Quit && e.action == KeyAction::Press) return {true, ""};
        if (hold.on_key(e, seconds_since(t0)) == TakeCommand::Stop) return {};
      }
      if (hold.tick(seconds_since(t0)) == TakeCommand::Stop) return {};
    }
    if (stop_requested()) return {!terminal, ""};
    if (take_room(take, o) == 0) return {false, "--max-seconds reached"};
    if (status.enabled() && Clock::now() >= next_draw) {
      std::string notice = uploader.notice();
      status.show(recording_line(take.seconds(), meter.dbfs(), hint,
                                 notice.empty() ? uploader.text_so_far() : notice, status.width()));
      next_draw = Clock::now() + std::chrono::milliseconds(100);
    }
  }
}

// Waits for the transcript; a stop request (q, Ctrl-C, a signal) gives up on it.
bool await_transcript(Uploader& uploader, Transcriber& transcriber, StatusLine& status, double seconds) {
  const char* spinner = "|/-\\";
  for (int i = 0; !uploader.done(); ++i) {
    if (stop_requested()) {
      transcriber.cancel();
      uploader.join();
      return false;
    }
    if (status.enabled())
      status.show("transcribing " + format_seconds(seconds) + " " + spinner[i % 4] + "  " +
                  tail_to_width(uploader.text_so_far(), status.width() - 30));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  uploader.join();
  return true;
}

// Writes the take to `path`, or to a new file in `dir` when path is empty.
void keep_take(const Take& take, const std::string& path, const std::string& dir, TakeResult& result) {
  try {
    const std::string target = path.empty() ? new_take_path(dir) : path;
    write_wav(target, take.samples());
    result.saved_path = target;
  } catch (const Error& e) {
    result.failure += std::string(result.failure.empty() ? "" : "; ") + e.what();
  }
}

}  // namespace

void install_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_dictate_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // the next Ctrl-C ends hark at once
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
}

bool stop_requested() { return g_stop_signal.load() != 0; }

void rearm_stop_signals() {
  if (g_stop_signal.exchange(0) != 0) install_stop_signals();
}

void restore_stop_signals() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) signal(sig, SIG_DFL);
  g_stop_signal = 0;
}

TakeResult run_take(Transcriber& transcriber, const SourceFactory& open_source, const DictationOptions& o) {
  TakeResult result;
  const auto t0 = Clock::now();
  StatusLine status;
  std::unique_ptr<AudioSource> source = open_source();  // a missing microphone fails before the prompt
  std::unique_ptr<Terminal> terminal;
  if (o.keys) terminal = std::make_unique<Terminal>();
  HoldDetector hold(terminal && terminal->key_up_reported(), o.timing);
  if (terminal && !wait_for_start(*terminal, hold, status, t0)) {
    status.clear();
    result.quit = true;
    return result;
  }
  Take take;
  source->start();
  result.started = true;
  Uploader uploader(transcriber, take, o);
  RecordingEnd end = record(*source, take, terminal.get(), hold, status, uploader, o, t0);
  terminal.reset();  // keys are done: Ctrl-C is a signal again while the transcript comes
  rearm_stop_signals();  // a Ctrl-C that stopped the recording must not also give up the transcript
  source->stop();
  std::vector<float> rest;  // what the source captured before it stopped, within --max-seconds
  source->read(rest, std::chrono::milliseconds(0));
  if (o.max_seconds > 0) rest.resize(std::min(rest.size(), take_room(take, o)));
  take.append(rest);
  take.close();
  result.quit = end.quit;
  result.seconds = take.seconds();
  try {
    source->rethrow_failure();
  } catch (const Error& e) {
    status.clear();
    std::fprintf(stderr, "hark: %s\n", e.what());
  }
  const bool waited = await_transcript(uploader, transcriber, status, take.seconds());
  status.clear();
  result.transcribed = waited && uploader.transcribed();
  if (result.transcribed) result.text = uploader.transcript();
  else if (waited) result.failure = uploader.failure(), result.failure_code = uploader.failure_code();
  else result.failure = "[dictate] stopped before the transcript arrived", result.failure_code = ErrorCode::Cancelled;
  if (!o.save_path.empty() || !result.transcribed)
    keep_take(take, o.save_path, o.save_dir.empty() ? default_take_dir() : o.save_dir, result);
  return result;
}

}  // namespace hark::dictate
