#include "hub/plan.h"

#include <algorithm>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hark/error.h"
#include "hub/catalog.h"

namespace hark::hub {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::stringstream stream(s);
  for (std::string part; std::getline(stream, part, sep);) parts.push_back(part);
  return parts;
}

std::string join(const std::vector<std::string>& parts, size_t from, const char* sep) {
  std::string out;
  for (size_t i = from; i < parts.size(); ++i) out += (i > from ? sep : "") + parts[i];
  return out;
}

bool is_repo_part(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

const char* kNameHelp =
    "pass a short name (tiny, base, small, medium, large-v3, turbo, distil-large-v3, … with .en, "
    "mlx: or ggml: variants; `hark get --list` shows them all), a repo id such as openai/whisper-small, "
    "or a URL";

// Hub URLs (https://huggingface.co/org/name[/resolve|blob|tree/rev[/file]]); anything else
// is fetched as a plain file.
GetTarget parse_url(const std::string& url, const std::string& revision) {
  GetTarget target;
  target.revision = revision;
  auto scheme_end = url.find("://");
  std::string rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("?#"));
  auto slash = rest.find('/');
  std::string host = rest.substr(0, slash);
  auto parts = slash == std::string::npos ? std::vector<std::string>{} : split(rest.substr(slash + 1), '/');
  bool hub_host = host == "huggingface.co" || host == "hf.co" || host == "www.huggingface.co";
  bool file_url = parts.size() >= 5 && (parts[2] == "resolve" || parts[2] == "blob");
  if (file_url || (hub_host && parts.size() >= 2 && is_repo_part(parts[0]) && is_repo_part(parts[1]))) {
    target.repo = parts[0] + "/" + parts[1];
    target.endpoint = url.substr(0, scheme_end + 3) + host;
    if (parts.size() >= 4 && (parts[2] == "tree" || file_url)) target.revision = parts[3];
    if (file_url) target.file = join(parts, 4, "/");
    if (file_url || parts.size() == 2 || parts[2] == "tree") return target;
  }
  target = GetTarget{};
  target.url = url;
  return target;
}

GetTarget from_short_name(const ShortName& name, std::optional<CheckpointFormat> format, const std::string& revision) {
  if (name.format && format && *name.format != *format)
    throw Error(ErrorCode::InvalidArgument, "[get] the name selects the " + std::string(to_string(*name.format)) +
                                                " format but --format says " + to_string(*format));
  GetTarget target;
  target.revision = revision;
  const CatalogEntry& entry = *name.entry;
  switch (name.format.value_or(format.value_or(CheckpointFormat::HuggingFace))) {
    case CheckpointFormat::HuggingFace: target.repo = entry.hf_repo; break;
    case CheckpointFormat::Mlx:
      if (entry.mlx_repo.empty())
        throw Error(ErrorCode::NotFound, "[get] no MLX build of " + entry.name + " is published; run `hark get " +
                                             entry.name + "` for the Hugging Face one (same weights)");
      target.repo = entry.mlx_repo;
      break;
    case CheckpointFormat::Ggml:
      if (entry.ggml_file.empty())
        throw Error(ErrorCode::NotFound, "[get] whisper.cpp publishes no ggml file of " + entry.name + "; run `hark get " +
                                             entry.name + "` for the Hugging Face one (same weights)");
      target.repo = kGgmlRepo;
      target.file = entry.ggml_file;
      break;
  }
  return target;
}

std::string file_names(const std::vector<RemoteFile>& files, size_t limit) {
  std::string out;
  for (size_t i = 0; i < files.size() && i < limit; ++i) out += (i ? ", " : "") + files[i].name;
  if (files.size() > limit) out += ", …";
  return out;
}

}  // namespace

bool is_safe_relative_path(const std::string& name) {
  if (name.empty() || name[0] == '/' || name.find('\\') != std::string::npos) return false;
  for (const auto& part : split(name, '/'))
    if (part.empty() || part == "." || part == "..") return false;
  return true;
}

