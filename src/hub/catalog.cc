#include "hub/catalog.h"

namespace hark::hub {

const std::vector<CatalogEntry>& catalog() {
  // mlx-community names follow that organisation's (irregular) naming as published.
  static const std::vector<CatalogEntry> kEntries = {
      {"tiny", "openai/whisper-tiny", "mlx-community/whisper-tiny-mlx", "ggml-tiny.bin"},
      {"tiny.en", "openai/whisper-tiny.en", "mlx-community/whisper-tiny.en-mlx", "ggml-tiny.en.bin"},
      {"base", "openai/whisper-base", "mlx-community/whisper-base-mlx", "ggml-base.bin"},
      {"base.en", "openai/whisper-base.en", "mlx-community/whisper-base.en-mlx", "ggml-base.en.bin"},
      {"small", "openai/whisper-small", "mlx-community/whisper-small-mlx", "ggml-small.bin"},
      {"small.en", "openai/whisper-small.en", "mlx-community/whisper-small.en-mlx", "ggml-small.en.bin"},
      {"medium", "openai/whisper-medium", "mlx-community/whisper-medium-mlx", "ggml-medium.bin"},
      {"medium.en", "openai/whisper-medium.en", "mlx-community/whisper-medium.en-mlx", "ggml-medium.en.bin"},
      {"large-v1", "openai/whisper-large", "mlx-community/whisper-large-mlx", "ggml-large-v1.bin"},
      {"large-v2", "openai/whisper-large-v2", "mlx-community/whisper-large-v2-mlx", "ggml-large-v2.bin"},
      {"large-v3", "openai/whisper-large-v3", "mlx-community/whisper-large-v3-mlx", "ggml-large-v3.bin"},
      {"large-v3-turbo", "openai/whisper-large-v3-turbo", "mlx-community/whisper-large-v3-turbo",
       "ggml-large-v3-turbo.bin"},
      {"distil-large-v2", "distil-whisper/distil-large-v2", "", ""},
      {"distil-large-v3", "distil-whisper/distil-large-v3", "mlx-community/distil-whisper-large-v3", ""},
      {"distil-large-v3.5", "distil-whisper/distil-large-v3.5", "", ""},
      {"distil-medium.en", "distil-whisper/distil-medium.en", "", ""},
      {"distil-small.en", "distil-whisper/distil-small.en", "", ""},
  };
  return kEntries;
}

namespace {

const CatalogEntry* find_by_name(const std::string& name) {
  std::string canonical = name;
  if (canonical == "turbo" || canonical == "large-turbo") canonical = "large-v3-turbo";
  if (canonical == "large") canonical = "large-v3";
  for (const auto& entry : catalog())
    if (entry.name == canonical) return &entry;
  return nullptr;
}

}  // namespace

std::optional<ShortName> parse_short_name(const std::string& spec) {
  ShortName result;
  std::string name = spec;
  auto colon = name.find(':');
  if (colon != std::string::npos) {
    std::string prefix = name.substr(0, colon);
    if (prefix != "hf" && prefix != "mlx" && prefix != "ggml") return std::nullopt;
    result.format = parse_checkpoint_format(prefix);
    name = name.substr(colon + 1);
  }
  // whisper.cpp's own file names select the ggml build of the same checkpoint.
  if (name.rfind("ggml-", 0) == 0) {
    if (result.format && *result.format != CheckpointFormat::Ggml) return std::nullopt;
    result.format = CheckpointFormat::Ggml;
    name = name.substr(5);
    if (name.ends_with(".bin")) name.resize(name.size() - 4);
  }
  result.entry = find_by_name(name);
  if (!result.entry) return std::nullopt;
  return result;
}

const CatalogEntry* find_catalog_entry_by_source(const std::string& repo_or_file) {
  for (const auto& entry : catalog()) {
    if (entry.hf_repo == repo_or_file || entry.mlx_repo == repo_or_file) return &entry;
    if (!entry.ggml_file.empty() &&
        (entry.ggml_file == repo_or_file || entry.ggml_file == repo_or_file + ".bin"))
      return &entry;
  }
  return nullptr;
}

}  // namespace hark::hub
