// POST /v1/audio/transcriptions and /v1/audio/translations, plain and SSE-streamed.
#include <condition_variable>
#include <deque>

#include "serve/connection_watch.h"
#include "serve/render.h"
#include "serve/server_impl.h"

namespace hark::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// State one transcription shares between its HTTP thread and the engine worker.
struct TranscribeJob {
  TranscribeRequest request;
  std::vector<float> samples;
  Transcript transcript;
  RunInfo info;
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  Clock::time_point received_at;

  // SSE: events produced by the worker, written by the HTTP thread.
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> events;
  bool started = false, finished = false;
  std::exception_ptr error;

  void push_event(const json& event) {
    std::string frame = "event: " + event["type"].get<std::string>() + "\ndata: " + dump_json(event) + "\n\n";
    {
      std::lock_guard lock(mutex);
      events.push_back(std::move(frame));
    }
    changed.notify_all();
  }
  void set_state(bool now_started, bool now_finished, std::exception_ptr e = nullptr) {
    {
      std::lock_guard lock(mutex);
      started |= now_started;
      finished |= now_finished;
      if (e) error = e;
    }
    changed.notify_all();
  }
};

TranscribeRequest parse_transcribe_body(const httplib::Request& req, const std::string& body, Task task) {
  const std::string type = original_content_type(req);
  const std::string media = media_type(type);
  if (media == "multipart/form-data") return parse_form_request(parse_multipart(body, multipart_boundary(type)), task);
  if (media == "application/json") return parse_json_request(body, task);
  throw ApiError(415, "invalid_request_error", "unsupported_media_type",
                 "[serve] Content-Type '" + type.substr(0, 100) +
                     "' is not accepted; send multipart/form-data (OpenAI's shape) or application/json");
}

// Runs on the engine worker.
void run_transcription(TranscribeJob& job, JobContext& ctx) {
  Engine& engine = ctx.engine();
  job.info.model = engine.model_name();
  job.info.load_ms = ctx.load_ms();
  job.info.queue_ms = ctx.queue_ms();
  job.set_state(true, false);
  RunHooks hooks;
  hooks.cancel = job.cancel.get();
  if (job.request.stream) {
    hooks.on_segment = [&job](const Segment& s) {
      job.push_event({{"type", "transcript.text.delta"},
                      {"delta", s.text},
                      {"segment", {{"id", s.id}, {"start", s.start}, {"end", s.end}}}});
    };
    hooks.on_progress = [&job](double done, double total) {
      // Mel frames (10 ms each), as the reference server reports progress.
      job.push_event({{"type", "transcript.progress"}, {"done", std::llround(done * 100)}, {"total", std::llround(total * 100)}});
    };
  }
  auto start = Clock::now();
  job.transcript = engine.transcribe(job.samples, job.request.options, hooks);
  job.info.transcribe_ms = ms_between(start, Clock::now());
}

void set_transcript_response(httplib::Response& res, TranscribeJob& job) {
  job.info.total_ms = ms_between(job.received_at, Clock::now());
  auto rendered = render_response(job.transcript, job.info, job.request.format);
  res.set_header("x-hark-language", job.transcript.language);
  res.set_header("x-hark-timings", timings_header(job.info));
  res.set_content(rendered.body, rendered.content_type);
}

json done_event(TranscribeJob& job) {
  job.info.total_ms = ms_between(job.received_at, Clock::now());
  json done = response_object(job.transcript, job.info,
                              job.request.format == ResponseFormat::VerboseJson ? ResponseFormat::VerboseJson
                                                                                : ResponseFormat::Json);
  done["type"] = "transcript.text.done";
  return done;
}

}  // namespace

