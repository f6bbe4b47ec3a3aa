// hark serve [MODEL]: the OpenAI-compatible transcription server (src/serve/). This file
// maps flags onto ServerOptions, wires the real model loader and audio decoder, and turns
// SIGINT/SIGTERM into a drain (a second signal cuts it short).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "audio/audio.h"
#include "cli/commands.h"
#include "cli/compute_type.h"
#include "cli/model_arg.h"
#include "core/backend.h"
#include "hark/engine.h"
#include "hark/error.h"
#include "hub/discovery.h"
#include "serve/device_list.h"
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

// Exit status when --drain-timeout expired and accepted requests were cancelled
// (EX_TEMPFAIL: the work can be sent again). docs/deploy.md lists it.
constexpr int kExitDrainTimedOut = 75;
// A cancelled job stops at its next 30 s window; if the process still has not stopped
// this long after the drain timeout, it exits anyway.
constexpr double kHardExitGraceSec = 20;

// Ends the process when a drain outlives its bound (a job stuck in the engine).
class DrainWatchdog {
 public:
  void arm(double seconds) {
    deadline_ms_ = now_ms() + static_cast<int64_t>(seconds * 1000);
    if (started_.exchange(true)) return;
    std::thread([this] {
      while (now_ms() < deadline_ms_) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::fprintf(stderr, "hark: the drain did not end in time; exiting with status %d\n", kExitDrainTimedOut);
      std::_Exit(kExitDrainTimedOut);
    }).detach();
  }

 private:
  static int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  std::atomic<int64_t> deadline_ms_{0};
  std::atomic<bool> started_{false};
};

struct ServeFlags {
  std::string model;
  std::string device = "auto";  // one device, or a GPU list (one engine worker each)
  int threads = 0;
  std::string compute_type = "auto";
  int max_batch = 0;     // 0: auto (16 on the CPU, 64 on a GPU); 1: one job at a time
  int encode_batch = 0;  // 0: auto (1 on the CPU, 16 on a GPU)
  double max_upload_mb = 100;
  serve::ServerOptions server;
};

// With no MODEL, the first checkpoint on disk (hark's folder, then the HF and whisper.cpp caches).
std::string default_model() {
  auto found = hub::discover_models(hub::SearchPaths::from_environment());
  return found.empty() ? std::string() : found.front().path;
}

