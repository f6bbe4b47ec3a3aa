#include "model/loaders/tensor_io.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "core/quant_format.h"

namespace hark::loaders {

Tensor cast_tensor(const Tensor& t, DType dtype) {
  // Going through f32 is exact for every source dtype, so f16 <-> bf16 rounds only once.
  if (t.dtype() == dtype) return t;
  if (dtype == DType::I32 || t.dtype() == DType::I32)
    throw Error(ErrorCode::Internal, "[model] cannot convert " + t.describe() + " to " + dtype_name(dtype));
  Tensor f32 = t.to_f32();
  if (dtype == DType::F32) return f32;
  if (dtype_is_quantized(dtype)) {
    Tensor out = Tensor::empty(t.shape(), dtype);
    quant::quantize_row(dtype, f32.data<float>(), out.raw(), t.numel());
    return out;
  }
  Tensor out = Tensor::empty(t.shape(), dtype);
  const float* src = f32.data<float>();
  auto* dst = out.data<uint16_t>();
  const int64_t n = t.numel();
  if (dtype == DType::F16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
  }
  return out;
}

Tensor view_or_copy(const std::shared_ptr<void>& file, const unsigned char* data, Shape shape, DType dtype,
                    const MappedFile* mapping) {
  // The mapping is read-only (PROT_READ); weights are never written through these views.
  // Quantized blocks have no alignment (kernels load them unaligned).
  const size_t align = dtype_is_quantized(dtype) ? 1 : dtype_size(dtype);
  if (reinterpret_cast<uintptr_t>(data) % align == 0)
    return Tensor::view(const_cast<unsigned char*>(data), std::move(shape), dtype, file);
  Tensor t = Tensor::empty(std::move(shape), dtype);
  std::memcpy(t.raw(), data, t.nbytes());
  if (mapping) mapping->release(data, t.nbytes());  // not read again: not resident twice
  return t;
}

Tensor swap_last_axes(const Tensor& t) {
  if (t.rank() != 3)
    throw Error(ErrorCode::Internal, "[model] swap_last_axes needs a rank-3 tensor, got " + t.describe());
  const int64_t a = t.dim(0), b = t.dim(1), c = t.dim(2);
  const size_t es = dtype_size(t.dtype());
  Tensor out = Tensor::empty({a, c, b}, t.dtype());
  const auto* src = static_cast<const unsigned char*>(t.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  // Byte-wise element moves keep this one routine valid for f32, f16 and bf16 alike.
  for (int64_t i = 0; i < a; ++i)
    for (int64_t j = 0; j < b; ++j)
      for (int64_t k = 0; k < c; ++k)
        std::memcpy(dst + ((i * c + k) * b + j) * es, src + ((i * b + j) * c + k) * es, es);
  return out;
}

DType dominant_dtype(const Weights& weights) {
  std::map<DType, int64_t> count;
  for (const auto& name : weights.names()) {
    const Tensor& t = weights.get(name);
    count[t.dtype()] += t.numel();
  }
  DType best = DType::F32;
  int64_t most = -1;
  for (const auto& [dtype, n] : count)
    if (n > most) best = dtype, most = n;
  return best;
}

nlohmann::json read_json_file(const std::string& path) {
  auto file = MappedFile::open(path);
  const char* begin = reinterpret_cast<const char*>(file->data());
  try {
    return nlohmann::json::parse(begin, begin + file->size());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::ModelFormat, "[model] '" + path + "' is not valid JSON: " + e.what());
  }
}

void write_bytes(std::FILE* f, const void* data, size_t size, const std::string& path) {
  if (size != 0 && std::fwrite(data, 1, size, f) != size)
    throw Error(ErrorCode::Io, "[convert] writing '" + path + "' failed: " + std::strerror(errno) +
                                   " (is the disk full?)");
}

void write_file_atomically(const std::string& path, const std::function<void(std::FILE*)>& writer) {
  // rename() within one directory is atomic: readers see the old file or the whole new one.
  const std::string tmp = path + ".partial";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(ErrorCode::Io, "[convert] cannot create '" + tmp + "': " + std::strerror(errno));
  try {
    writer(f);
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  const bool closed = std::fclose(f) == 0;
  if (!closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::Io, "[convert] cannot finish writing '" + path + "': " + std::strerror(errno));
  }
}

void write_text_file(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](std::FILE* f) { write_bytes(f, text.data(), text.size(), path); });
}

void make_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw Error(ErrorCode::Io, "[convert] cannot create directory '" + dir + "': " + ec.message());
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

namespace {

AlignmentHeads parse_alignment_heads(const nlohmann::json& j, const HParams& hp, const std::string& path) {
  AlignmentHeads heads;
  auto bad = [&](const std::string& why) {
    throw Error(ErrorCode::ModelFormat, "[model] '" + path + "': alignment_heads " + why +
                                            " (expected [[layer, head], ...] within the decoder's " +
                                            std::to_string(hp.n_text_layer) + " layers x " +
                                            std::to_string(hp.n_text_head) + " heads)");
  };
  if (!j.is_array()) bad("is not a list");
  for (const auto& pair : j) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number_integer())
      bad("holds an entry that is not a [layer, head] pair");
    const int64_t layer = pair[0].get<int64_t>(), head = pair[1].get<int64_t>();
    if (layer < 0 || layer >= hp.n_text_layer || head < 0 || head >= hp.n_text_head)
      bad("names [" + std::to_string(layer) + ", " + std::to_string(head) + "]");
    heads.emplace_back(static_cast<int>(layer), static_cast<int>(head));
  }
  return heads;
}

}  // namespace

void read_generation_config(const std::string& dir, Checkpoint& ckpt) {
  const std::string path = dir + "/generation_config.json";
  if (!file_exists(path)) return;
  ckpt.generation_config = read_json_file(path);
  if (!ckpt.generation_config.is_object())
    throw Error(ErrorCode::ModelFormat, "[model] '" + path + "' must hold a JSON object");
  auto it = ckpt.generation_config.find("alignment_heads");
  if (it != ckpt.generation_config.end() && !it->is_null())
    ckpt.alignment_heads = parse_alignment_heads(*it, ckpt.hparams, path);
}

void write_generation_config(const std::string& dir, const Checkpoint& ckpt) {
  // Start from what the source carried so token ids and suppress lists survive a conversion.
  nlohmann::json config = ckpt.generation_config.is_object() ? ckpt.generation_config : nlohmann::json::object();
  if (!ckpt.alignment_heads.empty()) {
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& [layer, head] : ckpt.alignment_heads) heads.push_back({layer, head});
    config["alignment_heads"] = heads;
  }
  if (config.empty()) return;
  write_text_file(dir + "/generation_config.json", config.dump(2) + "\n");
}

}  // namespace hark::loaders
