// Seeded random-weight checkpoints from a formula both the C++ tests and the Python
// oracle (scripts/oracle/synthetic.py) implement bit for bit, so CI can rebuild the very
// checkpoint the oracle ran without storing it.
//
// For tensor `name` (internal naming) and flat element index i:
//   h = fnv1a64(name);  z = splitmix64(h + (i + 1) · 0x9E3779B97F4A7C15)
//   c = 2 · (z >> 40) / 2^24 − 1                      (in [−1, 1), exact in float64)
//   value = float32(center + scale · c)               (computed in float64)
// with center/scale chosen per tensor kind (synthetic_init()). The encoder's positional
// embedding is the fixed sinusoid table, as in the reference.
#pragma once

#include <cstdint>
#include <string>

#include "model/checkpoint.h"

namespace hark {

struct SyntheticInit {
  double center = 0, scale = 0;
};

SyntheticInit synthetic_init(const std::string& name, const Shape& shape, const HParams& hp);
uint64_t fnv1a64(const std::string& text);
double synthetic_unit(uint64_t name_hash, uint64_t index);  // the c above
// OpenAI's sinusoidal position table [length, channels] (float64 math, float32 result).
Tensor sinusoids(int64_t length, int64_t channels);
// A whole checkpoint for `hp` in fp32 (or converted to `dtype`).
Checkpoint make_synthetic_checkpoint(const HParams& hp, DType dtype = DType::F32);
// Official shapes by name: "tiny", "base", "small", "medium", "large-v3", "large-v3-turbo".
HParams hparams_for_size(const std::string& size);

}  // namespace hark
