#include "hub/resolve.h"

#include <filesystem>

#include "hark/error.h"
#include "hub/catalog.h"
#include "hub/discovery.h"
#include "hub/plan.h"

namespace hark::hub {
namespace fs = std::filesystem;
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool looks_like_path(const std::string& spec) {
  return spec.rfind("/", 0) == 0 || spec.rfind("./", 0) == 0 || spec.rfind("../", 0) == 0 || spec.rfind("~", 0) == 0;
}

std::string from_existing_path(const std::string& path) {
  std::string why;
  fs::path target = path;
  std::error_code ec;
  // An HF cache repo folder stands for its current snapshot.
  if (fs::is_directory(target / "snapshots", ec)) {
    std::string snapshot = hf_cache_snapshot(path);
    if (!snapshot.empty()) target = snapshot;
  }
  if (auto info = inspect_checkpoint(target.string(), &why)) return fs::absolute(target).lexically_normal().string();
  throw Error(ErrorCode::ModelFormat, "[model] '" + path + "' is not a usable Whisper checkpoint: " + why +
                                          " (expected a Hugging Face or MLX folder with config.json, or a "
                                          "whisper.cpp ggml-*.bin file)");
}

// The on-disk names under which the official checkpoint `entry` can appear.
bool is_build_of(const ModelInfo& model, const CatalogEntry& entry, std::optional<CheckpointFormat> format) {
  if (format && model.format != *format) return false;
  std::string name = lower(model.name);
  if (model.format == CheckpointFormat::Ggml) return !entry.ggml_file.empty() && name + ".bin" == entry.ggml_file;
  return name == lower(entry.hf_repo) || (!entry.mlx_repo.empty() && name == lower(entry.mlx_repo));
}

std::string where_we_looked(const SearchPaths& paths) {
  std::string text = paths.hark_models;
  for (const auto& dir : paths.hf_caches) text += ", " + dir;
  if (!paths.whisper_cpp.empty()) text += " and whisper.cpp model folders";
  return text;
}

// Same-shaped checkpoints under other names are worth mentioning, not silently using.
std::string same_shape_hint(const std::vector<ModelInfo>& models, const std::string& size_class) {
  for (const auto& model : models)
    if (model.size_class() == size_class)
      return " (" + model.name + " at " + model.path + " has the same shape; pass that path to use it)";
  return "";
}

}  // namespace

// Paths win over names, so a checkpoint folder called "tiny" is used as such; an unrelated
// file or folder that merely shares a model's name does not block the name.
std::string resolve_model(const std::string& spec, const SearchPaths& paths) {
  if (spec.empty()) throw Error(ErrorCode::InvalidArgument, "[model] no model given: pass a path, a repo id or a short name such as turbo");
  std::string path = expand_home(spec);
  std::error_code ec;
  if (fs::exists(path, ec)) {
    bool could_be_name = !looks_like_path(spec) && (parse_short_name(spec) || spec.find('/') != std::string::npos);
    if (!could_be_name || inspect_checkpoint(path)) return from_existing_path(path);
  }
  if (looks_like_path(spec)) throw Error(ErrorCode::NotFound, "[model] no such file or folder: '" + spec + "'");

  auto models = discover_models(paths);
  if (auto short_name = parse_short_name(spec)) {
    for (const auto& model : models)
      if (is_build_of(model, *short_name->entry, short_name->format)) return model.path;
    throw Error(ErrorCode::NotFound, "[model] " + short_name->entry->name + " is not on disk (searched " +
                                         where_we_looked(paths) + "): download it with `hark get " + spec + "`" +
                                         same_shape_hint(models, short_name->entry->name));
  }
  GetTarget target;
  try {
    target = parse_get_target(spec, std::nullopt, "main");
  } catch (const Error&) {
    throw Error(ErrorCode::InvalidArgument, "[model] unknown model '" + spec + "': pass a checkpoint path, a repo id "
                                            "(org/name) or a short name (tiny, base, small, medium, large-v3, turbo, "
                                            "… ; `hark get --list` shows them all)");
  }
  for (const auto& model : models) {
    bool match = target.file.empty()
                     ? model.format != CheckpointFormat::Ggml && lower(model.name) == lower(target.repo)
                     : model.format == CheckpointFormat::Ggml &&
                           lower(model.name + ".bin") == lower(fs::path(target.file).filename().string());
    if (match) return model.path;
  }
  throw Error(ErrorCode::NotFound, "[model] " + spec + " is not on disk (searched " + where_we_looked(paths) +
                                       "): download it with `hark get " + spec + "`");
}

std::string resolve_model(const std::string& spec) { return resolve_model(spec, SearchPaths::from_environment()); }

}  // namespace hark::hub
