// hark serve [MODEL]: the OpenAI-compatible transcription server (src/serve/). This file
// maps flags onto ServerOptions, wires the real model loader and audio decoder, and turns
// SIGINT/SIGTERM into a drain.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

#include "audio/audio.h"
#include "cli/commands.h"
#include "cli/compute_type.h"
#include "hark/engine.h"
#include "hark/error.h"
#include "hub/discovery.h"
#include "hub/resolve.h"
#include "serve/server.h"

namespace hark::cli {
namespace {

// SIGINT/SIGTERM land in whichever thread the kernel picks (BLAS pools start before
// main), so the handler only writes a byte to a pipe that one thread waits on.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int sig) {
  const char byte = static_cast<char>(sig);
  [[maybe_unused]] auto n = write(g_signal_pipe[1], &byte, 1);
}

struct ServeFlags {
  std::string model;
  std::string device = "auto";
  int threads = 0;
  std::string compute_type = "auto";
  double max_upload_mb = 100;
  serve::ServerOptions server;
};

// With no MODEL, the first checkpoint on disk (hark's folder, then the HF and whisper.cpp caches).
std::string default_model() {
  auto found = hub::discover_models(hub::SearchPaths::from_environment());
  return found.empty() ? std::string() : found.front().path;
}

serve::EngineFactory engine_factory(const ServeFlags& flags) {
  return [model = flags.model, device = flags.device, threads = flags.threads,
          compute_type = flags.compute_type]() -> std::unique_ptr<Engine> {
    if (model.empty())
      throw Error(ErrorCode::Unavailable,
                  "[serve] no Whisper checkpoint on disk; fetch one with `hark get turbo` (or start `hark serve MODEL`)");
    EngineOptions o;
    o.model = resolve_model(model);  // NotFound names the `hark get` command
    o.device = device;
    o.threads = threads;
    o.compute_type = compute_type;
    return Engine::open(o);
  };
}

serve::AudioDecoder audio_decoder(double max_audio_sec, size_t max_bytes) {
  return [max_audio_sec, max_bytes](std::string_view bytes, const std::string& name_hint) {
    AudioLimits limits;
    limits.max_seconds = max_audio_sec;
    limits.max_bytes = max_bytes;
    return decode_audio_memory(bytes.data(), bytes.size(), limits, name_hint);
  };
}

void run_server(ServeFlags flags) {
  check_compute_type_for_device(flags.compute_type, flags.device);
  if (flags.model.empty()) flags.model = default_model();
  auto& o = flags.server;
  o.model_name = flags.model.empty() ? "whisper" : flags.model;
  o.max_upload_bytes = static_cast<size_t>(flags.max_upload_mb * 1024 * 1024);
  if (o.api_key.empty())
    if (const char* key = std::getenv("HARK_API_KEY")) o.api_key = key;

  if (pipe(g_signal_pipe) != 0) throw Error(ErrorCode::Io, "[serve] cannot create the signal pipe");
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  serve::ServerDeps deps{engine_factory(flags), audio_decoder(o.max_audio_sec, o.max_upload_bytes)};
  serve::Server server(o, deps);
  int port = server.start();
  std::fprintf(stderr, "hark: serving %s on http://%s:%d (Ctrl-C drains and stops)\n", o.model_name.c_str(),
               o.host.c_str(), port);
  std::thread signal_thread([&] {
    char sig = 0;
    while (read(g_signal_pipe[0], &sig, 1) < 0) {}  // retry after EINTR
    if (sig != 0)
      std::fprintf(stderr, "hark: %s received; finishing in-flight requests\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    server.stop();
  });
  server.wait();
  on_stop_signal(0);  // wakes the signal thread if something else stopped the server
  signal_thread.join();
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  auto* cmd = app.add_subcommand("serve", "OpenAI-compatible transcription server (POST /v1/audio/transcriptions, ...)");
  auto& o = flags->server;
  cmd->add_option("model", flags->model, "checkpoint path, repo id or short name (default: the first one on disk)");
  cmd->add_option("--host", o.host, "address to bind (127.0.0.1 = this machine only)")->capture_default_str();
  cmd->add_option("--port", o.port, "TCP port (0 = any free port)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on every route but /health (or $HARK_API_KEY)");
  cmd->add_option("--device", flags->device, "cpu | cuda | cuda:N | auto")->capture_default_str();
  cmd->add_option("--threads", flags->threads, "compute threads for the engine (0 = all cores)")->capture_default_str();
  add_compute_type_option(cmd, flags->compute_type);
  cmd->add_option("--http-threads", o.http_threads, "connections served at once")->capture_default_str()->check(CLI::Range(2, 1024));
  cmd->add_option("--max-sessions", o.max_sessions, "open streaming sessions at most (429 beyond)")->capture_default_str();
  cmd->add_option("--session-idle", o.session_idle_sec, "seconds before an idle session expires")->capture_default_str();
  cmd->add_option("--max-upload-mb", flags->max_upload_mb, "request body limit in MiB (413 beyond)")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-audio-sec", o.max_audio_sec, "decoded audio duration limit (413 beyond)")->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--upload-timeout", o.upload_timeout_sec, "seconds a request body may take to arrive")->capture_default_str();
  cmd->add_option("--idle-unload", o.residency.idle_unload_sec, "page the weights out after this many idle seconds")
      ->capture_default_str();
  cmd->add_flag("--resident", o.residency.resident, "load at start and never page the weights out");
  cmd->add_option("--log-format", o.log_format, "text | json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", o.log_level, "off | error | warn | info | debug")->capture_default_str()
      ->check(CLI::IsMember({"off", "error", "warn", "info", "debug"}));
  cmd->callback([flags] {
    flags->server.residency.preload = flags->server.residency.resident;
    run_server(*flags);
  });
}

}  // namespace hark::cli
