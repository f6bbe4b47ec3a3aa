// hark dictate: push-to-talk dictation from the microphone (or a file played like one)
// into a running `hark serve` (--server) or an engine in this process (--model), with
// the transcript printed, copied to the clipboard or typed into the focused window.
// The work is in src/dictate/; this file maps flags onto it. docs/voice.md documents it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands.h"
#include "dictate/capture.h"
#include "dictate/deliver.h"
#include "dictate/dictation.h"
#include "dictate/terminal.h"
#include "hark/engine.h"
#include "hark/error.h"
#include "hub/discovery.h"
#include "hub/resolve.h"

namespace hark::cli {
namespace {

using namespace hark::dictate;

struct DictateArgs {
  std::string server, api_key;
  EngineOptions engine;
  bool list_devices = false;
  int device_index = -1;
  std::string input;
  std::string realtime = "on";
  TranscribeOptions options;
  std::string vocabulary;
  bool vad = false, translate = false;
  bool copy = false, type = false;
  bool no_partial = false, repeat = false;
  double max_seconds = 0;
  int release_ms = 300;
  std::string save, save_dir;
};

void list_devices() {
  const auto devices = list_input_devices();
  if (devices.empty())
    throw Error(ErrorCode::Unavailable, "[dictate] no microphone found: connect one and check that your user may "
                                        "record (group 'audio'), or feed a file with --input FILE");
  std::printf("  index  channels      rate  host API  name\n");
  for (const auto& d : devices)
    std::printf("%c %5d  %8d  %8.0f  %-8s  %s\n", d.is_default ? '*' : ' ', d.index, d.max_channels, d.default_rate,
                d.host_api.c_str(), d.name.c_str());
  std::printf("(* = the default input; pick another with --device-index N)\n");
}

TranscribeOptions transcribe_options(const DictateArgs& a) {
  TranscribeOptions o = a.options;
  std::stringstream terms(a.vocabulary);
  for (std::string t; std::getline(terms, t, ',');)
    if (t.find_first_not_of(' ') != std::string::npos) o.vocabulary.push_back(t);
  if (a.vad) o.vad = VadMode::Gate;
  if (a.translate) o.task = Task::Translate;
  o.validate();
  return o;
}

std::unique_ptr<Transcriber> make_transcriber(DictateArgs& a, const TranscribeOptions& options) {
  if (!a.server.empty()) return make_server_transcriber({a.server, a.api_key}, options);
  if (a.engine.model.empty()) {
    auto found = hub::discover_models(hub::SearchPaths::from_environment());
    if (found.empty())
      throw Error(ErrorCode::InvalidArgument, "[dictate] nothing to transcribe with: pass --server URL (a running "
                                              "`hark serve`) or --model M (fetch one with `hark get turbo`)");
    a.engine.model = found.front().path;
  }
  EngineOptions engine = a.engine;
  engine.model = resolve_model(engine.model);
  return make_engine_transcriber(Engine::open(engine), options);
}

// The first source is opened at once, so a missing microphone or a bad file fails before
// the model loads; --repeat opens a new one per take.
SourceFactory source_factory(const DictateArgs& a, bool keys) {
  FileSourceOptions fo;
  fo.realtime = a.realtime == "on";
  fo.silence_after = keys;  // on a terminal the take ends on a key, as with a microphone
  SourceFactory open = [path = a.input, index = a.device_index, fo] {
    return path.empty() ? open_microphone(index) : open_file_source(path, fo);
  };
  auto first = std::make_shared<std::unique_ptr<AudioSource>>(open());
  return [first, open] { return *first ? std::move(*first) : open(); };
}

// Prints, copies or types the transcript. A copy or type that fails prints it instead.
void deliver(const DictateArgs& a, const std::string& transcript) {
  std::string text = transcript;
  while (!text.empty() && text.front() == ' ') text.erase(0, 1);
  if (text.empty()) {
    std::fprintf(stderr, "hark: no speech in the take\n");
    return;
  }
  if (!a.copy && !a.type) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    return;
  }
  try {
    const Desktop desktop = Desktop::current();
    const Helper helper = a.copy ? clipboard_helper(desktop) : typing_helper(desktop);
    run_helper(helper, text);
    std::fprintf(stderr, "hark: %s with %s: %s\n", a.copy ? "copied to the clipboard" : "typed", helper.argv[0].c_str(),
                 text.c_str());
  } catch (const Error&) {
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
    throw;
  }
}

[[noreturn]] void fail_take(const TakeResult& r) {
  std::string message = r.failure;
  if (!r.saved_path.empty()) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%.1f", r.seconds);
    message += "; the take (" + std::string(seconds) + " s) is saved in " + r.saved_path +
               " (transcribe it with `hark transcribe " + r.saved_path + " --model M`)";
  }
  throw Error(r.failure_code, message);
}

