// hark bench: times the stages of a 30 s window — mel, the encoder at several batch
// sizes, the decoder step at batch 1 and 5 — and optionally a whole warm transcription of
// a clip (greedy and beam 5) and the cold start. Medians over --runs repetitions after
// warm-up; the device is synchronised inside every timed region. --json writes the
// figures for scripts (scripts/device/run-all.sh).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audio/audio.h"
#include "audio/mel.h"
#include "cli/bench_server.h"
#include "cli/commands.h"
#include "cli/compute_type.h"
#include "cli/model_arg.h"
#include "core/cpu/gemm.h"
#include "core/cpu/mem_bandwidth.h"
#include "core/cpu/quant_gemm.h"
#include "model/compute_type.h"
#include "model/whisper_model.h"
#include "decode/logit_filters.h"
#include "tokenizer/tokenizer.h"
#include "transcribe/engine_factory.h"
#include "transcribe/seek_loop.h"

namespace hark::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string model = "synthetic:tiny";
  std::string clip;  // audio for the mel timing and the end-to-end run
  std::string device = "cpu";
  std::string dtype = "f32";
  std::string compute_type = "auto";
  std::string batches = "1";
  std::string json;
  int threads = 0;
  int runs = 6;
  int tokens = 32;
  int e2e_tokens = 0;  // > 0: cap each window's sampled tokens (synthetic weights never stop)
  int step_windows = 0;  // > 0: also time steps of this many rows, each on its own window
  bool select_on_cpu = false;  // CPU: decode as the GPU fast path does (its host logic timed)
  std::string language = "en";  // of the --e2e runs; "auto" detects it (one more encoder pass)
  bool e2e = false;
  ServerBenchArgs server;  // --server: the load generator instead
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

template <class F>
double time_ms(F&& f) {
  const auto t0 = Clock::now();
  f();
  return ms_since(t0);
}

std::vector<int> parse_batches(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    const int b = std::stoi(item);
    if (b < 1 || b > 256) throw Error(ErrorCode::InvalidArgument, "[bench] batch sizes must be 1..256, got " + item);
    out.push_back(b);
  }
  if (out.empty()) throw Error(ErrorCode::InvalidArgument, "[bench] --batches needs at least one size");
  return out;
}

// The window each row reads: one for all rows (beams), or one per row (the batching
// server's rows, `--step-windows`).
using Windows = std::vector<std::shared_ptr<const AudioContext>>;

// Median ms per step of rows on the windows given for them: a 4-token prompt first, then
// `step` (one token per row) args.tokens times; the median over runs / 2 states.
template <class Step>
double step_ms(WhisperModel& model, const Windows& audio_per_row, const BenchArgs& args, Step&& step) {
  const int rows = static_cast<int>(audio_per_row.size());
  const bool shared = std::all_of(audio_per_row.begin(), audio_per_row.end(),
                                  [&](const auto& a) { return a == audio_per_row.front(); });
  std::vector<double> medians;
  for (int r = 0; r < std::max(1, args.runs / 2); ++r) {
    auto state = shared ? model.new_state(audio_per_row.front(), rows) : model.new_state(audio_per_row);
    std::vector<int32_t> start;
    for (int i = 0; i < rows; ++i) start.insert(start.end(), {50258, 50259, 50359, 50363});
    model.decode(*state, start, 4);
    std::vector<double> per_token;
    const std::vector<int32_t> tokens(rows, 400);
    for (int t = 0; t < args.tokens; ++t) per_token.push_back(time_ms([&] { step(*state, tokens); }));
    medians.push_back(median(per_token));
  }
  return median(medians);
}

double decoder_step_ms(WhisperModel& model, const Windows& audio_per_row, const BenchArgs& args) {
  return step_ms(model, audio_per_row, args,
                 [&](DecoderState& state, std::span<const int32_t> tokens) { model.decode(state, tokens, 1); });
}

