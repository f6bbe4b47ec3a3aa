// The sequential part of the Silero network: one LSTM cell step and the sigmoid head.
#pragma once

#include "vad/silero.h"
#include "vad/silero_weights.h"

namespace hark::vad {

// Elementwise activations over n floats (written so the compiler vectorises them; the
// exponential is accurate to a few ulp, far inside the 1e-4 parity tolerance).
void sigmoid_inplace(float* x, int n);
void tanh_inplace(float* x, int n);

// Advances (h, c) by one chunk given the input half of the gates (x·W_ihᵀ + b_ih, 512
// values in PyTorch's i, f, g, o order) and returns the chunk's speech probability:
// sigmoid(final_conv(ReLU(h))).
float lstm_step(const SileroWeights& w, const float* input_gates, SileroState& state);

}  // namespace hark::vad
