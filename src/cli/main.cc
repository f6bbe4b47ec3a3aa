// hark: the command-line entry point. Errors thrown anywhere below surface here as one
// line on stderr and an exit code per error kind.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "hark/error.h"

namespace {

int exit_code_for(hark::ErrorCode code) {
  switch (code) {
    case hark::ErrorCode::InvalidArgument: return 2;
    case hark::ErrorCode::NotFound: return 3;
    case hark::ErrorCode::InvalidAudio:
    case hark::ErrorCode::AudioTooShort:
    case hark::ErrorCode::UnsupportedFormat:
    case hark::ErrorCode::TooLarge: return 4;
    case hark::ErrorCode::ModelFormat: return 5;
    case hark::ErrorCode::Cancelled: return 130;
    default: return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hark: Whisper speech-to-text on the CPU and NVIDIA GPUs, with an OpenAI-compatible server"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "hark 0.1.0");
  hark::cli::add_transcribe_command(app);
  hark::cli::add_serve_command(app);
  hark::cli::add_dictate_command(app);
  hark::cli::add_get_command(app);
  hark::cli::add_models_command(app);
  hark::cli::add_convert_command(app);
  hark::cli::add_probe_command(app);
  hark::cli::add_vad_command(app);
  hark::cli::add_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const hark::Error& e) {
    std::fprintf(stderr, "hark: error: %s\n", e.what());
    return exit_code_for(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hark: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}
