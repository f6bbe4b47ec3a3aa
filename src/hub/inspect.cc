#include "hub/inspect.h"

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/quant_format.h"
#include "hark/error.h"

namespace hark::hub {
namespace fs = std::filesystem;
namespace {

// Thrown inside this file only: the checkpoint is not usable, and why.
struct Rejected {
  std::string reason;
};

constexpr std::uint32_t kGgmlMagic = 0x67676d6c;
constexpr std::uint64_t kMaxHeaderBytes = 64ull << 20;  // far above any real safetensors header

std::string read_bytes(const fs::path& file, std::uint64_t offset, std::uint64_t count) {
  std::ifstream in(file, std::ios::binary);
  std::string bytes(count, '\0');
  if (!in.seekg(static_cast<std::streamoff>(offset)) || !in.read(bytes.data(), static_cast<std::streamsize>(count)))
    throw Rejected{file.filename().string() + " is shorter than its header says (incomplete download?)"};
  return bytes;
}

std::uint64_t le_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::uint32_t le_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

nlohmann::json read_json(const fs::path& file) {
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec) throw Rejected{"no " + file.filename().string()};
  if (size > (4u << 20)) throw Rejected{file.filename().string() + " is implausibly large"};
  auto json = nlohmann::json::parse(read_bytes(file, 0, size), nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw Rejected{file.filename().string() + " is not valid JSON"};
  return json;
}

std::string short_dtype(const std::string& name) {
  if (name == "F32" || name == "f4") return "f32";
  if (name == "F16" || name == "f2") return "f16";
  if (name == "BF16") return "bf16";
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

struct WeightsSummary {
  std::map<std::string, std::uint64_t> bytes_by_dtype;
  std::uint64_t file_bytes = 0;

  std::string dominant_dtype() const {
    std::string best = "?";
    std::uint64_t most = 0, total = 0;
    for (const auto& [dtype, bytes] : bytes_by_dtype) {
      total += bytes;
      if (bytes > most) most = bytes, best = dtype;
    }
    // Norms kept in f32 next to f16 matrices are normal; only a real split is "mixed".
    return total > 0 && most * 10 < total * 9 ? "mixed" : best;
  }
};

// Reads the JSON header of a safetensors file and checks the data it promises is there.
void summarize_safetensors(const fs::path& file, WeightsSummary& out) {
  std::error_code ec;
  std::uint64_t size = fs::file_size(file, ec);
  if (ec) throw Rejected{"missing " + file.filename().string()};
  if (size < 8) throw Rejected{file.filename().string() + " is truncated"};
  std::uint64_t header_len = le_u64(read_bytes(file, 0, 8).data());
  if (header_len > kMaxHeaderBytes || 8 + header_len > size)
    throw Rejected{file.filename().string() + " is truncated or not a safetensors file"};
  auto header = nlohmann::json::parse(read_bytes(file, 8, header_len), nullptr, false);
  if (header.is_discarded() || !header.is_object()) throw Rejected{file.filename().string() + " has a corrupt header"};
  std::uint64_t data_end = 0;
  for (const auto& [name, tensor] : header.items()) {
    if (name == "__metadata__" || !tensor.is_object()) continue;
    const auto offsets = tensor.value("data_offsets", nlohmann::json::array());
    if (!offsets.is_array() || offsets.size() != 2) throw Rejected{file.filename().string() + ": bad tensor entry"};
    std::uint64_t begin = offsets[0].get<std::uint64_t>(), end = offsets[1].get<std::uint64_t>();
    data_end = std::max(data_end, end);
    out.bytes_by_dtype[short_dtype(tensor.value("dtype", "?"))] += end - begin;
  }
  if (8 + header_len + data_end > size)
    throw Rejected{file.filename().string() + " is shorter than its header says (incomplete download?)"};
  out.file_bytes += size;
}

// An .npz is a zip of .npy files; the first member's npy header gives the dtype, and the
// end-of-central-directory record at the tail proves the archive is complete.
void summarize_npz(const fs::path& file, WeightsSummary& out) {
  std::error_code ec;
  std::uint64_t size = fs::file_size(file, ec);
  if (ec || size < 22) throw Rejected{file.filename().string() + " is truncated"};
  std::uint64_t tail_len = std::min<std::uint64_t>(size, 65557);
  std::string tail = read_bytes(file, size - tail_len, tail_len);
  bool complete = false;
  for (size_t i = tail.size() - 22 + 1; i-- > 0 && !complete;)
    complete = le_u32(tail.data() + i) == 0x06054b50;
  if (!complete) throw Rejected{file.filename().string() + " is truncated (no zip directory at its end)"};

  std::string local = read_bytes(file, 0, 30);
  if (le_u32(local.data()) != 0x04034b50) throw Rejected{file.filename().string() + " is not a zip archive"};
  std::string dtype = "?";
  int method = static_cast<unsigned char>(local[8]) | (static_cast<unsigned char>(local[9]) << 8);
  if (method == 0) {  // stored: the npy header follows the local header directly
    std::uint64_t name_len = static_cast<unsigned char>(local[26]) | (static_cast<unsigned char>(local[27]) << 8);
    std::uint64_t extra_len = static_cast<unsigned char>(local[28]) | (static_cast<unsigned char>(local[29]) << 8);
    std::string npy = read_bytes(file, 30 + name_len + extra_len, std::min<std::uint64_t>(256, size - 30 - name_len - extra_len));
    auto descr = npy.find("'descr'");
    auto open = descr == std::string::npos ? descr : npy.find('\'', descr + 7);
    auto close = open == std::string::npos ? open : npy.find('\'', open + 1);
    if (close != std::string::npos) dtype = short_dtype(npy.substr(open + 2, close - open - 2));
  }
  out.bytes_by_dtype[dtype] += size;
  out.file_bytes += size;
}

HParams parse_hparams(const nlohmann::json& config, bool mlx_layout) {
  try {
    return mlx_layout ? HParams::from_openai_json(config) : HParams::from_hf_json(config);
  } catch (const Error& e) {
    throw Rejected{std::string("config.json: ") + e.what()};
  }
}

ModelInfo inspect_directory(const fs::path& dir) {
  auto config = read_json(dir / "config.json");
  if (config.contains("model_type") && config["model_type"] != "whisper")
    throw Rejected{"config.json describes a '" + config["model_type"].dump() + "' model, not Whisper"};
  ModelInfo info;
  WeightsSummary weights;
  bool mlx_layout = config.contains("n_mels") && config.contains("n_audio_layer");
  if (mlx_layout) {
    if (config.contains("quantization")) throw Rejected{"quantized MLX weights are not supported"};
    info.format = CheckpointFormat::Mlx;
    // Same file names, in the same order, as the MLX loader.
    if (fs::exists(dir / "model.safetensors")) summarize_safetensors(dir / "model.safetensors", weights);
    else if (fs::exists(dir / "weights.safetensors")) summarize_safetensors(dir / "weights.safetensors", weights);
    else if (fs::exists(dir / "weights.npz")) summarize_npz(dir / "weights.npz", weights);
    else throw Rejected{"no weights.safetensors or weights.npz next to config.json"};
  } else {
    info.format = CheckpointFormat::HuggingFace;
    if (fs::exists(dir / "model.safetensors")) {
      summarize_safetensors(dir / "model.safetensors", weights);
    } else if (fs::exists(dir / "model.safetensors.index.json")) {
      auto index = read_json(dir / "model.safetensors.index.json");
      std::set<std::string> shards;
      const auto weight_map = index.value("weight_map", nlohmann::json::object());
      for (const auto& [tensor, shard] : weight_map.items())
        if (shard.is_string()) shards.insert(shard.get<std::string>());
      if (shards.empty()) throw Rejected{"model.safetensors.index.json lists no shards"};
      for (const auto& shard : shards) summarize_safetensors(dir / shard, weights);
    } else {
      throw Rejected{"no model.safetensors (hark reads safetensors, not pytorch_model.bin)"};
    }
  }
  info.hparams = parse_hparams(config, mlx_layout);
  info.dtype = weights.dominant_dtype();
  info.bytes = weights.file_bytes;
  return info;
}

// whisper.cpp header: magic, then eleven int32 hyper-parameters ending with ftype.
ModelInfo inspect_ggml(const fs::path& file) {
  std::string header = read_bytes(file, 0, 48);
  if (le_u32(header.data()) != kGgmlMagic) throw Rejected{"not a ggml file (wrong magic)"};
  auto field = [&](int i) { return static_cast<int>(le_u32(header.data() + 4 + 4 * i)); };
  ModelInfo info;
  info.format = CheckpointFormat::Ggml;
  HParams& hp = info.hparams;
  hp.n_vocab = field(0), hp.n_audio_ctx = field(1), hp.n_audio_state = field(2), hp.n_audio_head = field(3);
  hp.n_audio_layer = field(4), hp.n_text_ctx = field(5), hp.n_text_state = field(6), hp.n_text_head = field(7);
  hp.n_text_layer = field(8), hp.n_mels = field(9);
  try {
    hp.validate();
  } catch (const Error& e) {
    throw Rejected{std::string("ggml header: ") + e.what()};
  }
  // Newer files add 1000 × the quantization version; quantized blocks are those of version 2.
  const int ftype = field(10) % 1000, version = field(10) / 1000;
  const quant::BlockInfo* block = nullptr;
  for (const quant::BlockInfo& f : quant::formats())
    if (f.ggml_ftype == ftype) block = &f;
  if (field(10) < 0 || (ftype > 1 && !block))
    throw Rejected{"ggml ftype " + std::to_string(field(10)) + " is not supported (f32, f16, q4_0 ... q8_0, q2_k ... q6_k)"};
  if (block && version != 2)
    throw Rejected{"ggml quantized with the old quantization version " + std::to_string(version) + " (re-quantize it)"};
  info.dtype = block ? block->name : ftype == 0 ? "f32" : "f16";
  info.bytes = fs::file_size(file);
  // The token embedding alone is n_vocab × n_text_state elements; a file smaller than that
  // was cut short.
  const double per_value = block ? static_cast<double>(block->bytes) / static_cast<double>(block->elems) : ftype == 0 ? 4 : 2;
  const auto embedding = static_cast<std::uint64_t>(double(hp.n_vocab) * hp.n_text_state * per_value);
  if (info.bytes < embedding) throw Rejected{"ggml file is truncated (incomplete download?)"};
  return info;
}

}  // namespace

std::optional<ModelInfo> inspect_checkpoint(const std::string& path, std::string* why_not) {
  std::error_code ec;
  try {
    ModelInfo info;
    if (fs::is_directory(path, ec)) info = inspect_directory(path);
    else if (fs::is_regular_file(path, ec)) info = inspect_ggml(path);
    else throw Rejected{"no such file or directory"};
    info.path = path;
    // The loaders' own detection has the last word on the format once they recognise it.
    if (auto detected = detect_checkpoint_format(path)) info.format = *detected;
    return info;
  } catch (const Rejected& rejected) {
    if (why_not) *why_not = rejected.reason;
  } catch (const std::exception& e) {  // JSON type errors and the like in odd files
    if (why_not) *why_not = e.what();
  }
  return std::nullopt;
}

std::string human_bytes(std::uint64_t bytes) {
  static const char* kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1000 && unit < 4) value /= 1000, ++unit;
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
  return text;
}

}  // namespace hark::hub
