// hark convert: rewrites a checkpoint in another layout (Hugging Face, MLX, whisper.cpp
// ggml), optionally changing the stored precision. The source may be any format hark
// loads, or synthetic:SIZE for the seeded random-weight checkpoints.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/model_arg.h"
#include "hark/error.h"
#include "core/quant_format.h"
#include "model/loaders/loaders.h"

namespace hark::cli {
namespace {

struct ConvertArgs {
  std::string source;
  std::string to;
  std::string out;
  std::string dtype;  // empty: keep the source's
  bool npz = false;
  double shard_mb = 0;
  bool force = false;
};

DType parse_dtype(const std::string& name) {
  if (name == "f32" || name == "float32") return DType::F32;
  if (name == "f16" || name == "float16") return DType::F16;
  if (name == "bf16" || name == "bfloat16") return DType::BF16;
  if (auto q = quant::parse_name(name)) return *q;
  throw Error(ErrorCode::InvalidArgument, "[convert] unknown --dtype '" + name +
                                              "': use f32, f16, bf16 or (ggml) q8_0, q5_0, q5_1, q4_0, q4_1, q2_k ... q6_k");
}

// Bytes of the written weights, and how many 2-D tensors fell back from a k-quant.
std::pair<double, int> written_bytes(const Checkpoint& ckpt, CheckpointFormat format, DType target) {
  double bytes = 0;
  int fallbacks = 0;
  for (const auto& [name, shape] : expected_tensors(ckpt.hparams)) {
    const DType stored = format == CheckpointFormat::Ggml ? loaders::ggml_storage_dtype(name, shape, target) : target;
    bytes += static_cast<double>(dtype_nbytes(stored, shape_numel(shape)));
    fallbacks += dtype_is_quantized(target) && shape.size() == 2 && stored != target && dtype_is_quantized(stored);
  }
  return {bytes, fallbacks};
}

// Refuses to clobber existing files unless --force, and catches arguments that cannot work.
void check_destination(const ConvertArgs& args, CheckpointFormat format) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(args.source, ec) && fs::exists(args.out, ec) && fs::equivalent(args.source, args.out, ec))
    throw Error(ErrorCode::InvalidArgument, "[convert] --out is the source itself: write to another path");
  if (args.npz && format != CheckpointFormat::Mlx)
    throw Error(ErrorCode::InvalidArgument, "[convert] --npz applies to --to mlx only");
  if (args.shard_mb != 0 && format != CheckpointFormat::HuggingFace)
    throw Error(ErrorCode::InvalidArgument, "[convert] --shard-size applies to --to hf only");
  if (args.shard_mb < 0) throw Error(ErrorCode::InvalidArgument, "[convert] --shard-size must be positive");
  if (!fs::exists(args.out, ec)) return;
  if (format == CheckpointFormat::Ggml) {
    if (fs::is_directory(args.out, ec))
      throw Error(ErrorCode::InvalidArgument, "[convert] --out '" + args.out +
                                                  "' is a directory; ggml is one file: give a path such as " +
                                                  args.out + "/ggml-model.bin");
    if (!args.force)
      throw Error(ErrorCode::InvalidArgument, "[convert] '" + args.out + "' exists; pass --force to overwrite it");
    return;
  }
  if (!fs::is_directory(args.out, ec))
    throw Error(ErrorCode::InvalidArgument, "[convert] --out '" + args.out + "' is a file; hf and mlx write a directory");
  if (!fs::is_empty(args.out, ec) && !args.force)
    throw Error(ErrorCode::InvalidArgument, "[convert] '" + args.out +
                                                "' is not empty; pass --force to write into it (files of the same "
                                                "names are replaced)");
}

void run_convert(const ConvertArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  const CheckpointFormat format = parse_checkpoint_format(args.to);
  check_destination(args, format);
  std::optional<DType> dtype;
  if (!args.dtype.empty()) dtype = parse_dtype(args.dtype);
  if (dtype && dtype_is_quantized(*dtype) && format != CheckpointFormat::Ggml)
    throw Error(ErrorCode::InvalidArgument, std::string("[convert] ") + dtype_name(*dtype) +
                                                " is a ggml block type: write it with --to ggml");
  const char* synthetic_dtype = dtype == DType::F16 ? "f16" : dtype == DType::BF16 ? "bf16" : "f32";
  auto ckpt = open_model_arg(args.source, synthetic_dtype);
  DType target = dtype.value_or(ckpt->dtype);
  if (!dtype && format != CheckpointFormat::Ggml && dtype_is_quantized(target)) {
    // Hugging Face and MLX files hold floats: the quantized values, widened, fit f16 exactly
    // only for some types, so f32 keeps them all.
    std::fprintf(stderr, "hark convert: %s weights are written widened to f32 (pass --dtype f16 for a smaller file)\n",
                 dtype_name(target));
    target = DType::F32;
  }
  if (!dtype && format == CheckpointFormat::Ggml && target == DType::BF16) {
    // ggml has no bf16; f32 keeps every value exactly.
    std::fprintf(stderr, "hark convert: ggml has no bf16, writing f32 (pass --dtype f16 for a smaller file)\n");
    target = DType::F32;
  }
  switch (format) {
    case CheckpointFormat::HuggingFace:
      loaders::save_hf(*ckpt, args.out, target, static_cast<size_t>(args.shard_mb * 1024 * 1024));
      break;
    case CheckpointFormat::Mlx:
      loaders::save_mlx(*ckpt, args.out, target, args.npz ? loaders::MlxContainer::Npz : loaders::MlxContainer::Safetensors);
      break;
    case CheckpointFormat::Ggml: loaders::save_ggml(*ckpt, args.out, target); break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto [bytes, fallbacks] = written_bytes(*ckpt, format, target);
  if (fallbacks > 0)
    std::fprintf(stderr, "hark convert: %d matrices have rows that are not whole %s super-blocks of 256 values; "
                 "they are stored as %s (as llama.cpp's quantizer does)\n", fallbacks, dtype_name(target),
                 dtype_name(loaders::ggml_storage_dtype("x", {1, 32}, target)));
  const double mb = bytes / 1e6;
  std::printf("converted %s (%s, %s, %s) -> %s (%s, %s): %zu tensors, %.1f MB in %.2f s\n", args.source.c_str(),
              ckpt->path.empty() ? "synthetic" : to_string(ckpt->format), dtype_name(ckpt->dtype), ckpt->hparams.size_name().c_str(), args.out.c_str(),
              to_string(format), dtype_name(target), ckpt->weights.size(), mb, seconds);
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  auto* cmd = app.add_subcommand("convert", "Write a checkpoint in another layout: hf, mlx or ggml");
  cmd->add_option("source", args->source, "Checkpoint directory or ggml file (or synthetic:SIZE)")->required();
  cmd->add_option("--to", args->to, "Output layout: hf | mlx | ggml")->required();
  cmd->add_option("--out,-o", args->out, "Output directory (hf, mlx) or file (ggml)")->required();
  cmd->add_option("--dtype", args->dtype,
                  "Stored precision: f32 | f16 | bf16, or for ggml q8_0 | q5_0 | q5_1 | q4_0 | q4_1 | q2_k ... q6_k "
                  "(default: the source's)");
  cmd->add_flag("--npz", args->npz, "mlx: write weights.npz instead of weights.safetensors");
  cmd->add_option("--shard-size", args->shard_mb, "hf: split into shards of at most this many MB (0 = one file)");
  cmd->add_flag("--force", args->force, "Write into a non-empty directory / replace an existing file");
  cmd->callback([args] { run_convert(*args); });
}

}  // namespace hark::cli
