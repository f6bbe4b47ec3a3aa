// The short names of the official checkpoints ("turbo", "small.en", "distil-large-v3")
// and where each is published in every format hark reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/checkpoint.h"

namespace hark::hub {

struct CatalogEntry {
  std::string name;       // canonical short name: "large-v3-turbo"
  std::string hf_repo;    // Hugging Face layout: "openai/whisper-large-v3-turbo"
  std::string mlx_repo;   // MLX community layout, "" when none is published
  std::string ggml_file;  // file in ggerganov/whisper.cpp, "" when none is published
};

inline constexpr const char* kGgmlRepo = "ggerganov/whisper.cpp";

const std::vector<CatalogEntry>& catalog();

// A short name, with an optional "hf:", "mlx:" or "ggml:" prefix, an alias ("turbo",
// "large") or a whisper.cpp file name ("ggml-small.en", "ggml-small.en.bin").
struct ShortName {
  const CatalogEntry* entry = nullptr;
  std::optional<CheckpointFormat> format;  // set when the name itself selects one
};
std::optional<ShortName> parse_short_name(const std::string& spec);

// The catalog entry published under this repo id or ggml file name, if any.
const CatalogEntry* find_catalog_entry_by_source(const std::string& repo_or_file);

}  // namespace hark::hub