// The default filters and timestamp rules of a transcription, for the steps below.
SelectionRules default_rules(const WhisperModel& model) {
  const HParams& hp = model.hparams();
  auto tokenizer = Tokenizer::for_vocab_size(hp.n_vocab);
  const DecodingVocabulary vocab = make_decoding_vocabulary(*tokenizer, hp);
  SelectionRules rules;
  rules.eot = vocab.specials.eot;
  rules.suppress_blank = true;
  rules.blank = vocab.specials.space;
  rules.blank.push_back(vocab.specials.eot);
  rules.suppress = resolve_suppress_tokens({-1}, vocab.non_speech, vocab.specials);
  rules.timestamps = true;
  rules.timestamp_begin = vocab.specials.timestamp_begin;
  rules.no_timestamps = vocab.specials.no_timestamps;
  rules.max_initial_timestamp = 50;
  return rules;
}

// The same steps when the token is chosen next to the logits (decode_select: the GPU fast
// path's greedy step, with the default filters and timestamp rules).
double select_step_ms(WhisperModel& model, const Windows& audio_per_row, const BenchArgs& args) {
  const SelectionRules rules = default_rules(model);
  const std::vector<SampledSummary> summaries(audio_per_row.size(), SampledSummary{3, 400, 401, rules.timestamp_begin});
  return step_ms(model, audio_per_row, args, [&](DecoderState& state, std::span<const int32_t> tokens) {
    model.decode_select(state, tokens, rules, summaries, 1);
  });
}

// Greedy decoding as a transcription runs it on the fast path: the device one step ahead
// of the host, each chosen token fed back on the device (decode_greedy). Median over runs
// of (time for args.tokens steps) / args.tokens.
double greedy_ahead_step_ms(WhisperModel& model, std::shared_ptr<const AudioContext> audio, const BenchArgs& args) {
  const SelectionRules rules = default_rules(model);
  std::vector<double> per_step;
  for (int r = 0; r < std::max(2, args.runs); ++r) {
    auto state = model.new_state(audio, 1);
    model.decode(*state, std::vector<int32_t>{50258, 50259, 50359, 50363}, 4);
    const double ms = time_ms([&] {
      model.decode_greedy(*state, 400, rules, SampledSummary{3, 400, 401, rules.timestamp_begin}, args.tokens,
                          [](const TokenChoice&) { return true; });
    });
    if (r > 0) per_step.push_back(ms / args.tokens);  // the first run records the steps
  }
  return median(per_step);
}

// Bytes a batch-1 decoder step reads: every decoder weight it multiplies (the
// cross-attention K/V projections run once per window, not per step), the token embedding
// as the output projection, and every layer's cross-attention K/V.
struct StepBytes {
  double weights = 0, cross_kv = 0;
};

StepBytes decoder_step_bytes(const Checkpoint& ckpt, DType cross_kv) {
  StepBytes b;
  for (const auto& name : ckpt.weights.names()) {
    const bool per_window = name.find(".cross_attn.key.") != std::string::npos ||
                            name.find(".cross_attn.value.") != std::string::npos;
    if (name.rfind("decoder.", 0) == 0 && name != "decoder.positional_embedding" && !per_window)
      b.weights += static_cast<double>(ckpt.weights.get(name).nbytes());
  }
  const HParams& hp = ckpt.hparams;
  b.cross_kv = 2.0 * hp.n_text_layer * hp.n_audio_ctx * static_cast<double>(dtype_nbytes(cross_kv, hp.n_text_state));
  return b;
}

// The memory floor of a batch-1 step: its bytes over the read bandwidth of a buffer of the
// same size (cache-resident if it fits, DRAM if not), measured now, after the steps ran.
void print_memory_floor(const Checkpoint& ckpt, const Backend& backend, double step_ms, nlohmann::json& out) {
  const StepBytes step = decoder_step_bytes(ckpt, backend.cross_kv_dtype());
  const double total = step.weights + step.cross_kv;
  ThreadPool pool(backend.threads());
  const double gbs = read_bandwidth_gbs(pool, static_cast<size_t>(total));
  const double floor_ms = total / gbs / 1e6;
  out["step_bytes"] = {{"weights", step.weights}, {"cross_kv", step.cross_kv}};
  out["read_gb_per_s"] = gbs;
  out["memory_floor_ms"] = floor_ms;
  std::printf("step reads   %8.1f MB (weights %.1f + cross K/V %.1f), read bandwidth %.1f GB/s -> floor %.3f ms "
              "(step = %.2f x floor)\n",
              total / 1e6, step.weights / 1e6, step.cross_kv / 1e6, gbs, floor_ms, step_ms / floor_ms);
}

