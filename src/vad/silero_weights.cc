#include "vad/silero_weights.h"

#include <cstring>
#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "core/assets.h"
#include "core/mapped_file.h"
#include "hark/error.h"

namespace hark::vad {
namespace {

struct RawTensor {
  std::vector<int64_t> shape;
  const unsigned char* data = nullptr;
  size_t nbytes = 0;
};

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  throw Error(ErrorCode::ModelFormat, "[vad] '" + path + "' is not a Silero VAD 16 kHz safetensors file: " + what +
                                          "; use silero_vad_16k_jit.safetensors (or silero-vad 6.2's silero_vad_16k.safetensors)");
}

std::map<std::string, RawTensor> parse_safetensors(const MappedFile& file) {
  const std::string& path = file.path();
  if (file.size() < 8) bad_file(path, "shorter than its 8-byte header length");
  uint64_t header_len = 0;
  std::memcpy(&header_len, file.data(), 8);  // little-endian, as on every supported host
  if (header_len > file.size() - 8) bad_file(path, "header length past the end of the file");
  const char* header_begin = reinterpret_cast<const char*>(file.data()) + 8;
  nlohmann::json header = nlohmann::json::parse(header_begin, header_begin + header_len, nullptr, false);
  if (!header.is_object()) bad_file(path, "header is not a JSON object");
  const unsigned char* body = file.data() + 8 + header_len;
  const size_t body_size = file.size() - 8 - header_len;
  std::map<std::string, RawTensor> tensors;
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") continue;
    if (!info.is_object() || !info.contains("dtype") || !info.contains("shape") || !info.contains("data_offsets"))
      bad_file(path, "tensor '" + name + "' lacks dtype/shape/data_offsets");
    if (info["dtype"] != "F32") bad_file(path, "tensor '" + name + "' is not F32");
    const auto& offsets = info["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned())
      bad_file(path, "tensor '" + name + "' has malformed data_offsets");
    const uint64_t begin = offsets[0], end = offsets[1];
    if (begin > end || end > body_size) bad_file(path, "tensor '" + name + "' lies outside the file");
    RawTensor t;
    uint64_t numel = 1;
    for (const auto& d : info["shape"]) {
      if (!d.is_number_unsigned()) bad_file(path, "tensor '" + name + "' has a malformed shape");
      t.shape.push_back(d.get<int64_t>());
      numel *= d.get<uint64_t>();
    }
    if (numel * 4 != end - begin) bad_file(path, "tensor '" + name + "' size does not match its shape");
    t.data = body + begin;
    t.nbytes = end - begin;
    tensors[name] = t;
  }
  return tensors;
}

std::vector<float> take(const std::map<std::string, RawTensor>& tensors, const std::string& path,
                        const std::string& name, const std::vector<int64_t>& shape) {
  auto it = tensors.find(name);
  if (it == tensors.end()) bad_file(path, "missing tensor '" + name + "'");
  if (it->second.shape != shape) bad_file(path, "tensor '" + name + "' has an unexpected shape");
  std::vector<float> values(it->second.nbytes / 4);
  std::memcpy(values.data(), it->second.data, it->second.nbytes);
  return values;
}

}  // namespace

SileroWeights read_silero_weights(const std::string& path) {
  auto file = MappedFile::open(path);
  auto tensors = parse_safetensors(*file);
  SileroWeights w;
  w.stft_basis = take(tensors, path, "stft_conv.weight", {2 * kFreqBins, 1, kFilterLength});
  // Channel widths and strides of the four SileroVadBlocks (reparam_conv, kernel 3, padding 1).
  const int widths[5] = {kFreqBins, 128, 64, 64, 128};
  const int strides[4] = {1, 2, 2, 1};
  for (int i = 0; i < 4; ++i) {
    const std::string prefix = "conv" + std::to_string(i + 1);
    ConvBlockWeights& block = w.conv[i];
    block.c_in = widths[i];
    block.c_out = widths[i + 1];
    block.stride = strides[i];
    block.weight = take(tensors, path, prefix + ".weight", {block.c_out, block.c_in, 3});
    block.bias = take(tensors, path, prefix + ".bias", {block.c_out});
    block.packed = pack_weights(block.weight.data(), block.c_out, block.c_in * 3, block.bias.data());
  }
  w.w_ih = take(tensors, path, "lstm_cell.weight_ih", {kGates, kHiddenSize});
  std::vector<float> w_hh = take(tensors, path, "lstm_cell.weight_hh", {kGates, kHiddenSize});
  w.w_hh_t.resize(w_hh.size());
  for (int g = 0; g < kGates; ++g)
    for (int k = 0; k < kHiddenSize; ++k) w.w_hh_t[k * kGates + g] = w_hh[g * kHiddenSize + k];
  w.b_ih = take(tensors, path, "lstm_cell.bias_ih", {kGates});
  w.b_hh = take(tensors, path, "lstm_cell.bias_hh", {kGates});
  w.stft_packed = pack_weights(w.stft_basis.data(), 2 * kFreqBins, kFilterLength, nullptr);
  w.w_ih_packed = pack_weights(w.w_ih.data(), kGates, kHiddenSize, w.b_ih.data());
  w.head_w = take(tensors, path, "final_conv.weight", {1, kHiddenSize, 1});
  w.head_b = take(tensors, path, "final_conv.bias", {1})[0];
  return w;
}

std::string SileroModel::default_weights_path() {
  // The 16 kHz weights of silero_vad.jit/.onnx (the reference the port is proven against);
  // silero_vad_16k.safetensors from silero-vad 6.2.1 holds different weights.
  constexpr const char* kName = "silero_vad_16k_jit.safetensors";
  std::error_code ec;
  const std::string asset = assets_dir() + "/" + kName;
  if (std::filesystem::exists(asset, ec)) return asset;
  const std::string in_tree = std::string(HARK_SOURCE_DIR) + "/tests/data/vad/" + kName;
  if (std::filesystem::exists(in_tree, ec)) return in_tree;
  throw Error(ErrorCode::NotFound, std::string("[vad] ") + kName + " not found at " + asset + " or " + in_tree +
                                       "; set HARK_ASSETS to the folder holding hark's assets or pass --vad-model");
}

SileroModel SileroModel::load(const std::string& path) {
  return SileroModel(std::make_shared<const SileroWeights>(read_silero_weights(path)));
}

}  // namespace hark::vad
