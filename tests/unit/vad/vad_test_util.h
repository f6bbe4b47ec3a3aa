// Helpers for the VAD tests: the model, a PCM16 WAV reader (the vad test binary does not
// link the audio module) and the golden folder.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"
#include "vad/silero.h"

namespace hark::vad::test {

// The reference weights (those of silero_vad.jit / .onnx).
inline const SileroModel& model() {
  static const SileroModel m = SileroModel::load(hark::test::data_path("vad/silero_vad_16k_jit.safetensors"));
  return m;
}

// silero-vad 6.2.1's silero_vad_16k.safetensors: the same graph with other weights.
inline const SileroModel& model_v621() {
  static const SileroModel m = SileroModel::load(hark::test::data_path("vad/silero_vad_16k.safetensors"));
  return m;
}

// 16 kHz mono PCM16 WAV → float in [-1, 1) (x / 32768, as the oracle reads it). Returns an
// empty vector for anything else.
inline std::vector<float> read_wav16k(const std::string& relative) {
  const std::string bytes = hark::test::read_file(hark::test::data_path(relative));
  if (bytes.size() < 12 || bytes.compare(0, 4, "RIFF") != 0 || bytes.compare(8, 4, "WAVE") != 0) return {};
  size_t pos = 12;
  bool format_ok = false;
  while (pos + 8 <= bytes.size()) {
    uint32_t size = 0;
    std::memcpy(&size, bytes.data() + pos + 4, 4);
    const std::string id = bytes.substr(pos, 4);
    pos += 8;
    if (id == "fmt " && size >= 16 && pos + 16 <= bytes.size()) {
      uint16_t tag, channels, bits;
      uint32_t rate;
      std::memcpy(&tag, bytes.data() + pos, 2);
      std::memcpy(&channels, bytes.data() + pos + 2, 2);
      std::memcpy(&rate, bytes.data() + pos + 4, 4);
      std::memcpy(&bits, bytes.data() + pos + 14, 2);
      format_ok = tag == 1 && channels == 1 && rate == 16000 && bits == 16;
    } else if (id == "data" && format_ok) {
      const size_t n = std::min<size_t>(size, bytes.size() - pos) / 2;
      std::vector<float> out(n);
      for (size_t i = 0; i < n; ++i) {
        int16_t v;
        std::memcpy(&v, bytes.data() + pos + 2 * i, 2);
        out[i] = static_cast<float>(v) / 32768.0f;
      }
      return out;
    }
    pos += size + (size & 1);
  }
  return {};
}

// tests/data/golden/vad, or $HARK_VAD_GOLDEN (a local dry run of scripts/oracle/vad.py).
inline std::string golden_dir() {
  if (const char* env = std::getenv("HARK_VAD_GOLDEN"); env && *env) return env;
  return hark::test::data_path("golden/vad");
}

inline bool have_goldens() { return std::filesystem::exists(golden_dir() + "/segments.json"); }

}  // namespace hark::vad::test