void run_bench(const BenchArgs& args) {
  const auto start = Clock::now();
  auto ckpt = open_model_arg(args.model, args.dtype);
  // The weights as the compute type holds them (int8 and the ggml types quantize at load).
  const Device target = device_of(args.device);
  const ComputeType compute = resolve_compute_type(compute_type_named(args.compute_type), *ckpt, target);
  ckpt = apply_compute_type(ckpt, compute, target);
  std::shared_ptr<Backend> backend = make_backend(
      args.device, {.threads = args.threads,
                    .compute_type = args.compute_type,
                    .cross_kv = compute.cross_kv,
                    .select_next_to_logits = args.select_on_cpu});
  auto model = std::make_shared<WhisperModel>(ckpt, backend);
  const double load_ms = ms_since(start);
  const HParams& hp = model->hparams();
  nlohmann::json out = {{"model", args.model}, {"size", hp.size_name()}, {"weights", dtype_name(ckpt->dtype)},
                        {"backend", backend->name()}, {"compute_type", dtype_name(backend->act_dtype())},
                        {"compute_type_name", compute.name}, {"cross_kv", dtype_name(backend->cross_kv_dtype())},
                        {"threads", backend->threads()}};
  const bool cpu = backend->device() == Device::Cpu;
  const std::string gemm = cpu ? std::string(", GEMM ") + gemm_library() + ", quantized " + quant_isa() : "";
  std::printf("model %s (%s, %s weights), backend %s, compute type %s, activations %s%s, %d threads\n",
              args.model.c_str(), hp.size_name().c_str(), dtype_name(ckpt->dtype), backend->name().c_str(),
              describe(compute, *ckpt, backend->cross_kv_dtype()).c_str(), dtype_name(backend->act_dtype()), gemm.c_str(),
              backend->threads());
  // 30 s of audio: the clip (repeated or cut to 30 s) or a deterministic chirp.
  std::vector<float> samples;
  if (!args.clip.empty()) samples = decode_audio_file(args.clip);
  std::vector<float> window(kWindowSamples);
  for (size_t i = 0; i < window.size(); ++i)
    window[i] = samples.empty() ? 0.1f * std::sin(0.0005f * static_cast<float>(i) * static_cast<float>(i % 4000))
                                : samples[i % samples.size()];
  std::vector<double> mel_times;
  Tensor mel;
  for (int r = 0; r <= args.runs; ++r) {
    const double ms = time_ms([&] { mel = mel_window(log_mel_spectrogram(window, hp.n_mels), 0); });
    if (r > 0) mel_times.push_back(ms);  // the first run plans the FFT
  }
  out["mel_ms"] = median(mel_times);
  std::printf("mel          %8.2f ms / 30 s of audio (median of %d, CPU)\n", median(mel_times), args.runs);

  std::shared_ptr<const AudioContext> audio;
  for (int b : parse_batches(args.batches)) {
    const std::vector<Tensor> mels(b, mel);
    std::vector<std::shared_ptr<const AudioContext>> contexts = model->prepare_audio_batch(mels);  // warm-up
    backend->synchronize();
    // The host's part of each batch: until prepare_audio_batch returns (the windows'
    // upload, and queuing the kernels, which the GPU runs meanwhile).
    std::vector<double> enc, host;
    for (int r = 0; r < args.runs; ++r)
      enc.push_back(time_ms([&] {
        host.push_back(time_ms([&] { contexts = model->prepare_audio_batch(mels); }));
        backend->synchronize();
      }));
    if (!audio) audio = contexts.front();
    const double per_window = median(enc) / b;
    out["encoder_ms_per_window"][std::to_string(b)] = per_window;
    out["encoder_host_ms_per_window"][std::to_string(b)] = median(host) / b;
    std::printf("encoder      %8.2f ms / 30 s window at batch %d (median of %d; host until queued %.2f)\n", per_window, b,
                args.runs, median(host) / b);
  }
  for (int rows : {1, 5}) {
    const double step = decoder_step_ms(*model, Windows(rows, audio), args);
    out["decoder_ms_per_step"][std::to_string(rows)] = step;
    std::printf("decoder      %8.3f ms / step at batch %d (median; logits to the host)\n", step, rows);
    if (cpu && rows == 1) print_memory_floor(*ckpt, *backend, step, out);
    if (model->selects_on_device()) {
      const double select = select_step_ms(*model, Windows(rows, audio), args);
      out["decoder_select_ms_per_step"][std::to_string(rows)] = select;
      std::printf("decoder      %8.3f ms / step at batch %d (median; token chosen on the device)\n", select, rows);
      if (rows == 1) {
        const double ahead = greedy_ahead_step_ms(*model, audio, args);
        out["decoder_ahead_ms_per_step"] = ahead;
        std::printf("decoder      %8.3f ms / step at batch 1 (greedy, the device one step ahead of the host)\n", ahead);
      }
    }
  }
  if (args.step_windows > 0) {
    // Rows on windows of their own, as the batching server steps them: each row's
    // cross-attention reads its own window's K/V.
    const std::vector<Tensor> mels(args.step_windows, mel);
    const Windows windows = model->prepare_audio_batch(mels);
    backend->synchronize();
    const std::string n = std::to_string(args.step_windows);
    const double step = decoder_step_ms(*model, windows, args);
    out["decoder_ms_per_step_own_windows"][n] = step;
    std::printf("decoder      %8.3f ms / step of %s rows on %s windows (median; logits to the host)\n", step, n.c_str(),
                n.c_str());
    if (model->selects_on_device()) {
      const double select = select_step_ms(*model, windows, args);
      out["decoder_select_ms_per_step_own_windows"][n] = select;
      std::printf("decoder      %8.3f ms / step of %s rows on %s windows (median; token chosen on the device)\n", select,
                  n.c_str(), n.c_str());
    }
  }
  const double window_ms = out["mel_ms"].get<double>() + out["encoder_ms_per_window"].begin()->get<double>() +
                           out["decoder_ms_per_step"]["1"].get<double>() * args.tokens;
  std::printf("window total %8.1f ms for %d tokens  ->  real-time factor %.4f\n", window_ms, args.tokens,
              window_ms / 30000.0);

  if (args.e2e) {
    if (samples.empty()) throw Error(ErrorCode::InvalidArgument, "[bench] --e2e needs --clip FILE");
    auto engine = make_engine(ckpt, backend);
    for (int beam : {0, 5}) {
      TranscribeOptions options;
      options.temperatures = {0.0f};
      options.beam_size = beam;
      options.sample_len = args.e2e_tokens;
      // A fixed amount of work: random weights end a beam search after a token or two
      // (some beam picks end-of-text at once and wins on length), so with a token count
      // end-of-text is suppressed and every window samples exactly that many.
      if (args.e2e_tokens > 0) options.suppress_tokens = {-1, default_rules(*model).eot};
      if (args.language != "auto") options.language = args.language;
      std::vector<double> times;
      size_t tokens = 0;
      Timings parts;
      double file_ms = 0, last_ms = 0;
      for (int r = 0; r <= args.runs; ++r) {
        // Decoding the file is part of the measured work, as for a request.
        const double ms = time_ms([&] {
          const auto file_t0 = Clock::now();
          const std::vector<float> clip = decode_audio_file(args.clip);
          file_ms = ms_since(file_t0);
          const Transcript t = engine->transcribe(clip, options);
          parts = t.timings;
          tokens = 0;
          for (const Segment& s : t.segments) tokens += s.tokens.size();
        });
        if (r == 0 && beam == 0) {
          out["cold_start_ms"] = {{"load", load_ms}, {"first_transcription", ms}};
          std::printf("cold start   %8.1f ms load + %.1f ms first transcription\n", load_ms, ms);
        }
        if (r > 0) times.push_back(ms);
        last_ms = ms;
      }
      const std::string key = beam ? "e2e_beam5_ms" : "e2e_greedy_ms";
      out[key] = median(times);
      out[key + "_tokens"] = tokens;
      // What the last run spent outside the file, the mel, the encoder and the decoder: the
      // transcription's own bookkeeping (windows, segments, text).
      const double other = last_ms - file_ms - parts.mel_ms - parts.encode_ms - parts.decode_ms;
      out[key + "_parts"] = {{"file", file_ms},
                             {"mel", parts.mel_ms},
                             {"encode", parts.encode_ms},
                             {"decode", parts.decode_ms},
                             {"decode_model", parts.decode_model_ms},
                             {"decode_reorder", parts.decode_reorder_ms},
                             {"other", other}};
      out[key + "_work"] = {{"decode_runs", parts.decode_runs}, {"sampled_tokens", parts.sampled_tokens}};
      // Tokens in the segments, and what the decoding sampled to get them: a window's tail
      // after its last timestamp pair is dropped and decoded again by the next window.
      std::printf("end to end   %8.2f ms for %.1f s of audio, %s, %zu tokens (%lld sampled in %d decoding runs), "
                  "language %s (warm, median of %d; "
                  "last run: file %.2f, mel %.2f, encoder %.2f, decoding %.2f [model calls %.2f, reordering %.2f, "
                  "bookkeeping %.2f], other %.2f ms)\n",
                  median(times), samples.size() / 16000.0, beam ? "beam 5" : "greedy", tokens,
                  static_cast<long long>(parts.sampled_tokens), parts.decode_runs, args.language.c_str(),
                  args.runs, file_ms, parts.mel_ms, parts.encode_ms, parts.decode_ms, parts.decode_model_ms,
                  parts.decode_reorder_ms, parts.decode_ms - parts.decode_model_ms - parts.decode_reorder_ms, other);
    }
  }
  if (!args.json.empty()) {
    std::ofstream f(args.json);
    f << out.dump(2) << "\n";
    if (!f) throw Error(ErrorCode::Io, "[bench] cannot write " + args.json);
  }
}