void Server::Impl::install_transcribe_routes() {
  auto handler = [this](Task task) {
    return [this, task](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
      auto job = std::make_shared<TranscribeJob>();
      job->received_at = Clock::now();
      try {
        if (rejected_for_drain()) reject_for_drain(reader);
        std::string body = read_body(req, res, reader);
        job->request = parse_transcribe_body(req, body, task);
        body.clear();
        job->samples = decode(job->request.audio, job->request.audio_name, job->request.audio_content_type);
        job->request.audio.clear();
        job->info.vocabulary_requested = !job->request.options.vocabulary.empty();
        job->info.vad_requested = job->request.options.vad != VadMode::Off;
        job->info.words_requested = job->request.options.word_timestamps;
      } catch (...) {
        res.set_header("Connection", "close");  // the body may be partly unread
        return send_error(res, to_api_error(std::current_exception()));
      }
      auto done = least_loaded().submit(
          [job](JobContext& ctx) {
            try {
              run_transcription(*job, ctx);
              job->set_state(true, true);
            } catch (...) {
              job->set_state(false, true, std::current_exception());
              throw;
            }
          },
          {job->cancel, true, true});
      track_job(job->cancel);
      if (job->request.stream) return stream_transcription(req, res, job, done);
      try {
        await_job(done, req, *job->cancel);
      } catch (...) {
        auto error = job_error(std::current_exception());
        if (job->cancel->load() && error.code() != "drain_timeout")
          error = ApiError(kStatusClientClosed, "invalid_request_error", "client_closed_request",
                           "[serve] the client closed the connection; the job was cancelled");
        return send_error(res, error);
      }
      metrics.add_audio_seconds(job->transcript.duration);
      set_transcript_response(res, *job);
    };
  };
  http.Post("/v1/audio/transcriptions", handler(Task::Transcribe));
  http.Post("/v1/audio/translations", handler(Task::Translate));
}

void Server::Impl::stream_transcription(const httplib::Request& req, httplib::Response& res,
                                        std::shared_ptr<void> job_handle, std::future<void>& done) {
  auto job = std::static_pointer_cast<TranscribeJob>(job_handle);
  // Until the job starts, failures (model unavailable, cancelled in the queue) still get
  // their real status; after that the 200 and the event stream are committed.
  auto watch = std::make_shared<ConnectionWatch>(req);
  while (true) {
    bool started, finished;
    {
      std::unique_lock lock(job->mutex);
      job->changed.wait_for(lock, std::chrono::milliseconds(50), [&] { return job->started || job->finished; });
      started = job->started;
      finished = job->finished;
    }
    if (started) break;
    if (finished || done.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        done.get();
      } catch (...) {
        return send_error(res, job_error(std::current_exception()));
      }
      break;
    }
    if (watch->peer_closed()) job->cancel->store(true);
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider("text/event-stream", [this, job, watch, path = req.path](size_t, httplib::DataSink& sink) {
    // One provider call writes the whole stream, so a server stop() (which only
    // interrupts between calls) lets a started stream finish: that is the drain.
    auto cancel = [&] {
      job->cancel->store(true);
      log_line("cancelled", {{"path", path}, {"status", kStatusClientClosed}});
      metrics.count_cancelled();
      return false;
    };
    while (true) {
      std::deque<std::string> ready;
      bool finished;
      {
        std::unique_lock lock(job->mutex);
        job->changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return !job->events.empty() || job->finished; });
        ready.swap(job->events);
        finished = job->finished;
      }
      for (const auto& frame : ready)
        if (!sink.write(frame.data(), frame.size())) return cancel();
      if (finished) break;
      if (watch->peer_closed()) return cancel();
    }
    json last;
    if (job->error) {
      auto e = job_error(job->error);
      last = {{"type", "error"}, {"error", {{"message", e.what()}, {"type", e.type()}, {"code", e.code()}}}};
    } else {
      metrics.add_audio_seconds(job->transcript.duration);
      last = done_event(*job);
    }
    std::string frame = "event: " + last["type"].get<std::string>() + "\ndata: " + dump_json(last) + "\n\n";
    if (!sink.write(frame.data(), frame.size())) return cancel();
    sink.done();
    return true;
  });
}

}  // namespace hark::serve
