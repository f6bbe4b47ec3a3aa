// Silero VAD v6.2, 16 kHz branch, ported from the TorchScript graph in silero_vad.jit:
// every 512-sample chunk is preceded by the last 64 samples of the previous chunk, padded
// on the right by 64 reflected samples, turned into a 4-frame magnitude spectrum by a
// convolution with the stored windowed-DFT basis (filter 256, hop 128), passed through
// four conv1d+ReLU blocks (strides 1, 2, 2, 1) to one 128-d feature, an LSTM cell whose
// (h, c) carries over to the next chunk, and ReLU → 1×1 conv → sigmoid.
//
// The front end and the LSTM input projection are batched over many chunks (GEMMs); only
// the hidden-to-hidden recurrence runs chunk by chunk.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace hark::vad {

inline constexpr int kVadSampleRate = 16000;
inline constexpr int kChunkSamples = 512;    // one probability per 32 ms
inline constexpr int kContextSamples = 64;   // carried from the previous chunk
inline constexpr int kHiddenSize = 128;      // LSTM state width

// Everything the network carries from one chunk to the next. A fresh (zero) state is the
// reference's reset_states().
struct SileroState {
  std::array<float, kContextSamples> context{};
  std::array<float, kHiddenSize> h{};
  std::array<float, kHiddenSize> c{};
  void reset() { *this = SileroState{}; }
};

struct SileroWeights;

// Immutable and thread-safe: any number of threads may run clips or streams on one model.
class SileroModel {
 public:
  // Reads the 16 kHz weights from a safetensors file (silero_vad_16k.safetensors:
  // stft_conv, conv1..conv4, lstm_cell, final_conv; fp32). Throws NotFound / ModelFormat.
  static SileroModel load(const std::string& path);
  // The bundled weights: asset "silero_vad_16k_jit.safetensors" ($HARK_ASSETS,
  // <exe>/../share/hark, the source tree's assets/), else tests/data/vad/ of the source tree.
  static std::string default_weights_path();
  static SileroModel load_default() { return load(default_weights_path()); }

  // Runs `n_chunks` consecutive full chunks (n_chunks · 512 samples), continuing from and
  // updating `state`, and writes one speech probability per chunk to `probs`.
  void run_chunks(const float* samples, int64_t n_chunks, SileroState& state, float* probs) const;

  // A whole clip from a fresh state: ceil(n / 512) probabilities, the last chunk zero-padded,
  // exactly the probabilities get_speech_timestamps computes.
  std::vector<float> speech_probabilities(std::span<const float> audio) const;

 private:
  explicit SileroModel(std::shared_ptr<const SileroWeights> weights) : weights_(std::move(weights)) {}
  std::shared_ptr<const SileroWeights> weights_;
};

}  // namespace hark::vad
