// Hugging Face layout: config.json (WhisperConfig) + model.safetensors, or shards listed
// in model.safetensors.index.json; optional generation_config.json.
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "model/loaders/loaders.h"
#include "model/loaders/names.h"
#include "model/loaders/safetensors.h"
#include "model/loaders/tensor_io.h"

namespace hark::loaders {
namespace {

const std::string kConfig = "config.json";
const std::string kSingle = "model.safetensors";
const std::string kIndex = "model.safetensors.index.json";

[[noreturn]] void bad_hf(const std::string& what, const std::string& why) {
  throw Error(ErrorCode::ModelFormat, "[model] '" + what + "': " + why);
}

// The shard files an index names, checked so a hostile index cannot point outside `dir`.
std::vector<std::string> shards_from_index(const std::string& dir, std::map<std::string, std::string>& weight_map) {
  const std::string path = dir + "/" + kIndex;
  const nlohmann::json index = read_json_file(path);
  auto it = index.is_object() ? index.find("weight_map") : index.end();
  if (it == index.end() || !it->is_object() || it->empty()) bad_hf(path, "no weight_map object naming the shards");
  std::set<std::string> shards;
  for (const auto& [name, file] : it->items()) {
    if (!file.is_string()) bad_hf(path, "weight_map entry '" + name + "' is not a file name");
    const std::string shard = file.get<std::string>();
    if (shard.empty() || shard.find('/') != std::string::npos || shard.find("..") != std::string::npos)
      bad_hf(path, "weight_map names shard '" + shard + "', which is not a plain file name in the directory");
    weight_map[name] = shard;
    shards.insert(shard);
  }
  std::vector<std::string> files;
  for (const auto& shard : shards) {
    if (!file_exists(dir + "/" + shard))
      throw Error(ErrorCode::NotFound, "[model] '" + path + "' lists shard '" + shard +
                                           "', which is missing from the directory (incomplete download?)");
    files.push_back(dir + "/" + shard);
  }
  return files;
}

// proj_out.weight is the tied output projection: hark reuses the token embedding, which is
// only right when the two are the same numbers.
void check_tied_projection(const Tensor& proj, const Weights& weights, const std::string& path) {
  if (!weights.has("decoder.token_embedding.weight")) return;
  const Tensor& emb = weights.get("decoder.token_embedding.weight");
  bool same = proj.shape() == emb.shape();
  if (same && proj.dtype() == emb.dtype()) same = std::memcmp(proj.raw(), emb.raw(), emb.nbytes()) == 0;
  else if (same) same = proj.to_vector() == emb.to_vector();
  if (!same)
    throw Error(ErrorCode::UnsupportedFormat, "[model] '" + path +
                                                  "': proj_out.weight differs from the token embedding; hark "
                                                  "supports only Whisper checkpoints with tied output embeddings");
}

void load_shard(const std::string& path, Weights& weights, std::set<std::string>& found,
                std::optional<Tensor>& proj_out) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  for (const auto& entry : file.entries()) {
    found.insert(entry.name);
    if (entry.name == "proj_out.weight") {
      proj_out = file.tensor(entry);
      continue;
    }
    const auto internal = hf_to_internal(entry.name);
    if (!internal) continue;  // not a Whisper weight (extra heads of fine-tuned models)
    if (weights.has(*internal)) bad_hf(path, "tensor '" + entry.name + "' appears twice in the checkpoint");
    weights.add(*internal, file.tensor(entry));
  }
}

}  // namespace

bool looks_like_hf(const std::string& dir) {
  // A directory whose config.json is in the OpenAI/MLX style belongs to the MLX loader,
  // even when its weights file is called model.safetensors.
  if (file_exists(dir + "/" + kConfig)) {
    try {
      const nlohmann::json config = read_json_file(dir + "/" + kConfig);
      if (config.is_object() && config.contains("n_audio_layer")) return false;
    } catch (const Error&) {
      // Unreadable config: let load_hf report it in full.
    }
  }
  return file_exists(dir + "/" + kSingle) || file_exists(dir + "/" + kIndex);
}