serve::EngineFactory engine_factory(const ServeFlags& flags) {
  return [model = flags.model, device = flags.device, threads = flags.threads, compute_type = flags.compute_type,
          max_batch = flags.max_batch, encode_batch = flags.encode_batch]() -> std::unique_ptr<Engine> {
    if (model.empty())
      throw Error(ErrorCode::Unavailable,
                  "[serve] no Whisper checkpoint on disk; fetch one with `hark get turbo` (or start `hark serve MODEL`)");
    EngineOptions o;
    o.model = engine_model_arg(model);  // synthetic:SIZE (benchmarks, tests) is made, not found
    o.device = device;
    o.threads = threads;
    o.compute_type = compute_type;
    o.max_batch = max_batch;
    o.encode_batch = encode_batch;
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

// The engine workers' devices: one, or one per listed GPU (cuda:all: every visible GPU),
// each worker with its own copy of the model.
std::vector<std::string> serve_devices(const std::string& text) {
  auto selection = serve::parse_device_selection(text);
  if (!selection.all_gpus) return selection.devices;
  const int count = cuda_device_count();
  if (count <= 0)
    throw Error(ErrorCode::Unavailable, "[serve] --device cuda:all: no CUDA GPU is visible; use --device cpu");
  std::vector<std::string> devices;
  for (int i = 0; i < count; ++i) devices.push_back("cuda:" + std::to_string(i));
  return devices;
}

// Waits for SIGINT/SIGTERM: the first starts the drain, the second ends it now.
void handle_signals(serve::Server& server, double drain_timeout, serve::DrainReport& report, std::thread& drainer) {
  static DrainWatchdog watchdog;
  for (int received = 0;;) {
    char sig = 0;
    if (read(g_signal_pipe[0], &sig, 1) < 0) continue;  // EINTR
    if (sig == 0) return;                                 // the server stopped
    const char* name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
    if (++received == 1) {
      std::fprintf(stderr, "hark: %s received; draining: new work gets 503, accepted work has %g s to finish (send it again to stop sooner)\n",
                   name, drain_timeout);
      watchdog.arm(drain_timeout + kHardExitGraceSec);
      drainer = std::thread([&] { report = server.stop(); });
    } else {
      std::fprintf(stderr, "hark: second %s; cancelling the remaining work\n", name);
      watchdog.arm(kHardExitGraceSec);
      server.expire_drain();
    }
  }
}

void run_server(ServeFlags flags) {
  const std::vector<std::string> devices = serve_devices(flags.device);
  check_compute_type_for_device(flags.compute_type, devices.front());
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

  serve::ServerDeps deps{{}, audio_decoder(o.max_audio_sec, o.max_upload_bytes), {}};
  for (const std::string& device : devices) {
    ServeFlags one = flags;
    one.device = device;
    deps.device_engines.emplace_back(device, engine_factory(one));
  }
  serve::Server server(o, deps);
  int port = server.start();
  std::fprintf(stderr, "hark: serving %s on http://%s:%d as instance %s (Ctrl-C drains and stops)\n",
               o.model_name.c_str(), o.host.c_str(), port, server.instance_id().c_str());
  serve::DrainReport report;
  std::thread drainer;
  std::thread signal_thread([&] { handle_signals(server, o.drain_timeout_sec, report, drainer); });
  server.wait();
  on_stop_signal(0);  // wakes the signal thread
  signal_thread.join();
  if (drainer.joinable()) drainer.join();
  if (report.cancelled > 0) {
    std::fprintf(stderr, "hark: --drain-timeout expired; %zu request(s) were cancelled with 503 drain_timeout\n",
                 report.cancelled);
    throw CLI::RuntimeError(kExitDrainTimedOut);
  }
  std::fprintf(stderr, "hark: drained in %.1f s\n", report.seconds);
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
  cmd->add_option("--device", flags->device, "cpu | cuda | cuda:N | auto, or GPUs cuda:0,cuda:1 | cuda:all: one engine worker (and model copy) per GPU")
      ->capture_default_str();
  cmd->add_option("--threads", flags->threads, "compute threads for the engine (0 = all cores)")->capture_default_str();
  add_compute_type_option(cmd, flags->compute_type);
  cmd->add_option("--max-batch", flags->max_batch,
                  "decoder sequences stepped together across requests (0 = auto: 16 on the CPU, 64 on a GPU; "
                  "1 = one request at a time)")
      ->capture_default_str()->check(CLI::Range(0, 1024));
  cmd->add_option("--encode-batch", flags->encode_batch,
                  "audio windows per encoder call when batching (0 = auto: 1 on the CPU, 16 on a GPU)")
      ->capture_default_str()->check(CLI::Range(0, 256));
  cmd->add_option("--max-queue", o.max_queue,
                  "transcriptions queued or running at once; beyond it 503 with Retry-After (0 = no limit)")
      ->capture_default_str();
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
  cmd->add_option("--instance-id,--route-key", o.instance_id,
                  "routing key in session ids and the x-hark-instance header (default: <host>-<port>)");
  cmd->add_option("--drain-timeout", o.drain_timeout_sec,
                  "on SIGTERM, seconds accepted work may take before it is cancelled")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--log-format", o.log_format, "text | json")->capture_default_str()->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--log-level", o.log_level, "off | error | warn | info | debug")->capture_default_str()
      ->check(CLI::IsMember({"off", "error", "warn", "info", "debug"}));
  cmd->callback([flags] {
    flags->server.residency.preload = flags->server.residency.resident;
    run_server(*flags);
  });
}

}  // namespace hark::cli
