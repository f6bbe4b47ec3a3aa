// --compute-type for `hark transcribe`, `serve` and `bench`: one option definition,
// checked when the command line is parsed (the names) and against the device.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace hark::cli {

// Adds --compute-type to `cmd`, storing the name in `target`.
CLI::Option* add_compute_type_option(CLI::App* cmd, std::string& target);
// Throws InvalidArgument when `device` (cpu, cuda, cuda:N, auto) cannot run `compute_type`.
void check_compute_type_for_device(const std::string& compute_type, const std::string& device);

}  // namespace hark::cli
