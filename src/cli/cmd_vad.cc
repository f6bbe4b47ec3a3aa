// hark vad FILE: Silero VAD speech segments of an audio file as JSON on stdout,
// {"segments": [{"start": s, "end": s}, ...]}; --probs adds the per-chunk probabilities.
#include <cstdio>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "audio/audio.h"
#include "cli/commands.h"
#include "hark/error.h"
#include "vad/silero.h"
#include "vad/speech_timestamps.h"

namespace hark::cli {
namespace {

struct VadArgs {
  std::string file;
  std::string model_path;  // empty: the bundled weights
  vad::SpeechTimestampOptions options;
  double neg_threshold = -1;  // < 0: the reference default
  bool probs = false;
};

void run_vad(const VadArgs& args) {
  vad::SpeechTimestampOptions options = args.options;
  if (args.neg_threshold >= 0) options.neg_threshold = args.neg_threshold;
  options.validate();
  const vad::SileroModel model =
      vad::SileroModel::load(args.model_path.empty() ? vad::SileroModel::default_weights_path() : args.model_path);
  AudioLimits limits;
  limits.min_seconds = 0;  // any length is fine for detection; an empty file still fails to decode
  const std::vector<float> audio = decode_audio_file(args.file, limits);
  const std::vector<float> probs = model.speech_probabilities(audio);
  const auto segments = vad::speech_segments_from_probabilities(probs, static_cast<int64_t>(audio.size()), options);

  nlohmann::json out;
  out["segments"] = nlohmann::json::array();
  for (const auto& s : segments)
    out["segments"].push_back({{"start", static_cast<double>(s.start) / vad::kVadSampleRate},
                               {"end", static_cast<double>(s.end) / vad::kVadSampleRate}});
  out["duration"] = static_cast<double>(audio.size()) / vad::kVadSampleRate;
  if (args.probs) {
    out["chunk_seconds"] = static_cast<double>(vad::kChunkSamples) / vad::kVadSampleRate;
    out["probs"] = probs;
  }
  std::printf("%s\n", out.dump().c_str());
}

}  // namespace

void add_vad_command(CLI::App& app) {
  auto args = std::make_shared<VadArgs>();
  auto* cmd = app.add_subcommand("vad", "Detect speech with Silero VAD v6.2 and print the segments as JSON");
  cmd->add_option("file", args->file, "Audio file (WAV, or anything FFmpeg decodes)")->required();
  cmd->add_option("--threshold", args->options.threshold, "Speech probability threshold")
      ->capture_default_str();
  cmd->add_option("--neg-threshold", args->neg_threshold,
                  "Probability below which speech ends (default: threshold - 0.15, at least 0.01)");
  cmd->add_option("--min-speech-ms", args->options.min_speech_duration_ms, "Drop shorter segments")
      ->capture_default_str();
  cmd->add_option("--min-silence-ms", args->options.min_silence_duration_ms, "Silence that ends a segment")
      ->capture_default_str();
  cmd->add_option("--speech-pad-ms", args->options.speech_pad_ms, "Padding on both sides of a segment")
      ->capture_default_str();
  cmd->add_option("--max-speech-s", args->options.max_speech_duration_s, "Split longer segments (default: no limit)");
  cmd->add_flag("--probs", args->probs, "Also print the per-chunk (32 ms) speech probabilities");
  cmd->add_option("--vad-model", args->model_path, "silero_vad_16k.safetensors to use instead of the bundled one");
  cmd->callback([args] { run_vad(*args); });
}

}  // namespace hark::cli
