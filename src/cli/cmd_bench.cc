// hark bench: times the stages of one 30 s window (mel, encoder, decoder per token) and
// reports the real-time factor. Medians over --runs repetitions after one warm-up.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/compute_type.h"
#include "cli/model_arg.h"
#include "audio/audio.h"
#include "audio/mel.h"
#include "core/cpu/gemm.h"
#include "core/cpu/mem_bandwidth.h"
#include "core/cpu/quant_gemm.h"
#include "model/compute_type.h"
#include "model/whisper_model.h"

namespace hark::cli {
namespace {

struct BenchArgs {
  std::string model = "synthetic:tiny";
  std::string clip;  // audio for the mel timing (default: 30 s of a synthetic signal)
  std::string device = "cpu";
  std::string dtype = "f32";
  std::string compute_type = "auto";
  int threads = 0;
  int runs = 6;
  int tokens = 32;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <class F>
double time_ms(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Bytes a batch-1 decoder step reads: every decoder weight it multiplies (the
// cross-attention K/V projections run once per window, not per step), the token
// embedding as the output projection, and every layer's cross-attention K/V.
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

void run_bench(const BenchArgs& args) {
  auto ckpt = open_model_arg(args.model, args.dtype);
  const Device device = device_of(args.device);
  const ComputeType compute = resolve_compute_type(parse_compute_type(args.compute_type), *ckpt, device);
  ckpt = apply_compute_type(ckpt, compute, device);
  BackendOptions options;
  options.threads = args.threads;
  options.cross_kv = compute.cross_kv;
  std::shared_ptr<Backend> backend = make_backend(args.device, options);
  WhisperModel model(ckpt, backend);
  const HParams& hp = model.hparams();
  const bool cpu = backend->device() == Device::Cpu;
  const std::string gemm = cpu ? std::string(" (GEMM: ") + gemm_library() + ", quantized: " + quant_isa() + ")" : "";
  std::printf("model %s (%s, %s weights), compute type %s, backend %s%s, %d threads\n", args.model.c_str(),
              hp.size_name().c_str(), dtype_name(ckpt->dtype), describe(compute, *ckpt).c_str(), backend->name().c_str(),
              gemm.c_str(), backend->threads());
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
  std::shared_ptr<const AudioContext> audio = model.prepare_audio(mel);  // warm-up
  std::vector<double> enc, dec;
  for (int r = 0; r < args.runs; ++r) enc.push_back(time_ms([&] { audio = model.prepare_audio(mel); }));
  for (int r = 0; r < std::max(1, args.runs / 2); ++r) {
    auto state = model.new_state(audio);
    std::vector<int32_t> start = {50258, 50259, 50359, 50363};
    model.decode(*state, start, 4);
    std::vector<double> per_token;
    int32_t token = 400;
    for (int t = 0; t < args.tokens; ++t)
      per_token.push_back(time_ms([&] { model.decode(*state, std::span<const int32_t>(&token, 1), 1); }));
    dec.push_back(median(per_token));
  }
  const double enc_ms = median(enc), dec_ms = median(dec);
  const double mel_ms = median(mel_times);
  const double window_ms = mel_ms + enc_ms + dec_ms * args.tokens;
  std::printf("mel          %8.1f ms / 30 s of audio (median of %d)\n", mel_ms, args.runs);
  std::printf("encoder      %8.1f ms / 30 s window (median of %d)\n", enc_ms, args.runs);
  std::printf("decoder      %8.2f ms / token (batch 1, median)\n", dec_ms);
  std::printf("window total %8.1f ms for %d tokens  ->  real-time factor %.4f\n", window_ms, args.tokens,
              window_ms / 30000.0);
  if (cpu) {
    // The memory floor: a buffer the size of the step's reads, read at full speed.
    const StepBytes step = decoder_step_bytes(*ckpt, compute.cross_kv);
    const double total = step.weights + step.cross_kv;
    ThreadPool pool(backend->threads());
    const double gbs = read_bandwidth_gbs(pool, static_cast<size_t>(total));
    std::printf("step reads   %8.1f MB (weights %.1f + cross K/V %.1f), read bandwidth %.1f GB/s -> floor %.2f ms "
                "(step = %.2f x floor)\n",
                total / 1e6, step.weights / 1e6, step.cross_kv / 1e6, gbs, total / gbs / 1e6,
                dec_ms / (total / gbs / 1e6));
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand("bench", "Time the encoder and decoder on one 30 s window");
  cmd->add_option("--model,-m", args->model, "Checkpoint path, or synthetic:SIZE for seeded random weights")
      ->capture_default_str();
  cmd->add_option("--clip", args->clip, "Audio file for the mel timing (first 30 s, looped if shorter)");
  cmd->add_option("--device", args->device, "cpu | cuda | cuda:N | auto")->capture_default_str();
  cmd->add_option("--dtype", args->dtype, "Weight storage for synthetic models: f32 | f16 | bf16")->capture_default_str();
  add_compute_type_option(cmd, args->compute_type);
  cmd->add_option("--threads,-t", args->threads, "Worker threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--runs", args->runs, "Timed repetitions (median reported)")->capture_default_str();
  cmd->add_option("--tokens", args->tokens, "Decoder steps to time")->capture_default_str();
  cmd->callback([args] { run_bench(*args); });
}

}  // namespace hark::cli
