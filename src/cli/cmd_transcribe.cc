// hark transcribe FILE... --model M: every decoding option of the reference's CLI, one
// Engine for all files, output files per --format in --output-dir (or stdout), and a
// progress bar on a terminal. --manifest LIST --shard K/N runs a share of an archive
// (batch.h, manifest.h).
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "audio/audio.h"
#include "cli/batch.h"
#include "cli/batch_trace.h"
#include "cli/commands.h"
#include "cli/compute_type.h"
#include "cli/manifest.h"
#include "cli/model_arg.h"
#include "hark/engine.h"
#include "hark/error.h"
#include "hub/resolve.h"
#include "model/compute_type.h"
#include "output/writers.h"

namespace hark::cli {
namespace {

struct TranscribeArgs {
  std::vector<std::string> files;
  EngineOptions engine;
  TranscribeOptions options;
  std::string task = "transcribe";
  std::string temperature = "0";
  std::string temperature_increment = "0.2";
  std::string suppress_tokens = "-1";
  std::string clip_timestamps;
  std::string vocabulary;
  std::string vad = "off";
  std::string length_penalty, no_speech_threshold = "0.6", logprob_threshold = "-1.0",
              compression_ratio_threshold = "2.4", hallucination_silence_threshold;
  std::string format = "txt";
  std::string output_dir;
  bool no_progress = false;
  std::string manifest, shard;
  bool resume = false;
  int parallel = 0;  // --manifest: files at once (0: auto)
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

float parse_float(const std::string& text, const char* what) {
  try {
    size_t used = 0;
    float v = std::stof(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw Error(ErrorCode::InvalidArgument, std::string("[cli] ") + what + ": '" + text + "' is not a number");
}

// "none" (or empty) turns a threshold off, as the reference's optional_float.
std::optional<float> optional_float(const std::string& text, const char* what) {
  if (text.empty() || text == "none" || text == "None") return std::nullopt;
  return parse_float(text, what);
}

// A list "0,0.4,0.8" is the ladder itself; a single T climbs by the increment up to 1.0.
std::vector<float> temperature_ladder(const std::string& temperature, const std::string& increment) {
  std::vector<float> out;
  for (const std::string& t : split_list(temperature)) out.push_back(parse_float(t, "--temperature"));
  std::optional<float> step = optional_float(increment, "--temperature-increment-on-fallback");
  if (out.size() == 1 && step && *step > 0)
    for (int i = 1; out[0] + i * *step <= 1.0f + 1e-6f; ++i) out.push_back(out[0] + i * *step);
  return out;
}

void finish_options(TranscribeArgs& a) {
  TranscribeOptions& o = a.options;
  if (a.task != "transcribe" && a.task != "translate")
    throw Error(ErrorCode::InvalidArgument, "[cli] --task must be transcribe or translate");
  o.task = a.task == "translate" ? Task::Translate : Task::Transcribe;
  o.temperatures = temperature_ladder(a.temperature, a.temperature_increment);
  o.suppress_tokens.clear();
  for (const std::string& t : split_list(a.suppress_tokens))
    o.suppress_tokens.push_back(static_cast<int>(parse_float(t, "--suppress-tokens")));
  for (const std::string& t : split_list(a.clip_timestamps)) o.clip_timestamps.push_back(parse_float(t, "--clip-timestamps"));
  for (const std::string& t : split_list(a.vocabulary))
    if (!t.empty()) o.vocabulary.push_back(t);
  o.length_penalty = optional_float(a.length_penalty, "--length-penalty");
  o.no_speech_threshold = optional_float(a.no_speech_threshold, "--no-speech-threshold");
  o.logprob_threshold = optional_float(a.logprob_threshold, "--logprob-threshold");
  o.compression_ratio_threshold = optional_float(a.compression_ratio_threshold, "--compression-ratio-threshold");
  o.hallucination_silence_threshold =
      optional_float(a.hallucination_silence_threshold, "--hallucination-silence-threshold");
  if (a.vad == "off") o.vad = VadMode::Off;
  else if (a.vad == "gate") o.vad = VadMode::Gate;
  else if (a.vad == "trim") o.vad = VadMode::Trim;
  else throw Error(ErrorCode::InvalidArgument, "[cli] --vad must be off, gate or trim");
  o.validate();
}

// A one-line bar on stderr, redrawn in place; only on a terminal.
class ProgressBar {
 public:
  ProgressBar(std::string name, bool enabled) : name_(std::move(name)), enabled_(enabled) {}
  ~ProgressBar() {
    if (enabled_ && drawn_) std::fprintf(stderr, "\n");
  }
  void update(double done, double total) {
    if (!enabled_ || total <= 0) return;
    const int width = 30;
    const int filled = static_cast<int>(std::round(width * std::min(1.0, done / total)));
    std::fprintf(stderr, "\r%s [%s%s] %5.1f/%5.1f s", name_.c_str(), std::string(filled, '#').c_str(),
                 std::string(width - filled, '.').c_str(), std::min(done, total), total);
    std::fflush(stderr);
    drawn_ = true;
  }

 private:
  std::string name_;
  bool enabled_;
  bool drawn_ = false;
};

std::vector<OutputFormat> output_formats(const std::string& format) {
  if (format == "all")
    return {OutputFormat::Txt, OutputFormat::VerboseJson, OutputFormat::Srt, OutputFormat::Vtt, OutputFormat::Tsv};
  return {parse_output_format(format)};
}

void write_outputs(const TranscribeArgs& a, const std::string& file, const Transcript& t) {
  for (OutputFormat f : output_formats(a.format)) {
    const std::string body = format_transcript(t, f);
    if (a.output_dir.empty()) {
      std::fwrite(body.data(), 1, body.size(), stdout);
      continue;
    }
    std::filesystem::create_directories(a.output_dir);
    const auto path = std::filesystem::path(a.output_dir) /
                      (std::filesystem::path(file).stem().string() + "." + file_extension(f));
    std::ofstream out(path, std::ios::binary);
    out << body;
    if (!out) throw Error(ErrorCode::Io, "[cli] cannot write " + path.string() + "; check --output-dir");
  }
}

// --parallel: files in flight. Auto is 64 on a GPU, where runs batched together multiply
// the throughput (docs/batching.md), and 1 on the CPU, where batching gains less and
// every file is then decoded exactly as alone in list order. The engine batches the runs'
// model work whenever more than one is in flight.
int manifest_parallelism(const TranscribeArgs& a) {
  if (a.parallel < 0) throw Error(ErrorCode::InvalidArgument, "[cli] --parallel must be 0 (auto) or more");
  if (a.parallel > 0) return a.parallel;
  return device_of(a.engine.device) == Device::Cuda ? 64 : 1;
}

// --manifest: this shard's share of the list, failures logged and skipped, a summary at
// the end; the exit status is kExitSomeFilesFailed when a file failed.
void run_manifest(TranscribeArgs& a) {
  if (!a.files.empty()) throw Error(ErrorCode::InvalidArgument, "[cli] give audio files or --manifest, not both");
  if (a.output_dir.empty())
    throw Error(ErrorCode::InvalidArgument, "[cli] --manifest needs --output-dir (outputs mirror the input paths there)");
  const Shard shard = a.shard.empty() ? Shard{} : parse_shard(a.shard);
  BatchOptions options;
  options.output_dir = a.output_dir;
  options.formats = output_formats(a.format);
  options.resume = a.resume;
  options.shard_label = std::to_string(shard.index) + "/" + std::to_string(shard.count);
  options.parallel = manifest_parallelism(a);
  if (options.parallel > 1 && a.engine.max_batch == 1) a.engine.max_batch = 0;  // batching, the device's default rows
  if (options.parallel == 1) a.engine.max_batch = 1;
  check_compute_type_for_device(a.engine.compute_type, a.engine.device);
  const auto inputs = shard_entries(read_manifest_file(a.manifest), shard);
  std::unique_ptr<Engine> engine;
  std::atomic<Engine*> opened = nullptr;  // for the trace's thread
  BatchCallbacks callbacks;
  callbacks.prepare = [&] {
    a.engine.model = engine_model_arg(a.engine.model);
    engine = Engine::open(a.engine);
    opened = engine.get();
  };
  WorkerCounts workers;  // for the trace (HARK_BATCH_TRACE_MS)
  callbacks.transcribe = [&](const std::string& file) {
    std::vector<float> audio;
    {
      const WorkerCounts::In reading(workers.reading);
      audio = decode_audio_file(file);
    }
    const WorkerCounts::In running(workers.running);
    return engine->transcribe(audio, a.options);
  };
  callbacks.max_parallel = [&] { return engine->max_concurrent_runs(); };
  callbacks.log = [](const std::string& line) { std::fprintf(stderr, "hark: %s\n", line.c_str()); };
  BatchSummary summary;
  {
    const BatchTrace trace(
        [&] {
          Engine* e = opened.load();
          return e ? e->batch_stats() : BatchStats{};
        },
        workers, callbacks.log);
    summary = run_batch(inputs, options, callbacks);
  }
  if (engine) {
    const BatchStats stats = engine->batch_stats();
    if (stats.steps > 0) callbacks.log(batch_stats_line(stats));
  }
  if (summary.failed > 0) throw CLI::RuntimeError(kExitSomeFilesFailed);
}

void run(TranscribeArgs& a) {
  finish_options(a);
  if (a.format != "all") parse_output_format(a.format);  // fail before loading the model
  if (!a.manifest.empty()) return run_manifest(a);
  if (!a.shard.empty() || a.resume)
    throw Error(ErrorCode::InvalidArgument, "[cli] --shard and --resume work with --manifest LIST");
  if (a.parallel != 0 || a.engine.max_batch != 1 || a.engine.encode_batch != 0)
    throw Error(ErrorCode::InvalidArgument,
                "[cli] --parallel, --max-batch and --encode-batch work with --manifest LIST (files transcribed at once)");
  if (a.files.empty()) throw Error(ErrorCode::InvalidArgument, "[cli] no audio files given (or --manifest LIST)");
  if (a.format == "all" && a.output_dir.empty())
    throw Error(ErrorCode::InvalidArgument, "[cli] --format all needs --output-dir");
  check_compute_type_for_device(a.engine.compute_type, a.engine.device);
  a.engine.model = resolve_model(a.engine.model);
  auto engine = Engine::open(a.engine);
  const bool tty = !a.no_progress && isatty(fileno(stderr));
  for (const std::string& file : a.files) {
    const std::vector<float> audio = decode_audio_file(file);
    ProgressBar bar(std::filesystem::path(file).filename().string(), tty);
    RunHooks hooks;
    hooks.on_progress = [&bar](double done, double total) { bar.update(done, total); };
    Transcript t = engine->transcribe(audio, a.options, hooks);
    bar.update(t.duration, t.duration);
    write_outputs(a, file, t);
  }
}

}  // namespace

void add_transcribe_command(CLI::App& app) {
  auto a = std::make_shared<TranscribeArgs>();
  TranscribeOptions& o = a->options;
  auto* cmd = app.add_subcommand("transcribe", "Transcribe (or translate) audio files with a Whisper checkpoint");
  cmd->add_option("files", a->files, "Audio files (WAV, or anything FFmpeg decodes)");
  cmd->add_option("--model,-m", a->engine.model, "Checkpoint folder/file, repo id or short name")->required();
  cmd->add_option("--device", a->engine.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  cmd->add_option("--threads", a->engine.threads, "CPU threads (0 = all)")->capture_default_str();
  add_compute_type_option(cmd, a->engine.compute_type);
  cmd->add_option("--language", o.language, "Spoken language code or name (default: detect from the first 30 s)");
  cmd->add_option("--task", a->task, "transcribe, or translate to English")->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "Sampling temperature, or a comma list forming the fallback ladder")
      ->capture_default_str();
  cmd->add_option("--temperature-increment-on-fallback", a->temperature_increment,
                  "Ladder step above a single --temperature up to 1.0 ('none' = no fallback)")
      ->capture_default_str();
  cmd->add_option("--beam-size", o.beam_size, "Beams at temperature 0 (0 = greedy)")->capture_default_str();
  cmd->add_option("--best-of", o.best_of, "Samples per window when the temperature is above 0")->capture_default_str();
  cmd->add_option("--patience", o.patience, "Beam search patience (finished candidates = beam size x patience)")
      ->capture_default_str();
  cmd->add_option("--length-penalty", a->length_penalty, "Google NMT alpha in [0, 1] (default: length normalisation)");
  cmd->add_option("--prompt,--initial-prompt", o.prompt, "Text given as previous context to the first window");
  cmd->add_option("--prefix", o.prefix, "Text forced at the start of the first window");
  cmd->add_option("--vocabulary", a->vocabulary, "Comma-separated terms fitted whole into the prompt budget");
  cmd->add_flag("--word-timestamps", o.word_timestamps, "Word-level timestamps (cross-attention + DTW)");
  cmd->add_option("--prepend-punctuations", o.prepend_punctuations, "Merged with the next word");
  cmd->add_option("--append-punctuations", o.append_punctuations, "Merged with the previous word");
  cmd->add_option("--condition-on-previous-text", o.condition_on_previous_text,
                  "Give each window the previous text as its prompt (true/false)")
      ->capture_default_str();
  cmd->add_option("--no-speech-threshold", a->no_speech_threshold, "Skip a window above this no-speech probability")
      ->capture_default_str();
  cmd->add_option("--logprob-threshold", a->logprob_threshold, "Fall back below this average log-probability")
      ->capture_default_str();
  cmd->add_option("--compression-ratio-threshold", a->compression_ratio_threshold,
                  "Fall back above this zlib compression ratio")
      ->capture_default_str();
  cmd->add_option("--clip-timestamps", a->clip_timestamps, "start,end,start,end,... seconds to transcribe");
  cmd->add_flag("--without-timestamps", o.without_timestamps, "Text only (<|notimestamps|>)");
  cmd->add_option("--sample-len", o.sample_len, "Most tokens decoded per window (0 = 224, Whisper's default)")
      ->check(CLI::Range(0, 224))
      ->capture_default_str();
  cmd->add_option("--max-initial-timestamp", o.max_initial_timestamp, "Latest first timestamp, seconds")
      ->capture_default_str();
  cmd->add_option("--suppress-tokens", a->suppress_tokens, "Comma-separated token ids; -1 = the non-speech set")
      ->capture_default_str();
  cmd->add_option("--suppress-blank", o.suppress_blank, "Forbid a blank first token (true/false)")->capture_default_str();
  cmd->add_option("--hallucination-silence-threshold", a->hallucination_silence_threshold,
                  "With --word-timestamps: skip silences longer than this around suspected hallucinations");
  cmd->add_option("--seed", o.seed, "Sampling seed")->capture_default_str();
  cmd->add_option("--vad", a->vad, "off, gate (skip silent clips) or trim (crop to speech)")->capture_default_str();
  cmd->add_option("--format,-f", a->format, "txt, json, verbose_json, srt, vtt, tsv or all")->capture_default_str();
  cmd->add_option("--output-dir,-o", a->output_dir, "Write <name>.<ext> files here instead of stdout");
  cmd->add_flag("--no-progress", a->no_progress, "No progress bar even on a terminal");
  cmd->add_option("--manifest", a->manifest,
                  "Text file of audio paths, one a line, # comments ('-' = stdin); needs --output-dir");
  cmd->add_option("--shard", a->shard, "With --manifest: take share K of N (K = 0..N-1), e.g. 3/16");
  cmd->add_flag("--resume", a->resume, "With --manifest: skip files whose outputs all exist");
  cmd->add_option("--parallel", a->parallel,
                  "With --manifest: files transcribed at once, their model work batched together "
                  "(0 = auto: 64 on a GPU, 1 on the CPU)")
      ->capture_default_str();
  cmd->add_option("--max-batch", a->engine.max_batch,
                  "With --parallel above 1: decoder rows stepped together (0 = auto: 16 on the CPU, 64 on a GPU)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--encode-batch", a->engine.encode_batch,
                  "With --parallel above 1: audio windows per encoder call (0 = auto: 1 on the CPU, 16 on a GPU)")
      ->check(CLI::Range(0, 256));
  cmd->callback([a] { run(*a); });
}

}  // namespace hark::cli
