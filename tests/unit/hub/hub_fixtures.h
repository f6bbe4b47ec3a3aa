// Hand-built checkpoints and environments for the hub tests: tiny but structurally real
// safetensors, npz and ggml files, and an environment pointing every search path at a
// temporary folder.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace hark::test {

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string le_bytes(std::uint64_t value, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

// A safetensors file with one tensor of `elements` values of `dtype` ("F16", "F32", ...).
inline std::string make_safetensors(const std::string& dtype, std::uint64_t elements, char fill = 1) {
  std::uint64_t width = dtype == "F32" ? 4 : 2;
  nlohmann::json header = {{"model.encoder.conv1.weight",
                            {{"dtype", dtype}, {"shape", {elements}}, {"data_offsets", {0, elements * width}}}},
                           {"__metadata__", {{"format", "pt"}}}};
  std::string text = header.dump();
  while (text.size() % 8) text += ' ';
  return le_bytes(text.size(), 8) + text + std::string(elements * width, fill);
}

inline nlohmann::json hf_config_tiny() {
  return {{"model_type", "whisper"}, {"d_model", 384},         {"encoder_attention_heads", 6},
          {"encoder_layers", 4},     {"decoder_attention_heads", 6}, {"decoder_layers", 4},
          {"vocab_size", 51865},     {"num_mel_bins", 80},     {"torch_dtype", "float16"}};
}

inline nlohmann::json hf_config_turbo() {
  return {{"model_type", "whisper"}, {"d_model", 1280},         {"encoder_attention_heads", 20},
          {"encoder_layers", 32},    {"decoder_attention_heads", 20}, {"decoder_layers", 4},
          {"vocab_size", 51866},     {"num_mel_bins", 128}};
}

inline void make_hf_checkpoint(const std::filesystem::path& dir, const nlohmann::json& config = hf_config_tiny(),
                               const std::string& dtype = "F16") {
  write_bytes(dir / "config.json", config.dump());
  write_bytes(dir / "model.safetensors", make_safetensors(dtype, 64));
}

// whisper.cpp header; the file is extended (sparsely) to a plausible size unless `truncated`.
inline void make_ggml(const std::filesystem::path& path, int ftype = 1, bool truncated = false, int n_vocab = 51864) {
  int fields[] = {n_vocab, 1500, 384, 6, 4, 448, 384, 6, 4, 80, ftype};
  std::string bytes = le_bytes(0x67676d6c, 4);
  for (int f : fields) bytes += le_bytes(static_cast<std::uint32_t>(f), 4);
  write_bytes(path, bytes);
  std::filesystem::resize_file(path, truncated ? 4096 : 80'000'000);
}

// weights.npz as numpy writes it: stored zip members holding .npy files.
inline std::string make_npz(const std::string& descr) {
  std::string npy_header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (4,), }";
  while ((10 + npy_header.size() + 1) % 64) npy_header += ' ';
  npy_header += '\n';
  std::string npy = std::string("\x93NUMPY\x01\x00", 8) + le_bytes(npy_header.size(), 2) + npy_header + std::string(16, '\0');
  std::string name = "encoder.conv1.weight.npy";
  std::string local = le_bytes(0x04034b50, 4) + le_bytes(20, 2) + le_bytes(0, 2) + le_bytes(0, 2) + le_bytes(0, 4) +
                      le_bytes(0, 4) + le_bytes(npy.size(), 4) + le_bytes(npy.size(), 4) + le_bytes(name.size(), 2) +
                      le_bytes(0, 2) + name + npy;
  std::string central = le_bytes(0x02014b50, 4) + std::string(24, '\0') + le_bytes(name.size(), 2) +
                        std::string(16, '\0') + name;
  std::string end = le_bytes(0x06054b50, 4) + le_bytes(0, 4) + le_bytes(1, 2) + le_bytes(1, 2) +
                    le_bytes(central.size(), 4) + le_bytes(local.size(), 4) + le_bytes(0, 2);
  return local + central + end;
}

inline void make_mlx_checkpoint(const std::filesystem::path& dir, const std::string& descr = "<f2") {
  nlohmann::json config = {{"n_mels", 80},       {"n_audio_ctx", 1500}, {"n_audio_state", 512}, {"n_audio_head", 8},
                           {"n_audio_layer", 6}, {"n_vocab", 51864},    {"n_text_ctx", 448},    {"n_text_state", 512},
                           {"n_text_head", 8},   {"n_text_layer", 6}};
  write_bytes(dir / "config.json", config.dump());
  write_bytes(dir / "weights.npz", make_npz(descr));
}

// Points HOME, HARK_HOME, the HF caches and whisper.cpp folders at a fresh temporary
// folder for the lifetime of the object, restoring the previous values afterwards.
class ScopedHubEnv {
 public:
  explicit ScopedHubEnv(const std::string& name) : root_(temp_dir(name)) {
    set("HOME", root_ + "/home");
    set("XDG_CACHE_HOME", root_ + "/home/.cache");
    set("HARK_HOME", root_ + "/hark");
    set("HF_HUB_CACHE", root_ + "/hf/hub");
    set("WHISPER_CPP_MODELS", root_ + "/whisper.cpp/models");
    for (const char* name : {"HF_HOME", "HUGGINGFACE_HUB_CACHE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_ENDPOINT",
                             "HF_TOKEN_PATH"})
      set(name, std::nullopt);
  }
  ~ScopedHubEnv() {
    for (const auto& [name, value] : saved_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
      else unsetenv(name.c_str());
    }
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  const std::string& root() const { return root_; }
  void set(const std::string& name, const std::optional<std::string>& value) {
    if (!saved_.count(name)) {
      const char* old = std::getenv(name.c_str());
      saved_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    if (value) setenv(name.c_str(), value->c_str(), 1);
    else unsetenv(name.c_str());
  }

 private:
  std::string root_;
  std::map<std::string, std::optional<std::string>> saved_;
};

}  // namespace hark::test