Checkpoint load_hf(const std::string& dir) {
  const std::string config_path = dir + "/" + kConfig;
  if (!file_exists(config_path))
    bad_hf(dir, "no config.json next to the safetensors weights; a Hugging Face checkpoint needs the config.json "
             "of its repository (download it too)");
  const nlohmann::json config = read_json_file(config_path);
  if (!config.is_object()) bad_hf(config_path, "not a JSON object");
  if (config.contains("model_type") && config["model_type"] != "whisper")
    throw Error(ErrorCode::UnsupportedFormat, "[model] '" + config_path + "': model_type is " +
                                                  config["model_type"].dump() + ", not whisper");
  Checkpoint ckpt;
  ckpt.hparams = HParams::from_hf_json(config);

  std::map<std::string, std::string> weight_map;
  std::vector<std::string> files;
  if (file_exists(dir + "/" + kSingle)) files.push_back(dir + "/" + kSingle);
  else files = shards_from_index(dir, weight_map);

  std::set<std::string> found;
  std::optional<Tensor> proj_out;
  for (const auto& f : files) load_shard(f, ckpt.weights, found, proj_out);
  if (proj_out) check_tied_projection(*proj_out, ckpt.weights, dir);
  for (const auto& [name, shard] : weight_map)
    if (!found.count(name))
      bad_hf(dir + "/" + kIndex, "names tensor '" + name + "' in shard '" + shard + "', which does not hold it");

  read_generation_config(dir, ckpt);
  ckpt.dtype = dominant_dtype(ckpt.weights);
  return ckpt;
}

void save_hf(const Checkpoint& ckpt, const std::string& dir, DType dtype) { save_hf(ckpt, dir, dtype, 0); }

void save_hf(const Checkpoint& ckpt, const std::string& dir, DType dtype, size_t max_shard_bytes) {
  if (dtype == DType::I32 || dtype_is_quantized(dtype))
    throw Error(ErrorCode::InvalidArgument, std::string("[convert] Hugging Face weights must be f32, f16 or bf16, not ") +
                                                dtype_name(dtype) + " (quantized types are written as ggml only)");
  make_directory(dir);
  nlohmann::json config = ckpt.hparams.to_hf_json();
  config["torch_dtype"] = dtype == DType::F32 ? "float32" : dtype == DType::F16 ? "float16" : "bfloat16";

  std::vector<NamedTensor> tensors;
  size_t total = 0;
  for (const auto& [name, shape] : expected_tensors(ckpt.hparams)) {
    tensors.push_back({internal_to_hf(name), ckpt.weights.get(name, shape)});
    total += static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype);
  }
  // A stale file of the other layout would shadow (or contradict) the new one.
  std::remove((dir + "/" + kSingle).c_str());
  std::remove((dir + "/" + kIndex).c_str());

  if (max_shard_bytes == 0 || total <= max_shard_bytes) {
    write_safetensors(dir + "/" + kSingle, tensors, dtype);
  } else {
    std::vector<std::vector<NamedTensor>> shards(1);
    size_t shard_bytes = 0;
    for (auto& t : tensors) {
      const size_t bytes = static_cast<size_t>(t.tensor.numel()) * dtype_size(dtype);
      if (!shards.back().empty() && shard_bytes + bytes > max_shard_bytes) shards.emplace_back(), shard_bytes = 0;
      shards.back().push_back(std::move(t));
      shard_bytes += bytes;
    }
    nlohmann::json weight_map = nlohmann::json::object();
    for (size_t i = 0; i < shards.size(); ++i) {
      char file[64];
      std::snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
      write_safetensors(dir + "/" + file, shards[i], dtype);
      for (const auto& t : shards[i]) weight_map[t.name] = file;
    }
    const nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    write_text_file(dir + "/" + kIndex, index.dump(2) + "\n");
  }
  write_text_file(dir + "/" + kConfig, config.dump(2) + "\n");
  write_generation_config(dir, ckpt);
}

}  // namespace hark::loaders
