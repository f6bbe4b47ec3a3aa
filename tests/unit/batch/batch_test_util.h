// Shared by the batching tests: a narrow random-weight model of the real window and
// vocabulary sizes (cheap enough to decode many requests on the CPU, in the sanitizer
// build too), test audio, and transcript comparison down to the last bit.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "core/backend.h"
#include "hark/engine.h"
#include "model/synthetic.h"
#include "transcribe/engine_factory.h"

namespace hark::test {

// 30 s windows and the multilingual vocabulary (so the seek loop, the tokenizer and
// every filter run as for a real model), width 64, one encoder layer, two decoder layers.
// `text_ctx` below 448 shortens every window's decoding (random weights never say EOT,
// so a window decodes text_ctx / 2 tokens) where a test cannot set sample_len (the server).
inline std::shared_ptr<const Checkpoint> narrow_checkpoint(int text_ctx = 448) {
  static std::mutex mutex;
  static std::map<int, std::shared_ptr<const Checkpoint>> made;
  std::lock_guard<std::mutex> lock(mutex);
  auto& ckpt = made[text_ctx];
  if (!ckpt) {
    HParams hp;
    hp.n_audio_state = hp.n_text_state = 64;
    hp.n_audio_head = hp.n_text_head = 2;
    hp.n_audio_layer = 1;
    hp.n_text_layer = 2;
    hp.n_text_ctx = text_ctx;
    ckpt = std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hp));
  }
  return ckpt;
}

// select: tokens chosen next to the logits, as on the GPU fast path (greedy runs one step
// ahead; in a batch, advanced by the scheduler itself).
inline std::unique_ptr<Engine> narrow_engine(int max_batch, int threads = 2, int text_ctx = 448, bool select = false,
                                             EncoderLane lane = EncoderLane::Auto, int prompt_step_tokens = -1) {
  BackendOptions bo;
  bo.threads = threads;
  bo.select_next_to_logits = select;
  BatchOptions batch;
  batch.max_rows = max_batch;
  batch.encoder_lane = lane;
  batch.prompt_step_tokens = prompt_step_tokens;
  return make_engine(narrow_checkpoint(text_ctx), make_cpu_backend(bo), batch);
}

// Gliding harmonics with pauses and a little noise; `seed` varies pitch and noise.
inline std::vector<float> voice_like(double seconds, int seed) {
  std::vector<float> x(static_cast<size_t>(seconds * 16000));
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.01f);
  const double base = 110 + 15 * seed;
  for (size_t i = 0; i < x.size(); ++i) {
    const double t = i / 16000.0;
    const bool voiced = std::fmod(t + seed, 4.0) < 2.8;
    const double f0 = base + 30 * std::sin(t * (1.0 + 0.1 * seed));
    double v = 0;
    for (int h = 1; h <= 4; ++h) v += std::sin(2 * M_PI * f0 * h * t) / h;
    x[i] = static_cast<float>((voiced ? 0.2 * v : 0.0) + noise(rng));
  }
  return x;
}

// Every field the decoder decides, compared exactly (doubles bit for bit).
inline void expect_identical(const Transcript& got, const Transcript& want, const std::string& what) {
  EXPECT_EQ(got.text, want.text) << what;
  EXPECT_EQ(got.language, want.language) << what;
  ASSERT_EQ(got.segments.size(), want.segments.size()) << what;
  for (size_t i = 0; i < got.segments.size(); ++i) {
    const Segment &a = got.segments[i], &b = want.segments[i];
    EXPECT_EQ(a.seek, b.seek) << what << " segment " << i;
    EXPECT_EQ(a.start, b.start) << what << " segment " << i;
    EXPECT_EQ(a.end, b.end) << what << " segment " << i;
    EXPECT_EQ(a.tokens, b.tokens) << what << " segment " << i;
    EXPECT_EQ(a.temperature, b.temperature) << what << " segment " << i;
    EXPECT_EQ(a.avg_logprob, b.avg_logprob) << what << " segment " << i;
    EXPECT_EQ(a.no_speech_prob, b.no_speech_prob) << what << " segment " << i;
    ASSERT_EQ(a.words.size(), b.words.size()) << what << " segment " << i;
    for (size_t w = 0; w < a.words.size(); ++w) {
      EXPECT_EQ(a.words[w].word, b.words[w].word) << what;
      EXPECT_EQ(a.words[w].start, b.words[w].start) << what;
      EXPECT_EQ(a.words[w].end, b.words[w].end) << what;
      EXPECT_EQ(a.words[w].probability, b.words[w].probability) << what;
    }
  }
}

}  // namespace hark::test
