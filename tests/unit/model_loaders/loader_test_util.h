// Shared helpers for the checkpoint loader tests: a small Whisper shape (fast to write
// and read), bit-exact comparison in the internal naming, and error expectations.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/synthetic.h"
#include "test_support.h"

namespace hark::test {

// Two layers each side, width 16, real vocabulary: every code path, ~3.5 MB in f32.
inline HParams small_hparams(int n_vocab = 51865) {
  HParams hp;
  hp.n_audio_state = hp.n_text_state = 16;
  hp.n_audio_head = hp.n_text_head = 2;
  hp.n_audio_layer = 2;
  hp.n_text_layer = 2;
  hp.n_audio_ctx = 12;
  hp.n_text_ctx = 8;
  hp.n_vocab = n_vocab;
  return hp;
}

inline const Checkpoint& small_checkpoint() {
  static const Checkpoint ckpt = make_synthetic_checkpoint(small_hparams());
  return ckpt;
}

// Every expected tensor present in both, same shape, same dtype, same bytes.
inline void expect_bit_identical(const Weights& got, const Weights& want, const HParams& hp) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [name, shape] : expected_tensors(hp)) {
    ASSERT_TRUE(got.has(name)) << name;
    const Tensor& a = got.get(name);
    const Tensor& b = want.get(name);
    ASSERT_EQ(a.shape(), b.shape()) << name;
    ASSERT_EQ(a.dtype(), b.dtype()) << name;
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << name << " differs";
  }
}

// Every tensor equal to the reference after rounding the reference to `dtype`.
inline void expect_values_as(const Weights& got, const Weights& want, const HParams& hp, DType dtype) {
  for (const auto& [name, shape] : expected_tensors(hp)) {
    const std::vector<float> a = got.get(name).to_vector();
    std::vector<float> b = want.get(name).to_vector();
    for (float& v : b) v = dtype == DType::F16 ? half_to_float(float_to_half(v))
                           : dtype == DType::BF16 ? bf16_to_float(float_to_bf16(v)) : v;
    ASSERT_EQ(a.size(), b.size()) << name;
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << name << " element " << i;
  }
}

// Runs `fn`, expecting a hark::Error of `code` whose message contains every fragment.
inline void expect_error(const std::function<void()>& fn, ErrorCode code, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << (fragments.empty() ? "" : fragments[0]) << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "missing '" << f << "' in: " << e.what();
  }
}

inline void write_binary(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string u64_le(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A safetensors image from a header text and a data section.
inline std::string safetensors_image(const std::string& header, const std::string& body) {
  return u64_le(header.size()) + header + body;
}

}  // namespace hark::test
