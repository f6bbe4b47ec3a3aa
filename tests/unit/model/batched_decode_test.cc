// Batched decoding equals decoding each row alone: rows with their own token histories,
// beams sharing one audio window (their cross-attention runs as one call) next to a row
// on another window, with and without the cross-attention capture used for word timing.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/synthetic.h"
#include "model/whisper_model.h"

namespace hark {
namespace {

Tensor test_mel(int n_mels, float phase) {
  Tensor mel = Tensor::empty({n_mels, 3000});
  for (int64_t i = 0; i < mel.numel(); ++i) mel.data<float>()[i] = 0.5f * std::sin(0.001f * i + phase);
  return mel;
}

double rel_l2(const float* a, const float* b, int64_t n) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < n; ++i) {
    num += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

TEST(BatchedDecode, RowsEqualSingleRowDecodes) {
  auto ckpt = std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hparams_for_size("tiny")));
  auto model = std::make_shared<WhisperModel>(ckpt, std::shared_ptr<Backend>(make_cpu_backend({2})));
  const HParams& hp = model->hparams();
  std::shared_ptr<const AudioContext> audio_a = model->prepare_audio(test_mel(hp.n_mels, 0.0f));
  std::shared_ptr<const AudioContext> audio_b = model->prepare_audio(test_mel(hp.n_mels, 1.3f));
  // Rows 0-2 are beams on window A, row 3 is on window B.
  const std::vector<std::shared_ptr<const AudioContext>> audio = {audio_a, audio_a, audio_a, audio_b};
  const std::vector<std::vector<int32_t>> prompts = {
      {50258, 50259, 50359, 50363}, {50258, 50259, 50359, 400}, {50258, 50260, 50359, 50363}, {50258, 50259, 50359, 50363}};
  const std::vector<std::vector<int32_t>> steps = {{440, 1000, 7}, {441, 13, 50257}, {17, 17, 17}, {440, 1000, 7}};

  for (bool capture_weights : {false, true}) {
    auto batch = model->new_state(audio);
    std::vector<int32_t> flat;
    for (const auto& p : prompts) flat.insert(flat.end(), p.begin(), p.end());
    model->decode(*batch, flat, 4);
    std::vector<std::unique_ptr<DecoderState>> single;
    for (size_t r = 0; r < audio.size(); ++r) {
      single.push_back(model->new_state(audio[r]));
      model->decode(*single[r], prompts[r], 4);
    }
    for (size_t step = 0; step < steps[0].size(); ++step) {
      std::vector<int32_t> tokens;
      for (const auto& s : steps) tokens.push_back(s[step]);
      CrossAttentionCapture capture;
      capture.layers = {0, hp.n_text_layer - 1};
      Tensor logits = model->decode(*batch, tokens, 1, false, capture_weights ? &capture : nullptr);
      for (size_t r = 0; r < audio.size(); ++r) {
        CrossAttentionCapture one;
        one.layers = capture.layers;
        Tensor want = model->decode(*single[r], std::span<const int32_t>(&tokens[r], 1), 1, false,
                                    capture_weights ? &one : nullptr);
        EXPECT_LT(rel_l2(logits.data<float>() + r * hp.n_vocab, want.data<float>(), hp.n_vocab), 1e-5)
            << "row " << r << " step " << step << (capture_weights ? " (capturing)" : "");
        if (capture_weights) {
          const int64_t per_row = one.weights[1].numel();
          EXPECT_LT(rel_l2(capture.weights[1].data<float>() + r * per_row, one.weights[1].data<float>(), per_row),
                    1e-5);
        }
      }
    }
  }
}

// A batch of windows through the encoder (one upload, transposed on the device) gives
// each window's features and cross K/V as encoding it alone does, at the full context and
// at a shorter one (which reads only the first frames of each mel row).
TEST(BatchedEncode, WindowsEqualSingleWindowEncodes) {
  auto ckpt = std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hparams_for_size("tiny")));
  auto model = std::make_shared<WhisperModel>(ckpt, std::shared_ptr<Backend>(make_cpu_backend({2})));
  const HParams& hp = model->hparams();
  const std::vector<Tensor> mels = {test_mel(hp.n_mels, 0.0f), test_mel(hp.n_mels, 0.7f), test_mel(hp.n_mels, 2.1f)};
  for (int audio_ctx : {0, 750}) {
    const auto batch = model->prepare_audio_batch(mels, audio_ctx);
    ASSERT_EQ(batch.size(), mels.size());
    for (size_t w = 0; w < mels.size(); ++w) {
      const auto alone = model->prepare_audio(mels[w], audio_ctx);
      ASSERT_EQ(batch[w]->features.numel(), alone->features.numel());
      EXPECT_LT(rel_l2(batch[w]->features.data<float>(), alone->features.data<float>(), alone->features.numel()), 1e-5)
          << "window " << w << ", audio_ctx " << audio_ctx;
      EXPECT_LT(rel_l2(batch[w]->cross_kv.data<float>(), alone->cross_kv.data<float>(), alone->cross_kv.numel()), 1e-5)
          << "window " << w << ", audio_ctx " << audio_ctx;
    }
  }
}

}  // namespace
}  // namespace hark
