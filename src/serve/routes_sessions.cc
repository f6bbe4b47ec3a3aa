// Streaming sessions: POST /v1/audio/sessions, POST …/{id}/audio, POST …/{id}/finish,
// DELETE …/{id}. The HTTP thread decodes each chunk; feeding the StreamingRun (which
// transcribes every completed 30 s window) happens on the engine worker.
#include <cmath>

#include "serve/render.h"
#include "serve/server_impl.h"

namespace hark::serve {
namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

ApiError finished_error(const std::string& id) {
  return ApiError(409, "invalid_request_error", "session_finished",
                  "[serve] session '" + id + "' is finished; open a new one with POST /v1/audio/sessions");
}

ApiError closed_error(const std::string& id) {
  return ApiError(404, "invalid_request_error", "session_not_found",
                  "[serve] session '" + id + "' was closed (deleted, expired, or its server is shutting down)");
}

bool only_whitespace(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

json segments_so_far(const StreamingRun& run) {
  json out = json::array();
  for (const auto& s : run.segments())
    out.push_back({{"id", s.id}, {"start", s.start}, {"end", s.end}, {"text", s.text}});
  return out;
}

// Sessions take the task from a "task" field ("transcribe" or "translate"), since they
// have one route for both; the one-shot routes carry the task in their path instead.
Task session_task(const std::string& body) {
  auto parsed = json::parse(body, nullptr, false);
  if (!parsed.is_object() || !parsed.contains("task")) return Task::Transcribe;
  const json& task = parsed["task"];
  if (task == "transcribe") return Task::Transcribe;
  if (task == "translate") return Task::Translate;
  throw bad_request("[serve] field 'task' must be transcribe or translate");
}

// Under a second of audio is at most a word or two, on which Whisper tends to invent a
// sentence; the preview waits for more.
constexpr size_t kMinPreviewSamples = 16000;

bool wants_partial(const httplib::Request& req) {
  if (!req.has_param("partial")) return false;
  const std::string v = req.get_param_value("partial");
  return v != "0" && v != "false";
}

// Text of the audio after the last final segment, from one greedy pass over it. Nothing
// is committed: the next chunk may complete the window and finalize different text.
std::string preview_text(Engine& engine, const Session& s) {
  RunHooks hooks;
  hooks.cancel = s.cancel.get();
  if (s.pending.samples.size() < kMinPreviewSamples) return "";
  TranscribeOptions o = s.params.options;
  o.temperatures = {0.0f};
  o.beam_size = 0;
  o.word_timestamps = false;
  o.hallucination_silence_threshold.reset();
  o.clip_timestamps.clear();
  return engine.transcribe(s.pending.samples, o, hooks).text;
}

}  // namespace

std::future<void> Server::Impl::session_job(const std::shared_ptr<Session>& s, std::function<void(JobContext&)> fn,
                                            bool count_as_request) {
  // Counted and submitted under the session's mutex, so a close job submitted later is
  // also started later and finds every earlier job counted.
  std::lock_guard lock(s->mutex);
  if (s->closing || s->closed) throw closed_error(s->id);
  ++s->jobs_in_flight;
  auto ran = std::make_shared<bool>(false);
  auto done = s->worker->submit(
      [s, ran, fn = std::move(fn)](JobContext& ctx) {
        std::unique_lock job_lock(s->mutex);
        *ran = true;
        struct Settle {
          Session& s;
          ~Settle() {
            if (--s.jobs_in_flight == 0) s.settled.notify_all();
          }
        } settle{*s};
        fn(ctx);
      },
      {nullptr, count_as_request});
  if (done.wait_for(std::chrono::seconds(0)) == std::future_status::ready && !*ran) --s->jobs_in_flight;
  return done;
}

std::future<void> Server::Impl::close_session(const std::shared_ptr<Session>& s, bool stop_running_job) {
  // A delete stops the running job at its next decoder step; a drain lets accepted chunks
  // finish. The close job waits for the jobs submitted before it either way.
  if (stop_running_job) s->cancel->store(true);
  std::lock_guard lock(s->mutex);
  if (s->closing) return {};
  s->closing = true;
  return s->worker->submit(
      [s](JobContext&) {
        std::unique_lock job_lock(s->mutex);
        s->settled.wait(job_lock, [&] { return s->jobs_in_flight == 0; });
        if (s->run) s->worker->unpin();
        s->run.reset();
        s->closed = true;
      },
      {nullptr, false});
}

void Server::Impl::install_session_routes() {
  using Reader = httplib::ContentReader;
  http.Post("/v1/audio/sessions", [this](const httplib::Request& req, httplib::Response& res, const Reader& reader) {
    open_session(req, res, reader);
  });
  http.Post(R"(/v1/audio/sessions/([^/]+)/audio)",
            [this](const httplib::Request& req, httplib::Response& res, const Reader& reader) {
              feed_session(req, res, reader);
            });
  http.Post(R"(/v1/audio/sessions/([^/]+)/finish)",
            [this](const httplib::Request& req, httplib::Response& res) { finish_session(req, res); });
  http.Delete(R"(/v1/audio/sessions/([^/]+))",
              [this](const httplib::Request& req, httplib::Response& res) { delete_session(req, res); });
}

void Server::Impl::open_session(const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
  if (rejected_for_drain()) reject_for_drain(reader);
  std::string body = read_body(req, res, reader);
  TranscribeRequest params;
  if (!only_whitespace(body)) {
    if (media_type(original_content_type(req)) != "application/json")
      throw ApiError(415, "invalid_request_error", "unsupported_media_type",
                     "[serve] session parameters must be a JSON object (Content-Type: application/json)");
    params = parse_json_request(body, session_task(body), false);
  }
  if (params.format != ResponseFormat::Json && params.format != ResponseFormat::VerboseJson)
    throw bad_request("[serve] field 'response_format' of a session must be json or verbose_json");
  auto session = sessions.create(std::move(params));
  session->worker = &least_loaded();
  auto model = std::make_shared<std::string>();
  auto opened = session_job(
      session,
      [this, session, model](JobContext& ctx) {
        Engine& engine = ctx.engine();
        *model = engine.model_name();
        RunHooks hooks;
        hooks.cancel = session->cancel.get();
        session->run = engine.stream(session->params.options, hooks);
        session->worker->pin();
      },
      false);
  try {
    opened.get();
  } catch (...) {
    sessions.remove(session->id);
    throw;
  }
  log_line("session_open", {{"id", session->id}});
  json out = {{"id", session->id}, {"model", *model}, {"vocabulary", session->params.options.vocabulary}};
  res.set_content(out.dump(), "application/json");
}

void Server::Impl::feed_session(const httplib::Request& req, httplib::Response& res,
                                const httplib::ContentReader& reader) {
  auto session = sessions.get(req.matches[1]);
  if (session->finished) throw finished_error(session->id);
  std::string body = read_body(req, res, reader);
  if (body.empty()) throw bad_request("[serve] empty audio chunk", "invalid_audio");
  auto samples = std::make_shared<std::vector<float>>(decode(body, "", original_content_type(req)));
  auto out = std::make_shared<json>();
  const bool partial = wants_partial(req);
  auto fed = session_job(
      session,
      [session, samples, out, partial](JobContext& ctx) {
        if (session->closed || !session->run) throw closed_error(session->id);
        if (session->finished) throw finished_error(session->id);
        try {
          session->run->feed(*samples);
        } catch (const Error& e) {
          if (e.code() == ErrorCode::Cancelled && session->cancel->load()) throw closed_error(session->id);
          throw;
        }
        session->samples += samples->size();
        session->pending.append(*samples);
        if (!session->run->segments().empty())
          session->pending.drop_before(static_cast<size_t>(std::llround(session->run->segments().back().end * 16000)));
        json segments = segments_so_far(*session->run);
        bool speech = !segments.empty() || session->params.options.vad == VadMode::Off;
        *out = {{"samples", session->samples}, {"duration", session->samples / 16000.0},
                {"speech", speech}, {"segments", segments}};
        if (partial) (*out)["partial"] = preview_text(ctx.engine(), *session);
      },
      false);
  fed.get();
  sessions.touch(*session);
  metrics.add_audio_seconds(samples->size() / 16000.0);
  res.set_content(out->dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void Server::Impl::finish_session(const httplib::Request& req, httplib::Response& res) {
  auto received = Clock::now();
  auto session = sessions.get(req.matches[1]);
  if (session->finished) throw finished_error(session->id);
  auto transcript = std::make_shared<Transcript>();
  auto info = std::make_shared<RunInfo>();
  auto finished = session_job(
      session,
      [this, session, transcript, info](JobContext& ctx) {
        if (session->closed || !session->run) throw closed_error(session->id);
        if (session->finished) throw finished_error(session->id);
        auto start = Clock::now();
        try {
          *transcript = session->run->finish();
        } catch (const Error& e) {
          if (e.code() == ErrorCode::Cancelled && session->cancel->load()) throw closed_error(session->id);
          throw;
        }
        info->transcribe_ms = ms_between(start, Clock::now());
        info->queue_ms = ctx.queue_ms();
        info->model = ctx.engine().model_name();
        session->run.reset();
        session->worker->unpin();
        sessions.mark_finished(*session);
      },
      true);
  finished.get();
  const auto& options = session->params.options;
  info->vocabulary_requested = !options.vocabulary.empty();
  info->vad_requested = options.vad != VadMode::Off;
  info->words_requested = options.word_timestamps;
  info->total_ms = ms_between(received, Clock::now());
  auto rendered = render_response(*transcript, *info, session->params.format);
  res.set_header("x-hark-language", transcript->language);
  res.set_header("x-hark-timings", timings_header(*info));
  res.set_content(rendered.body, rendered.content_type);
  log_line("session_finish", {{"id", session->id}, {"samples", session->samples}});
}

void Server::Impl::delete_session(const httplib::Request& req, httplib::Response& res) {
  auto session = sessions.get(req.matches[1]);
  sessions.remove(session->id);
  if (auto closed = close_session(session, true); closed.valid()) closed.get();
  res.status = 204;
}

}  // namespace hark::serve
