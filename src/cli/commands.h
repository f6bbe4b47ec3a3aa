// Every `hark` sub-command registers itself on the CLI11 app through one of these. Each
// lives in its own cmd_<name>.cc so the commands can grow independently.
#pragma once

#include <CLI/CLI.hpp>

namespace hark::cli {

void add_transcribe_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_probe_command(CLI::App& app);
void add_vad_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_get_command(CLI::App& app);
void add_models_command(CLI::App& app);
void add_dictate_command(CLI::App& app);

}  // namespace hark::cli