void print_server_report(const nlohmann::json& r) {
  const auto& l = r["latency_ms"];
  const bool closed = !r.contains("open_loop");
  std::printf("%d requests (%d failed) from %d clients over %.1f s: %.1f s of audio -> %.1f audio s per s (RTFx%s), "
              "%.2f requests/s\n",
              r["requests"].get<int>(), r["errors"].get<int>(), r["concurrency"].get<int>(),
              r["wall_seconds"].get<double>(), r["audio_seconds"].get<double>(), r["rtfx"].get<double>(),
              closed ? ", by Little's law" : "", r["requests_per_second"].get<double>());
  if (closed && r.contains("span_rtfx"))
    std::printf("closed loop: %d warm-up requests before, %d after (not counted); check: %.1f audio s per s answered "
                "within the span\n",
                r["warmup"].get<int>(), r["unmeasured_after"].get<int>(), r["span_rtfx"].get<double>());
  std::printf("latency ms: min %.0f  p50 %.0f  p95 %.0f  p99 %.0f  max %.0f  mean %.0f\n", l["min"].get<double>(),
              l["p50"].get<double>(), l["p95"].get<double>(), l["p99"].get<double>(), l["max"].get<double>(),
              l["mean"].get<double>());
  if (r.contains("latency_ms_by_clip") && r["latency_ms_by_clip"].size() > 1)
    for (const auto& c : r["latency_ms_by_clip"])
      std::printf("  %-24s %6.1f s audio, %4d requests: p50 %.0f  p99 %.0f  max %.0f ms\n",
                  c["clip"].get<std::string>().c_str(), c["seconds"].get<double>(), c["requests"].get<int>(),
                  c["p50"].get<double>(), c["p99"].get<double>(), c["max"].get<double>());
  if (r.contains("open_loop")) {
    const auto& o = r["open_loop"];
    std::printf("open loop: %.2f requests/s offered (%.1f audio s per s), %d sent late (every client busy; "
                "start delay p99 %.0f ms, max %.0f ms)\n",
                o["rate"].get<double>(), o["offered_audio_per_second"].get<double>(), o["sent_late"].get<int>(),
                o["start_delay_ms"]["p99"].get<double>(), o["start_delay_ms"]["max"].get<double>());
  }
  for (const auto& [kind, n] : r["error_kinds"].items()) std::printf("errors: %d x %s\n", n.get<int>(), kind.c_str());
  if (r.contains("gpu_memory_peak_mib"))
    std::printf("GPU memory in use (this machine, peak): %.0f MiB\n", r["gpu_memory_peak_mib"].get<double>());
}