GetTarget parse_get_target(const std::string& name, std::optional<CheckpointFormat> format,
                           const std::string& revision) {
  // Short names first: "small.en" would otherwise never be mistaken for a repo, but
  // "ggml-tiny.bin" must not fall through to the generic rules.
  if (starts_with(name, "https://") || starts_with(name, "http://")) return parse_url(name, revision);
  if (auto short_name = parse_short_name(name)) return from_short_name(*short_name, format, revision);
  auto parts = split(name, '/');
  if (parts.size() >= 2 && is_repo_part(parts[0]) && is_repo_part(parts[1])) {
    GetTarget target;
    target.repo = parts[0] + "/" + parts[1];
    target.revision = revision;
    target.file = join(parts, 2, "/");
    if (target.file.empty() || is_safe_relative_path(target.file)) return target;
  }
  throw Error(ErrorCode::InvalidArgument, "[get] unknown model '" + name + "': " + kNameHelp);
}

RepoListing parse_repo_listing(const nlohmann::json& info) {
  if (!info.is_object() || !info.contains("siblings") || !info["siblings"].is_array())
    throw Error(ErrorCode::Network, "[get] the hub's answer has no file list (siblings): is the endpoint a Hugging Face hub?");
  RepoListing listing;
  listing.commit = info.value("sha", "");
  for (const auto& sibling : info["siblings"]) {
    RemoteFile file;
    file.name = sibling.value("rfilename", "");
    if (file.name.empty()) continue;
    file.size = sibling.value("size", std::uint64_t{0});
    file.git_sha1 = sibling.value("blobId", "");
    if (sibling.contains("lfs") && sibling["lfs"].is_object()) {
      file.sha256 = sibling["lfs"].value("sha256", "");
      file.size = sibling["lfs"].value("size", file.size);
      file.git_sha1.clear();  // the blob id of an LFS file hashes the pointer, not the data
    }
    listing.files.push_back(std::move(file));
  }
  return listing;
}

std::vector<RemoteFile> choose_files(const RepoListing& listing, const std::string& wanted_file, const std::string& repo) {
  auto find = [&](const std::string& name) -> const RemoteFile* {
    for (const auto& file : listing.files)
      if (file.name == name) return &file;
    return nullptr;
  };
  std::vector<RemoteFile> ggml;
  for (const auto& file : listing.files)
    if (starts_with(file.name, "ggml-") && file.name.ends_with(".bin")) ggml.push_back(file);
  if (!wanted_file.empty()) {
    if (const auto* file = find(wanted_file)) return {*file};
    std::string hint = ggml.empty() ? "" : " (its ggml files: " + file_names(ggml, 12) + ")";
    throw Error(ErrorCode::NotFound, "[get] " + repo + " has no file '" + wanted_file + "'" + hint);
  }
  // One weights layout per repo, in the loaders' order of preference; tokenizer files,
  // PyTorch/TF/Flax/ONNX weights and READMEs are never fetched.
  std::vector<RemoteFile> chosen;
  if (const auto* single = find("model.safetensors")) {
    chosen.push_back(*single);
  } else if (const auto* index = find("model.safetensors.index.json")) {
    // transformers names shards model-0000i-of-0000n.safetensors; the index is fetched
    // after them so a complete index never points at a missing shard.
    for (const auto& file : listing.files)
      if (starts_with(file.name, "model-") && file.name.ends_with(".safetensors")) chosen.push_back(file);
    if (chosen.empty()) throw Error(ErrorCode::ModelFormat, "[get] " + repo + " has a shard index but no model-*.safetensors shards");
    chosen.push_back(*index);
  } else if (const auto* mlx = find("weights.safetensors")) {
    chosen.push_back(*mlx);
  } else if (const auto* npz = find("weights.npz")) {
    chosen.push_back(*npz);
  } else if (!ggml.empty()) {
    throw Error(ErrorCode::InvalidArgument, "[get] " + repo + " holds whisper.cpp files; name one: `hark get " + repo + "/" +
                                                ggml.front().name + "` (files: " + file_names(ggml, 12) + ")");
  } else if (find("pytorch_model.bin")) {
    throw Error(ErrorCode::UnsupportedFormat, "[get] " + repo + " has only PyTorch .bin weights; hark reads safetensors, "
                                                  "MLX and ggml checkpoints: pick a repo with model.safetensors");
  } else {
    throw Error(ErrorCode::NotFound, "[get] " + repo + " holds no Whisper weights hark can read (files: " +
                                         file_names(listing.files, 12) + ")");
  }
  const auto* config = find("config.json");
  if (!config) throw Error(ErrorCode::ModelFormat, "[get] " + repo + " has weights but no config.json");
  if (const auto* generation = find("generation_config.json")) chosen.push_back(*generation);
  chosen.push_back(*config);
  return chosen;
}

}  // namespace hark::hub
