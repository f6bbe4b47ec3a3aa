// Archives on many machines: `hark transcribe --manifest LIST --shard K/N`. A manifest is
// a text file of audio paths; every shard reads the whole list and keeps its own
// deterministic share, so Slurm arrays, Kubernetes indexed Jobs or GNU parallel spread an
// archive over hosts with no coordinator. Outputs mirror the input paths under
// --output-dir, so two inputs never write the same file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <istream>
#include <string>
#include <vector>

namespace hark::cli {

struct Shard {
  size_t index = 0;  // K, counted from 0
  size_t count = 1;  // N
};

// "K/N" with 0 <= K < N. Throws hark::Error(InvalidArgument) otherwise.
Shard parse_shard(const std::string& text);

// One path per line; blank lines and lines starting with '#' are skipped, surrounding
// spaces and a CRLF's CR are trimmed. Relative paths stay relative to the working
// directory (as tar -T). Paths that name the same file lexically ("a.wav", "./a.wav")
// are kept once, at their first line. `name` is used in error messages.
std::vector<std::string> read_manifest(std::istream& in, const std::string& name);
// The same from a file, or from standard input for "-". NotFound when it cannot be read,
// InvalidArgument when it lists nothing or when two inputs would write the same output.
std::vector<std::string> read_manifest_file(const std::string& path);

// This shard's share: entry i (0-based, after duplicates are dropped) belongs to shard
// i mod N. Balanced to within one file, and appending to the manifest moves no file
// that was already assigned.
std::vector<std::string> shard_entries(const std::vector<std::string>& entries, Shard shard);

// Where the outputs of `input` go, without the extension: output_dir/<input path minus
// its extension>, the input's directories mirrored (absolute paths and paths above the
// working directory mirror their absolute form).
std::filesystem::path output_base(const std::string& input, const std::filesystem::path& output_dir);

// Throws InvalidArgument naming both inputs when two entries share an output_base.
void check_distinct_outputs(const std::vector<std::string>& entries);

}  // namespace hark::cli
