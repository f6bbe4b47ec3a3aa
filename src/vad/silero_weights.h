// The Silero 16 kHz weights in the layouts the kernels in silero.cc want (internal to
// src/vad). Shapes follow silero_vad_16k.safetensors.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "vad/row_gemm.h"
#include "vad/silero.h"

namespace hark::vad {

inline constexpr int kFilterLength = 256;               // STFT window (samples)
inline constexpr int kHopLength = 128;
inline constexpr int kFreqBins = kFilterLength / 2 + 1;  // 129 magnitudes per frame
inline constexpr int kFrames = 4;                        // (64 + 512 + 64 - 256) / 128 + 1
inline constexpr int kGates = 4 * kHiddenSize;           // LSTM i, f, g, o

struct ConvBlockWeights {
  int c_in = 0;
  int c_out = 0;
  int stride = 1;
  std::vector<float> weight;  // [c_out][c_in · 3], PyTorch's [c_out, c_in, 3] flattened
  std::vector<float> bias;    // [c_out]
  PackedWeights packed;       // the same for row_gemm (im2col rows · weightᵀ + bias)
};

struct SileroWeights {
  std::vector<float> stft_basis;  // [258][256]: 129 real rows, then 129 imaginary rows
  PackedWeights stft_packed;
  std::array<ConvBlockWeights, 4> conv;
  std::vector<float> w_ih;    // [512][128]
  PackedWeights w_ih_packed;  // with b_ih as its bias
  std::vector<float> w_hh_t;  // W_hhᵀ [128][512], so the recurrence is 128 row AXPYs
  std::vector<float> b_ih;    // [512]
  std::vector<float> b_hh;    // [512]
  std::vector<float> head_w;  // final_conv [128]
  float head_b = 0.0f;
};

// Parses and validates a safetensors file (names, dtypes, shapes).
SileroWeights read_silero_weights(const std::string& path);

}  // namespace hark::vad
