#include "vad/lstm_step.h"

#include "core/cpu/vector_math.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace hark::vad {
void sigmoid_inplace(float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = 1.0f / (1.0f + fast_exp(-x[i]));
}

void tanh_inplace(float* x, int n) {
  // tanh(x) = 1 − 2 / (e^{2x} + 1): absolute error about 1e-7, no cancellation blow-up.
  for (int i = 0; i < n; ++i) x[i] = 1.0f - 2.0f / (fast_exp(2.0f * x[i]) + 1.0f);
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
