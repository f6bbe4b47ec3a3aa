#include "model/checkpoint.h"

#include <filesystem>

#include "model/loaders/loaders.h"
#include "model/synthetic.h"

namespace hark {

const char* to_string(CheckpointFormat format) {
  switch (format) {
    case CheckpointFormat::HuggingFace: return "hf";
    case CheckpointFormat::Mlx: return "mlx";
    case CheckpointFormat::Ggml: return "ggml";
  }
  return "?";
}

CheckpointFormat parse_checkpoint_format(const std::string& name) {
  if (name == "hf" || name == "huggingface") return CheckpointFormat::HuggingFace;
  if (name == "mlx") return CheckpointFormat::Mlx;
  if (name == "ggml") return CheckpointFormat::Ggml;
  throw Error(ErrorCode::InvalidArgument, "[model] unknown checkpoint format '" + name + "': use hf, mlx or ggml");
}

std::optional<CheckpointFormat> detect_checkpoint_format(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (loaders::looks_like_hf(path)) return CheckpointFormat::HuggingFace;
    if (loaders::looks_like_mlx(path)) return CheckpointFormat::Mlx;
    return std::nullopt;
  }
  if (fs::is_regular_file(path, ec) && loaders::looks_like_ggml(path)) return CheckpointFormat::Ggml;
  return std::nullopt;
}

std::shared_ptr<const Checkpoint> load_checkpoint(const std::string& path) {
  namespace fs = std::filesystem;
  // "synthetic:tiny" (or ":base", ...): the seeded random-weight checkpoint of that shape.
  const std::string synthetic_prefix = "synthetic:";
  if (path.rfind(synthetic_prefix, 0) == 0) {
    Checkpoint ckpt = make_synthetic_checkpoint(hparams_for_size(path.substr(synthetic_prefix.size())));
    ckpt.path = path;
    return std::make_shared<const Checkpoint>(std::move(ckpt));
  }
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(ErrorCode::NotFound, "[model] no checkpoint at '" + path +
                                         "': pass a model directory or ggml file (see `hark models`, `hark get`)");
  auto format = detect_checkpoint_format(path);
  if (!format)
    throw Error(ErrorCode::UnsupportedFormat,
                "[model] '" + path + "' is not a Whisper checkpoint hark can read: expected a Hugging Face directory "
                "(config.json + model.safetensors), an MLX directory (config.json + weights.safetensors/.npz) or a "
                "whisper.cpp ggml-*.bin file");
  Checkpoint ckpt;
  switch (*format) {
    case CheckpointFormat::HuggingFace: ckpt = loaders::load_hf(path); break;
    case CheckpointFormat::Mlx: ckpt = loaders::load_mlx(path); break;
    case CheckpointFormat::Ggml: ckpt = loaders::load_ggml(path); break;
  }
  ckpt.format = *format;
  ckpt.path = path;
  ckpt.hparams.validate();
  check_weights(ckpt.weights, ckpt.hparams);
  return std::make_shared<const Checkpoint>(std::move(ckpt));
}

void save_checkpoint(const Checkpoint& checkpoint, CheckpointFormat format, const std::string& out,
                     std::optional<DType> dtype) {
  DType dt = dtype.value_or(checkpoint.dtype);
  switch (format) {
    case CheckpointFormat::HuggingFace: loaders::save_hf(checkpoint, out, dt); break;
    case CheckpointFormat::Mlx: loaders::save_mlx(checkpoint, out, dt); break;
    case CheckpointFormat::Ggml: loaders::save_ggml(checkpoint, out, dt); break;
  }
}

}  // namespace hark