void run(DictateArgs& a) {
  if (a.list_devices) return list_devices();
  if (a.copy && a.type) throw Error(ErrorCode::InvalidArgument, "[dictate] choose one of --copy and --type");
  if (a.realtime != "on" && a.realtime != "off")
    throw Error(ErrorCode::InvalidArgument, "[dictate] --realtime must be on or off");
  if (!a.server.empty() && !a.engine.model.empty())
    throw Error(ErrorCode::InvalidArgument, "[dictate] give --server (transcribe on a server) or --model (in this "
                                            "process), not both");
  if (a.api_key.empty())
    if (const char* key = std::getenv("HARK_API_KEY")) a.api_key = key;
  const TranscribeOptions options = transcribe_options(a);
  DictationOptions d;
  d.keys = Terminal::stdin_is_terminal();
  d.partial = !a.no_partial && isatty(STDERR_FILENO);  // previews are shown on the status line only
  d.max_seconds = a.max_seconds;
  d.vad_gate = a.vad;
  d.save_path = a.save;
  d.save_dir = a.save_dir;
  d.timing.release_after = a.release_ms / 1000.0;
  const SourceFactory open_source = source_factory(a, d.keys);
  auto transcriber = make_transcriber(a, options);
  transcriber->prepare();  // an unreachable server, a bad key or a missing model: before anything is recorded
  install_stop_signals();
  struct Restore { ~Restore() { restore_stop_signals(); } } restore;
  for (;;) {
    TakeResult r = run_take(*transcriber, open_source, d);
    if (!r.started) return;
    if (!r.transcribed) fail_take(r);
    if (!r.saved_path.empty()) std::fprintf(stderr, "hark: the take is saved in %s\n", r.saved_path.c_str());
    deliver(a, r.text);
    if (!a.repeat || !d.keys || r.quit || stop_requested()) return;
  }
}

}  // namespace

void add_dictate_command(CLI::App& app) {
  auto a = std::make_shared<DictateArgs>();
  TranscribeOptions& o = a->options;
  auto* cmd = app.add_subcommand("dictate", "Push-to-talk dictation from the microphone (docs/voice.md)");
  cmd->add_option("--server", a->server, "URL of a running `hark serve` (e.g. http://127.0.0.1:8080)");
  cmd->add_option("--api-key", a->api_key, "the server's API key (or $HARK_API_KEY)");
  cmd->add_option("--model,-m", a->engine.model, "transcribe in this process with this checkpoint (no --server)");
  cmd->add_option("--device", a->engine.device, "with --model: cpu, cuda, cuda:N or auto")->capture_default_str();
  cmd->add_option("--threads", a->engine.threads, "with --model: CPU threads (0 = all)")->capture_default_str();
  cmd->add_flag("--list-devices", a->list_devices, "list the microphones and exit");
  cmd->add_option("--device-index", a->device_index, "the microphone to record from (see --list-devices)");
  cmd->add_option("--input", a->input, "play this audio file as the microphone instead (tests, demos)");
  cmd->add_option("--realtime", a->realtime, "with --input: on = real-time pace, off = as fast as possible")
      ->capture_default_str();
  cmd->add_option("--language", o.language, "spoken language code or name (default: detect)");
  cmd->add_option("--prompt", o.prompt, "text given as previous context (style, names)");
  cmd->add_option("--vocabulary", a->vocabulary, "comma-separated terms to recognise (fitted into the prompt)");
  cmd->add_flag("--vad", a->vad, "Silero VAD gate: a take without speech gives an empty transcript");
  cmd->add_flag("--translate", a->translate, "translate to English");
  cmd->add_flag("--copy", a->copy, "copy the transcript to the clipboard (wl-copy, xclip or xsel)");
  cmd->add_flag("--type", a->type, "type the transcript into the focused window (wtype or xdotool)");
  cmd->add_flag("--no-partial", a->no_partial, "no previews of the unfinished text while recording");
  cmd->add_option("--max-seconds", a->max_seconds, "stop a take after this many seconds (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--release-ms", a->release_ms, "without key-up events: this long without auto-repeat = released")
      ->capture_default_str()->check(CLI::Range(50, 5000));
  cmd->add_flag("--repeat", a->repeat, "on a terminal: after each transcript, wait for the next take (q quits)");
  cmd->add_option("--save", a->save, "also keep the take in this WAV file");
  cmd->add_option("--save-dir", a->save_dir, "where a take that could not be transcribed is saved "
                                             "(default: $XDG_STATE_HOME/hark/takes or ~/.local/state/hark/takes)");
  cmd->callback([a] { run(*a); });
}

}  // namespace hark::cli