void run_bench_command(const BenchArgs& args) {
  if (args.server.url.empty()) return run_bench(args);
  if (args.server.clips.empty()) throw Error(ErrorCode::InvalidArgument, "[bench] --server needs --clips DIR");
  const nlohmann::json report = run_server_bench(args.server);
  print_server_report(report);
  if (!args.json.empty()) {
    std::ofstream f(args.json);
    f << report.dump(2) << "\n";
    if (!f) throw Error(ErrorCode::Io, "[bench] cannot write " + args.json);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Time the mel, encoder and decoder on 30 s windows (and a whole clip), "
                                          "or load a running server (--server URL --clips DIR)");
  cmd->add_option("--model,-m", args->model, "Checkpoint path, or synthetic:SIZE for seeded random weights")
      ->capture_default_str();
  cmd->add_option("--clip", args->clip, "Audio file for the mel timing (first 30 s, looped if shorter) and --e2e");
  cmd->add_option("--device", args->device, "cpu | cuda | cuda:N | auto")->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "Weight storage for synthetic models: f32 | f16 | bf16")->capture_default_str();
  add_compute_type_option(cmd, args->compute_type);
  cmd->add_option("--batches", args->batches, "Encoder batch sizes to time, e.g. 1,8,32")->capture_default_str();
  cmd->add_option("--threads,-t", args->threads, "Worker threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--runs", args->runs, "Timed repetitions (median reported)")->capture_default_str()->check(
      CLI::Range(1, 1000));
  cmd->add_option("--tokens", args->tokens, "Decoder steps to time")->capture_default_str()->check(CLI::Range(1, 400));
  cmd->add_flag("--e2e", args->e2e, "Also time whole warm transcriptions of --clip (greedy and beam 5) and the cold start");
  cmd->add_option("--e2e-tokens", args->e2e_tokens,
                  "Tokens sampled per window in --e2e, end-of-text suppressed (0 = the model's default, ending where it does)")
      ->capture_default_str()
      ->check(CLI::Range(0, 224));
  cmd->add_option("--step-windows", args->step_windows,
                  "Also time decoder steps of this many rows, each on a window of its own (as the batching server runs "
                  "them)")
      ->check(CLI::Range(0, 256));
  cmd->add_flag("--select-next-to-logits", args->select_on_cpu,
                "CPU: decode as the GPU fast path does (tokens chosen next to the logits, the prompt's first step "
                "with them), to time that path's host work (--e2e's bookkeeping)");
  cmd->add_option("--language", args->language, "Language of the --e2e runs (auto: detect it)")->capture_default_str();
  cmd->add_option("--json", args->json, "Write the figures to this JSON file");
  auto& sv = args->server;
  cmd->add_option("--server", sv.url, "Load-generate against a running server instead (http://HOST:PORT)");
  cmd->add_option("--clips", sv.clips, "With --server: a folder of audio files to replay (or one file)");
  cmd->add_option("--concurrency,-c", sv.concurrency, "With --server: clients sending at once")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  cmd->add_option("--requests,-n", sv.requests, "With --server: measured requests (0 = each client sends every clip once)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--warmup", sv.warmup, "With --server: requests sent first and not counted (closed loop: in the same stream as the measured "
                  "ones, which then start at steady load when it is at least --concurrency)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--rate", sv.rate,
                  "With --server: an open loop instead, requests arriving at this mean rate per second (Poisson; "
                  "latency counted from each arrival, at most --concurrency in flight)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seed", sv.seed, "With --rate: seed of the arrival times")->capture_default_str();
  cmd->add_option("--field", sv.fields, "With --server: extra form field NAME=VALUE (repeatable), e.g. language=en");
  cmd->add_option("--api-key", sv.api_key, "With --server: bearer token");
  cmd->callback([args] { run_bench_command(*args); });
}

}  // namespace hark::cli
