#include "vad/lstm_step.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace hark::vad {
namespace {

// e^x for |x| ≤ 87 by range reduction x = n·ln2 + r (|r| ≤ ln2/2) and a degree-7
// Taylor polynomial for e^r; inputs beyond the range saturate (sigmoid/tanh only need that).
inline float exp_approx(float x) {
  x = std::min(std::max(x, -87.0f), 87.0f);
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5·2²³: adding it rounds to an integer
  const float n = (x * kLog2e + kRound) - kRound;
  // ln 2 split into a part exact in float and the remainder (Cody–Waite).
  const float r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

}  // namespace

void sigmoid_inplace(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + exp_approx(-x[i]));
}

void tanh_inplace(float* x, int n) {
  // tanh(x) = 1 − 2 / (e^{2x} + 1): absolute error about 1e-7, no cancellation blow-up.
  for (int i = 0; i < n; ++i) x[i] = 1.0f - 2.0f / (exp_approx(2.0f * x[i]) + 1.0f);
}

float lstm_step(const SileroWeights& w, const float* input_gates, SileroState& state) {
  alignas(64) float gates[kGates];
  // Hidden half b_hh + W_hh·h as 128 AXPYs over the rows of W_hhᵀ (vectorises without
  // reassociating any sum), then added to the input half as PyTorch's lstm_cell does.
  std::memcpy(gates, w.b_hh.data(), sizeof(gates));
  const float* w_hh_t = w.w_hh_t.data();
  for (int k = 0; k < kHiddenSize; ++k) {
    const float hk = state.h[k];
    const float* row = w_hh_t + k * kGates;
    for (int j = 0; j < kGates; ++j) gates[j] += row[j] * hk;
  }
  for (int j = 0; j < kGates; ++j) gates[j] = input_gates[j] + gates[j];

  float* in_gate = gates;
  float* forget_gate = gates + kHiddenSize;
  float* cell_gate = gates + 2 * kHiddenSize;
  float* out_gate = gates + 3 * kHiddenSize;
  sigmoid_inplace(in_gate, 2 * kHiddenSize);  // i and f are adjacent
  tanh_inplace(cell_gate, kHiddenSize);
  sigmoid_inplace(out_gate, kHiddenSize);
  alignas(64) float tanh_c[kHiddenSize];
  for (int k = 0; k < kHiddenSize; ++k) {
    state.c[k] = forget_gate[k] * state.c[k] + in_gate[k] * cell_gate[k];
    tanh_c[k] = state.c[k];
  }
  tanh_inplace(tanh_c, kHiddenSize);
  float logit = 0.0f;
  for (int k = 0; k < kHiddenSize; ++k) {
    state.h[k] = out_gate[k] * tanh_c[k];
    logit += std::max(state.h[k], 0.0f) * w.head_w[k];
  }
  logit += w.head_b;
  sigmoid_inplace(&logit, 1);
  return logit;
}

}  // namespace hark::vad
