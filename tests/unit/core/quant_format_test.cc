// ggml's block formats: hand-built blocks whose values are worked out by hand from the
// format definitions, ggml's own dequantization of random blocks (tests/data/quant), and
// hark's quantizers (round trip within each format's resolution).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/quant_format.h"
#include <cstring>
#include "test_support.h"

namespace hark::quant {
namespace {

void set_f16(uint8_t* p, float v) { store_f16(p, v); }

std::vector<float> dequantize(DType dtype, const void* blocks, int64_t n) {
  std::vector<float> out(n);
  dequantize_row(dtype, blocks, out.data(), n);
  return out;
}

TEST(QuantFormat, SizesAndNames) {
  EXPECT_EQ(block_info(DType::Q8_0).bytes, 34u);
  EXPECT_EQ(block_info(DType::Q6_K).bytes, 210u);
  EXPECT_EQ(dtype_nbytes(DType::Q4_0, 64), 36u);
  EXPECT_EQ(dtype_nbytes(DType::Q4_K, 512), 288u);
  EXPECT_EQ(std::string(dtype_name(DType::Q5_K)), "q5_k");
  EXPECT_EQ(parse_name("Q5_K"), DType::Q5_K);
  EXPECT_EQ(parse_name("q8_0"), DType::Q8_0);
  EXPECT_FALSE(parse_name("q8_1").has_value());
  EXPECT_EQ(from_ggml_type(8), DType::Q8_0);
  EXPECT_EQ(from_ggml_type(6), DType::Q5_0);
  EXPECT_FALSE(from_ggml_type(9).has_value());  // q8_1: never in a Whisper file
  EXPECT_THROW(dtype_size(DType::Q8_0), Error);
  EXPECT_THROW(Tensor::empty({2, 48}, DType::Q8_0), Error);  // rows must be whole blocks
  Tensor t = Tensor::zeros({3, 64}, DType::Q8_0);
  EXPECT_EQ(t.nbytes(), 3u * 68);
  EXPECT_EQ(static_cast<const char*>(t.rows(1, 2).raw()) - static_cast<const char*>(t.raw()), 68);
}

TEST(QuantFormat, Q4_0AndQ4_1ByHand) {
  BlockQ4_0 a{};
  set_f16(a.d, 0.5f);
  a.qs[0] = 0x3F;   // value 0 = 15 - 8, value 16 = 3 - 8
  a.qs[15] = 0x80;  // value 15 = 0 - 8, value 31 = 8 - 8
  auto y = dequantize(DType::Q4_0, &a, 32);
  EXPECT_EQ(y[0], 3.5f);
  EXPECT_EQ(y[16], -2.5f);
  EXPECT_EQ(y[15], -4.0f);
  EXPECT_EQ(y[31], 0.0f);
  EXPECT_EQ(y[1], -4.0f);
  BlockQ4_1 b{};
  set_f16(b.d, 0.25f);
  set_f16(b.m, -1.0f);
  b.qs[2] = 0xA1;  // value 2 = 1, value 18 = 10
  y = dequantize(DType::Q4_1, &b, 32);
  EXPECT_EQ(y[2], -0.75f);
  EXPECT_EQ(y[18], 1.5f);
  EXPECT_EQ(y[0], -1.0f);
}

TEST(QuantFormat, Q5ByHand) {
  BlockQ5_0 a{};
  set_f16(a.d, 2.0f);
  a.qs[0] = 0xF1;                        // value 0: low 1, value 16: low 15
  a.qh[0] = 0x01;                        // bit 0: value 0 gets +16
  a.qh[2] = 0x01;                        // bit 16: value 16 gets +16
  auto y = dequantize(DType::Q5_0, &a, 32);
  EXPECT_EQ(y[0], 2.0f);                 // (17 - 16) · 2
  EXPECT_EQ(y[16], 30.0f);               // (31 - 16) · 2
  EXPECT_EQ(y[5], -32.0f);               // (0 - 16) · 2
  BlockQ5_1 b{};
  set_f16(b.d, 0.5f);
  set_f16(b.m, 1.0f);
  b.qs[3] = 0x02;
  b.qh[3] = 0x80;                        // bit 31: value 31 gets +16
  y = dequantize(DType::Q5_1, &b, 32);
  EXPECT_EQ(y[3], 2.0f);                 // 2 · 0.5 + 1
  EXPECT_EQ(y[31], 9.0f);                // 16 · 0.5 + 1
}

TEST(QuantFormat, Q8_0ByHand) {
  BlockQ8_0 a{};
  set_f16(a.d, 0.125f);
  a.qs[0] = -128;
  a.qs[31] = 127;
  auto y = dequantize(DType::Q8_0, &a, 32);
  EXPECT_EQ(y[0], -16.0f);
  EXPECT_EQ(y[31], 15.875f);
  EXPECT_EQ(y[1], 0.0f);
}

TEST(QuantFormat, Q2_KByHand) {
  BlockQ2_K b{};
  set_f16(b.d, 0.5f);
  set_f16(b.dmin, 0.25f);
  b.scales[0] = 0x21;   // values 0..15: scale 1, min 2
  b.scales[2] = 0x03;   // values 32..47: scale 3, min 0
  b.scales[9] = 0x14;   // values 144..159: scale 4, min 1
  b.qs[0] = 0xE4;       // codes 0, 1, 2, 3 for values 0, 32, 64, 96
  b.qs[48] = 0x03;      // code 3 for value 128 + 16 = 144
  auto y = dequantize(DType::Q2_K, &b, 256);
  EXPECT_EQ(y[0], 0.5f * 1 * 0 - 0.25f * 2);
  EXPECT_EQ(y[32], 0.5f * 3 * 1);
  EXPECT_EQ(y[144], 0.5f * 4 * 3 - 0.25f * 1);
  EXPECT_EQ(y[1], -0.5f);  // code 0 in sub-block 0
}

TEST(QuantFormat, Q3_KByHand) {
  BlockQ3_K b{};
  set_f16(b.d, 0.5f);
  // Sub-block 0: 6-bit scale 35 → 3 (low nibble 3 in byte 0, top bits 10 in byte 8 bits 0-1).
  b.scales[0] = 0x03;
  b.scales[8] = 0x02;
  // Sub-block 13 (values 208..223): 6-bit 20 → -12 (low nibble 4 in byte 5 high half,
  // top bits 01 in byte 9 bits 6-7).
  b.scales[5] = 0x40;
  b.scales[9] = 0x40;
  b.qs[0] = 0x02;       // value 0: code 2; its hmask bit (byte 0 bit 0) is clear: 2 - 4
  b.qs[5] = 0x01;       // value 5: code 1, hmask byte 5 bit 0 set: 1
  b.hmask[5] = 0x01;
  b.qs[32 + 16] = 0x40; // value 128 + 64 + 16 = 208: shift 4, code 0; hmask byte 16 bit 6 set: 0
  b.hmask[16] = 0x40;
  auto y = dequantize(DType::Q3_K, &b, 256);
  EXPECT_EQ(y[0], 0.5f * 3 * (2 - 4));
  EXPECT_EQ(y[5], 0.5f * 3 * 1);
  EXPECT_EQ(y[208], 0.5f * -12 * 0);
  EXPECT_EQ(y[209], 0.5f * -12 * -4);  // code 0, high bit clear
  EXPECT_EQ(q3k_scale(b.scales, 0), 3);
  EXPECT_EQ(q3k_scale(b.scales, 13), -12);
}

TEST(QuantFormat, Q4_KAndQ5_KByHand) {
  BlockQ4_K b{};
  set_f16(b.d, 0.5f);
  set_f16(b.dmin, 1.0f);
  b.scales[0] = 0x02;           // sub-block 0: scale 2
  b.scales[4] = 0x01;           // sub-block 0: min 1
  b.scales[8 + 1] = 0x35;       // sub-block 5: scale low 5, min low 3
  b.scales[1] = 0x40;           // sub-block 5: scale bits 4-5 = 01 → 21
  b.scales[5] = 0x80;           // sub-block 5: min bits 4-5 = 10 → 35
  b.qs[0] = 0x9F;               // value 0: 15, value 32: 9
  b.qs[64 + 7] = 0xC0;          // value 128 + 32 + 7 = 167 (sub-block 5): 12
  auto y = dequantize(DType::Q4_K, &b, 256);
  EXPECT_EQ(y[0], 0.5f * 2 * 15 - 1.0f * 1);
  EXPECT_EQ(y[167], 0.5f * 21 * 12 - 1.0f * 35);
  int sc, mn;
  q4k_scale_min(b.scales, 5, sc, mn);
  EXPECT_EQ(sc, 21);
  EXPECT_EQ(mn, 35);
  BlockQ5_K c{};
  set_f16(c.d, 0.25f);
  set_f16(c.dmin, 0.5f);
  c.scales[3] = 0x04;           // sub-block 3 (values 96..127): scale 4, min 0
  c.qs[32 + 10] = 0x70;         // value 64 + 32 + 10 = 106: high nibble 7
  c.qh[10] = 0x08;              // bit 2·1 + 1 = 3: +16
  auto z = dequantize(DType::Q5_K, &c, 256);
  EXPECT_EQ(z[106], 0.25f * 4 * 23);
}

TEST(QuantFormat, Q6_KByHand) {
  BlockQ6_K b{};
  set_f16(b.d, 0.5f);
  b.scales[0] = 3;
  b.scales[14] = -2;           // values 224..239
  b.ql[0] = 0x0F;              // value 0: low 15
  b.qh[0] = 0x02;              // value 0: bits 4-5 = 10 → 15 | 32 = 47 → 15
  b.ql[64 + 32 + 1] = 0x50;    // value 128 + 96 + 1 = 225: high nibble 5 (quarter 3)
  b.qh[32 + 1] = 0xC0;         // value 225: bits 6-7 = 11 → 5 | 48 = 53 → 21
  auto y = dequantize(DType::Q6_K, &b, 256);
  EXPECT_EQ(y[0], 0.5f * 3 * 15);
  EXPECT_EQ(y[225], 0.5f * -2 * 21);
  EXPECT_EQ(y[1], 0.5f * 3 * -32);
}

// Random blocks dequantized by ggml itself (whisper.cpp 233fe1f's dequantize_row_*),
// made by scripts/quant/ggml_goldens.c: hark must give the very same bits.
TEST(QuantFormat, EqualsGgmlOnRandomBlocks) {
  int checked = 0;
  for (const BlockInfo& f : formats()) {
    const std::string base = test::data_path(std::string("quant/") + f.name);
    const std::string blocks = test::read_file(base + ".blocks.bin");
    const std::string values = test::read_file(base + ".values.bin");
    const int64_t n = static_cast<int64_t>(values.size() / 4);
    ASSERT_EQ(static_cast<int64_t>(blocks.size() / f.bytes) * f.elems, n) << f.name;
    ASSERT_GT(n, 0);
    std::vector<float> got(n), want(n);
    std::memcpy(want.data(), values.data(), values.size());
    dequantize_row(f.dtype, blocks.data(), got.data(), n);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << f.name << " value " << i << ": " << got[i] << " vs " << want[i];
    ++checked;
  }
  EXPECT_EQ(checked, 10);
}

// Quantize → dequantize stays within each format's resolution.
TEST(QuantFormat, QuantizersRoundTrip) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const int64_t n = 4 * kSuper;
  std::vector<float> x(n);
  for (auto& v : x) v = normal(rng);
  x[7] = 0.4f;  // an outlier, as real weights have
  struct Bound { DType dtype; double rel; };
  // Bounds ~15 % above the error of ggml's own quantizers on such data (q8_0 0.0054,
  // q5_0 0.043, q4_0 0.086, q6_K 0.018, q4_K 0.071, q2_K 0.30).
  for (Bound b : {Bound{DType::Q8_0, 0.0065}, Bound{DType::Q5_0, 0.05}, Bound{DType::Q5_1, 0.045},
                  Bound{DType::Q4_0, 0.10}, Bound{DType::Q4_1, 0.09}, Bound{DType::Q6_K, 0.022},
                  Bound{DType::Q5_K, 0.045}, Bound{DType::Q4_K, 0.09}, Bound{DType::Q3_K, 0.18},
                  Bound{DType::Q2_K, 0.38}}) {
    std::vector<uint8_t> blocks(dtype_nbytes(b.dtype, n));
    quantize_row(b.dtype, x.data(), blocks.data(), n);
    const auto y = dequantize(b.dtype, blocks.data(), n);
    double err = 0, ref = 0;
    for (int64_t i = 0; i < n; ++i) err += (y[i] - x[i]) * (y[i] - x[i]), ref += x[i] * x[i];
    EXPECT_LT(std::sqrt(err / ref), b.rel) << dtype_name(b.dtype);
    // Zeros stay zeros (no NaN from a zero scale).
    std::vector<float> zeros(n, 0.0f);
    quantize_row(b.dtype, zeros.data(), blocks.data(), n);
    for (float v : dequantize(b.dtype, blocks.data(), n)) ASSERT_EQ(v, 0.0f) << dtype_name(b.dtype);
  }
}

TEST(QuantFormat, TensorToF32Dequantizes) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = 0.01f * static_cast<float>(i - 30);
  Tensor q = Tensor::empty({2, 32}, DType::Q8_0);
  quantize_row(DType::Q8_0, x.data(), q.raw(), 64);
  const std::vector<float> y = q.to_vector();
  for (int i = 0; i < 64; ++i) EXPECT_NEAR(y[i], x[i], 0.3f / 127) << i;
  EXPECT_EQ(q.describe(), "q8_0[2, 32]");
}

}  // namespace
}  // namespace hark::quant
