// MLX community layout (mlx-examples whisper): config.json in OpenAI's ModelDimensions
// naming + weights.safetensors or weights.npz. Differences from the internal naming:
// mlp1/mlp2 for mlp.0/mlp.2, conv weights stored [out, kernel, in], and the encoder's
// sinusoidal positions usually left out (MLX recomputes them).
#include <cstdio>
#include <cstring>

#include "model/loaders/loaders.h"
#include "model/loaders/names.h"
#include "model/loaders/npz.h"
#include "model/loaders/safetensors.h"
#include "model/loaders/tensor_io.h"
#include "model/synthetic.h"

namespace hark::loaders {
namespace {

const std::string kMlxConfig = "config.json";
// mlx_whisper's own preference order.
const char* const kWeightFiles[] = {"model.safetensors", "weights.safetensors", "weights.npz"};
const std::string kPrivatePositions = "encoder._positional_embedding";

bool is_conv_weight(const std::string& name) { return name == "encoder.conv1.weight" || name == "encoder.conv2.weight"; }

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

[[noreturn]] void quantized(const std::string& what, const std::string& detail) {
  throw Error(ErrorCode::UnsupportedFormat, "[model] '" + what + "' is a quantized MLX checkpoint (" + detail +
                                                "); hark reads f32/f16/bf16 weights: use the unquantized "
                                                "repository of the same model");
}

std::vector<NamedTensor> read_weight_file(const std::string& path) {
  std::vector<NamedTensor> out;
  if (ends_with(path, ".npz")) return read_npz(path);
  const SafetensorsFile file = SafetensorsFile::open(path);
  for (const auto& e : file.entries()) {
    if (ends_with(e.name, ".scales") || ends_with(e.name, ".biases")) quantized(path, "tensor " + e.name);
    out.push_back({e.name, file.tensor(e)});
  }
  return out;
}

// MLX conv weights are [out, kernel, in]; the internal layout is PyTorch's [out, in, kernel].
Tensor conv_from_mlx(const std::string& name, const Tensor& t, const Shape& expected, const std::string& path) {
  const Shape mlx_shape = {expected[0], expected[2], expected[1]};
  if (t.shape() != mlx_shape)
    throw Error(ErrorCode::ModelFormat, "[model] '" + path + "': tensor '" + name + "' has shape " + shape_str(t.shape()) +
                                            ", expected " + shape_str(mlx_shape) + " (MLX conv layout [out, kernel, in])");
  return swap_last_axes(t);
}

}  // namespace

bool looks_like_mlx(const std::string& dir) {
  if (file_exists(dir + "/" + kMlxConfig)) {
    try {
      const nlohmann::json config = read_json_file(dir + "/" + kMlxConfig);
      return config.is_object() && config.contains("n_audio_layer");
    } catch (const Error&) {
      return false;
    }
  }
  // Weights without a config: claim the directory so load_mlx can say what is missing.
  return file_exists(dir + "/weights.safetensors") || file_exists(dir + "/weights.npz");
}

Checkpoint load_mlx(const std::string& dir) {
  const std::string config_path = dir + "/" + kMlxConfig;
  if (!file_exists(config_path))
    throw Error(ErrorCode::ModelFormat, "[model] '" + dir + "': no config.json next to the MLX weights; the "
                                                            "checkpoint needs the config.json of its repository");
  const nlohmann::json config = read_json_file(config_path);
  if (config.contains("quantization") && !config["quantization"].is_null())
    quantized(dir, "config.json has quantization " + config["quantization"].dump());
  Checkpoint ckpt;
  ckpt.hparams = HParams::from_openai_json(config);

  std::string weights_path;
  for (const char* f : kWeightFiles)
    if (weights_path.empty() && file_exists(dir + "/" + f)) weights_path = dir + "/" + f;
  if (weights_path.empty())
    throw Error(ErrorCode::NotFound, "[model] '" + dir + "' has an MLX config.json but no weights.safetensors or weights.npz");

  std::map<std::string, Shape> expected;
  for (auto& [name, shape] : expected_tensors(ckpt.hparams)) expected[name] = shape;
  for (auto& [mlx_name, t] : read_weight_file(weights_path)) {
    if (ends_with(mlx_name, ".scales") || ends_with(mlx_name, ".biases")) quantized(weights_path, "tensor " + mlx_name);
    std::string name = mlx_name == kPrivatePositions ? "encoder.positional_embedding" : mlx_to_internal(mlx_name);
    if (!expected.count(name)) continue;  // e.g. alignment_heads saved by some converters
    if (ckpt.weights.has(name))
      throw Error(ErrorCode::ModelFormat, "[model] '" + weights_path + "': tensor '" + mlx_name + "' appears twice");
    ckpt.weights.add(name, is_conv_weight(name) ? conv_from_mlx(mlx_name, t, expected[name], weights_path) : t);
  }
  if (!ckpt.weights.has("encoder.positional_embedding"))
    ckpt.weights.add("encoder.positional_embedding", sinusoids(ckpt.hparams.n_audio_ctx, ckpt.hparams.n_audio_state));
  read_generation_config(dir, ckpt);
  ckpt.dtype = dominant_dtype(ckpt.weights);
  return ckpt;
}

void save_mlx(const Checkpoint& ckpt, const std::string& dir, DType dtype) {
  save_mlx(ckpt, dir, dtype, MlxContainer::Safetensors);
}

void save_mlx(const Checkpoint& ckpt, const std::string& dir, DType dtype, MlxContainer container) {
  if (dtype == DType::I32 || dtype_is_quantized(dtype))
    throw Error(ErrorCode::InvalidArgument, std::string("[convert] MLX weights must be f32, f16 or bf16, not ") +
                                                dtype_name(dtype) + " (quantized types are written as ggml only)");
  if (container == MlxContainer::Npz && dtype == DType::BF16)
    throw Error(ErrorCode::InvalidArgument, "[convert] weights.npz cannot hold bf16 (numpy has no bf16 type): "
                                            "write weights.safetensors, or choose --dtype f16 or f32");
  make_directory(dir);
  const HParams& hp = ckpt.hparams;
  std::vector<NamedTensor> tensors;
  for (const auto& [name, shape] : expected_tensors(hp)) {
    const Tensor& t = ckpt.weights.get(name, shape);
    if (name == "encoder.positional_embedding") {
      // MLX recomputes the sinusoids; store the table only when it is something else.
      const Tensor reference = cast_tensor(sinusoids(shape[0], shape[1]), dtype), mine = cast_tensor(t, dtype);
      if (std::memcmp(reference.raw(), mine.raw(), mine.nbytes()) != 0) tensors.push_back({kPrivatePositions, t});
      continue;
    }
    tensors.push_back({internal_to_mlx(name), is_conv_weight(name) ? swap_last_axes(t) : t});
  }
  // A stale weights file of another kind would shadow the new one (mlx_whisper's order).
  for (const char* f : kWeightFiles) std::remove((dir + "/" + f).c_str());
  if (container == MlxContainer::Npz) write_npz(dir + "/weights.npz", tensors, dtype);
  else write_safetensors(dir + "/weights.safetensors", tensors, dtype, {{"format", "mlx"}});
  nlohmann::json config = hp.to_openai_json();
  config["model_type"] = "whisper";
  write_text_file(dir + "/" + kMlxConfig, config.dump(4) + "\n");
  write_generation_config(dir, ckpt);
}

}  // namespace hark::loaders
