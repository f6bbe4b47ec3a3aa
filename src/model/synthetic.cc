#include "model/synthetic.h"

#include <algorithm>
#include <thread>
#include <vector>

#include <cmath>

#include "core/checked_span.h"

namespace hark {

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

double synthetic_unit(uint64_t name_hash, uint64_t index) {
  uint64_t z = name_hash + (index + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z = z ^ (z >> 31);
  return 2.0 * static_cast<double>(z >> 40) / 16777216.0 - 1.0;
}

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

SyntheticInit synthetic_init(const std::string& name, const Shape& shape, const HParams& hp) {
  const bool is_norm = name.find("_ln.") != std::string::npos || name.find("ln_post.") != std::string::npos ||
                       name.rfind("decoder.ln.", 0) == 0;
  if (is_norm) return ends_with(name, ".weight") ? SyntheticInit{1.0, 0.2} : SyntheticInit{0.0, 0.05};
  if (ends_with(name, ".bias")) return {0.0, 0.05};
  if (name == "decoder.token_embedding.weight" || name == "decoder.positional_embedding") return {0.0, 0.1};
  // Linear and convolution weights: uniform with std 1/sqrt(fan_in).
  int64_t fan_in = 1;
  for (size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
  return {0.0, std::sqrt(3.0 / static_cast<double>(fan_in))};
}

Tensor sinusoids(int64_t length, int64_t channels) {
  Tensor t = Tensor::empty({length, channels});
  float* p = t.data<float>();
  const int64_t half = channels / 2;
  const double increment = std::log(10000.0) / static_cast<double>(half - 1);
  for (int64_t pos = 0; pos < length; ++pos) {
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(pos) * std::exp(-increment * static_cast<double>(j));
      p[pos * channels + j] = static_cast<float>(std::sin(angle));
      p[pos * channels + half + j] = static_cast<float>(std::cos(angle));
    }
  }
  return t;
}

// fn(begin, end) over [0, n) in parallel chunks: every element depends only on its index,
// so the result is the same as a serial loop (large-v3-turbo has 809 M of them).
template <class Fn>
void for_ranges(int64_t n, Fn&& fn) {
  const int64_t threads = std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), n / (1 << 20) + 1);
  if (threads <= 1) return fn(int64_t{0}, n);
  std::vector<std::thread> pool;
  const int64_t chunk = (n + threads - 1) / threads;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { fn(t * chunk, std::min(n, (t + 1) * chunk)); });
  for (auto& th : pool) th.join();
}

// Elements [begin, end) of one tensor. Uninstrumented in the sanitizer build, where the
// per-element checks made generating the weights a visible part of every model test's
// time; the caller checks the span (core/checked_span.h).
HARK_UNINSTRUMENTED void fill_synthetic(float* p, int64_t begin, int64_t end, uint64_t name_hash,
                                        const SyntheticInit& init) {
  for (int64_t i = begin; i < end; ++i)
    p[i] = static_cast<float>(init.center + init.scale * synthetic_unit(name_hash, static_cast<uint64_t>(i)));
}

Checkpoint make_synthetic_checkpoint(const HParams& hp, DType dtype) {
  Checkpoint ckpt;
  ckpt.hparams = hp;
  ckpt.dtype = dtype;
  for (const auto& [name, shape] : expected_tensors(hp)) {
    Tensor t;
    if (name == "encoder.positional_embedding") {
      t = sinusoids(shape[0], shape[1]);
    } else {
      t = Tensor::empty(shape);
      const SyntheticInit init = synthetic_init(name, shape, hp);
      const uint64_t h = fnv1a64(name);
      float* p = t.data<float>();
      const int64_t n = t.numel();
      check_span(p, n);
      for_ranges(n, [&](int64_t begin, int64_t end) { fill_synthetic(p, begin, end, h, init); });
    }
    if (dtype != DType::F32) {
      Tensor c = Tensor::empty(shape, dtype);
      auto* dst = c.data<uint16_t>();
      const float* src = t.data<float>();
      for_ranges(t.numel(), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) dst[i] = dtype == DType::F16 ? float_to_half(src[i]) : float_to_bf16(src[i]);
      });
      t = c;
    }
    ckpt.weights.add(name, t);
  }
  return ckpt;
}

HParams hparams_for_size(const std::string& size) {
  HParams hp;
  auto set = [&](int state, int heads, int audio_layers, int text_layers, int mels, int vocab) {
    hp.n_audio_state = hp.n_text_state = state;
    hp.n_audio_head = hp.n_text_head = heads;
    hp.n_audio_layer = audio_layers;
    hp.n_text_layer = text_layers;
    hp.n_mels = mels;
    hp.n_vocab = vocab;
  };
  if (size == "tiny") set(384, 6, 4, 4, 80, 51865);
  else if (size == "tiny.en") set(384, 6, 4, 4, 80, 51864);
  else if (size == "base") set(512, 8, 6, 6, 80, 51865);
  else if (size == "small") set(768, 12, 12, 12, 80, 51865);
  else if (size == "medium") set(1024, 16, 24, 24, 80, 51865);
  else if (size == "large-v2") set(1280, 20, 32, 32, 80, 51865);
  else if (size == "large-v3") set(1280, 20, 32, 32, 128, 51866);
  else if (size == "large-v3-turbo") set(1280, 20, 32, 4, 128, 51866);
  else throw Error(ErrorCode::InvalidArgument, "[model] unknown model size '" + size + "'");
  return hp;
}

}  // namespace hark
