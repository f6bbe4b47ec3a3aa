// hark probe FILE: decodes the file exactly as transcription would and reports what was
// found (container, codec, channels, source rate) and what came out (16 kHz samples).
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "audio/audio.h"
#include "cli/commands.h"

namespace hark::cli {
namespace {

struct ProbeArgs {
  std::string file;
  bool json = false;
  double max_seconds = AudioLimits{}.max_seconds;
};

void run_probe(const ProbeArgs& args) {
  AudioLimits limits;
  limits.max_seconds = args.max_seconds;
  limits.min_seconds = 0;  // probing a short clip is fine; transcribing it is not
  ProbeInfo info = probe_audio_file(args.file, limits);
  if (args.json) {
    nlohmann::ordered_json j = {{"file", args.file},
                        {"container", info.container},
                        {"codec", info.codec},
                        {"channels", info.channels},
                        {"sample_rate", info.sample_rate},
                        {"duration_s", info.duration_s},
                        {"decoded_samples", info.decoded_samples},
                        {"decoded_rate", kSampleRate}};
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  std::printf("file:       %s\n", args.file.c_str());
  std::printf("container:  %s\n", info.container.c_str());
  std::printf("codec:      %s\n", info.codec.c_str());
  std::printf("channels:   %d\n", info.channels);
  std::printf("rate:       %d Hz\n", info.sample_rate);
  std::printf("duration:   %.3f s\n", info.duration_s);
  std::printf("samples:    %lld (16 kHz mono float32)\n", static_cast<long long>(info.decoded_samples));
}

}  // namespace

void add_probe_command(CLI::App& app) {
  auto args = std::make_shared<ProbeArgs>();
  auto* cmd = app.add_subcommand("probe", "Decode an audio file and print its container, codec, channels, rate, "
                                          "duration and decoded sample count");
  cmd->add_option("file", args->file, "Audio file (WAV, MP3, M4A/AAC, FLAC, Ogg, WebM, MP4/MOV, AIFF, CAF, ...)")
      ->required();
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->add_option("--max-seconds", args->max_seconds, "Refuse inputs longer than this (default 4 h)")
      ->check(CLI::PositiveNumber);
  cmd->callback([args] { run_probe(*args); });
}

}  // namespace hark::cli
