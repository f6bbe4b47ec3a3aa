#include "cli/manifest.h"

#include <charconv>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "hark/error.h"

namespace hark::cli {
namespace {

namespace fs = std::filesystem;

bool parse_size(const std::string& text, size_t& out) {
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// The path with its root removed: output_dir / mirrored(path) stays inside output_dir.
fs::path mirrored(const std::string& input) {
  fs::path p = fs::path(input).lexically_normal();
  if (p.is_relative() && !p.empty() && *p.begin() != "..") return p;
  return fs::absolute(p).lexically_normal().relative_path();
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  Shard s;
  if (slash == std::string::npos || !parse_size(text.substr(0, slash), s.index) ||
      !parse_size(text.substr(slash + 1), s.count))
    throw Error(ErrorCode::InvalidArgument, "[cli] --shard '" + text + "' must be K/N, e.g. 0/16 (shards count from 0)");
  if (s.count == 0) throw Error(ErrorCode::InvalidArgument, "[cli] --shard " + text + ": N must be at least 1");
  if (s.index >= s.count)
    throw Error(ErrorCode::InvalidArgument, "[cli] --shard " + text + ": K must be 0.." + std::to_string(s.count - 1) +
                                                " (shards count from 0)");
  return s;
}

std::vector<std::string> read_manifest(std::istream& in, const std::string& name) {
  std::vector<std::string> entries;
  std::set<std::string> seen;
  std::string line;
  for (size_t line_no = 1; std::getline(in, line); ++line_no) {
    const std::string path = trim(line);
    if (path.empty() || path[0] == '#') continue;
    if (path.find('\0') != std::string::npos)
      throw Error(ErrorCode::InvalidArgument, "[cli] manifest '" + name + "' has a NUL byte on line " +
                                                  std::to_string(line_no) + "; is it a text file of paths?");
    if (seen.insert(fs::path(path).lexically_normal().string()).second) entries.push_back(path);
  }
  if (in.bad()) throw Error(ErrorCode::Io, "[cli] cannot read manifest '" + name + "'");
  return entries;
}

std::vector<std::string> read_manifest_file(const std::string& path) {
  std::vector<std::string> entries;
  if (path == "-") {
    entries = read_manifest(std::cin, "standard input");
  } else {
    std::ifstream in(path);
    if (!in)
      throw Error(ErrorCode::NotFound, "[cli] cannot open manifest '" + path + "'; --manifest takes a text file of audio paths");
    entries = read_manifest(in, path);
  }
  if (entries.empty())
    throw Error(ErrorCode::InvalidArgument, "[cli] manifest '" + path + "' lists no files (one path per line, # comments)");
  check_distinct_outputs(entries);
  return entries;
}

std::vector<std::string> shard_entries(const std::vector<std::string>& entries, Shard shard) {
  std::vector<std::string> mine;
  for (size_t i = shard.index; i < entries.size(); i += shard.count) mine.push_back(entries[i]);
  return mine;
}

fs::path output_base(const std::string& input, const fs::path& output_dir) {
  return output_dir / mirrored(input).replace_extension();
}

void check_distinct_outputs(const std::vector<std::string>& entries) {
  std::map<fs::path, const std::string*> owner;
  for (const auto& entry : entries) {
    auto [it, fresh] = owner.emplace(output_base(entry, ""), &entry);
    if (!fresh)
      throw Error(ErrorCode::InvalidArgument, "[cli] manifest entries '" + *it->second + "' and '" + entry +
                                                  "' would write the same outputs (" + it->first.string() +
                                                  ".*); rename one or list them in separate runs");
  }
}

}  // namespace hark::cli
