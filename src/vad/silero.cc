#include "vad/silero.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hark/error.h"
#include "vad/lstm_step.h"
#include "vad/silero_weights.h"

namespace hark::vad {
namespace {

// Chunks per batched front-end pass (scratch about 20 KB per chunk). Measured on Zen 5:
// 96 beats 32 (weights re-streamed too often) and 256 (scratch spills out of L2).
constexpr int64_t kBlockChunks = 96;
constexpr int kPaddedSamples = kContextSamples + kChunkSamples + kContextSamples;  // 640

// Scratch for one block of chunks; sized once per run_chunks call.
struct Scratch {
  explicit Scratch(int64_t chunks)
      : frames(chunks * kFrames * kFilterLength),
        spectrum(chunks * kFrames * 2 * kFreqBins),
        act_a(chunks * kFrames * kFreqBins),
        act_b(chunks * kFrames * kFreqBins),
        cols(chunks * kFrames * kFreqBins * 3),
        gates(chunks * kGates) {}
  std::vector<float> frames, spectrum, act_a, act_b, cols, gates;
};

// The STFT framing of one chunk: the 576 model inputs (context + chunk), padded on the right
// with 64 reflected samples (ReflectionPad1d((0, 64))), cut into 4 frames of 256 at hop 128.
void frame_chunk(const float* context, const float* chunk, float* frames) {
  float padded[kPaddedSamples];
  std::memcpy(padded, context, sizeof(float) * kContextSamples);
  std::memcpy(padded + kContextSamples, chunk, sizeof(float) * kChunkSamples);
  constexpr int kLast = kContextSamples + kChunkSamples - 1;  // index of the last real sample
  for (int i = 1; i <= kContextSamples; ++i) padded[kLast + i] = padded[kLast - i];
  for (int f = 0; f < kFrames; ++f)
    std::memcpy(frames + f * kFilterLength, padded + f * kHopLength, sizeof(float) * kFilterLength);
}

// |STFT| of `n` chunks: frames [n·4][256] · basisᵀ → [n·4][258] → magnitudes [n·4][129].
void stft_magnitude(const SileroWeights& w, int64_t n, Scratch& s, float* magnitude) {
  const int64_t rows = n * kFrames;
  row_gemm(s.frames.data(), rows, kFilterLength, w.stft_packed, s.spectrum.data(), 2 * kFreqBins);
  for (int64_t r = 0; r < rows; ++r) {
    const float* re = s.spectrum.data() + r * 2 * kFreqBins;
    const float* im = re + kFreqBins;
    float* out = magnitude + r * kFreqBins;
    for (int c = 0; c < kFreqBins; ++c) out[c] = std::sqrt(re[c] * re[c] + im[c] * im[c]);
  }
}

// One SileroVadBlock on `n` chunks: conv1d (kernel 3, padding 1, zero padding inside each
// chunk) + ReLU, as im2col + GEMM. `in` is [n·t_in][c_in] (time-major within a chunk),
// `out` becomes [n·t_out][c_out].
int conv_block(const ConvBlockWeights& w, int64_t n, int t_in, const float* in, float* cols, float* out) {
  const int t_out = (t_in + 2 - 3) / w.stride + 1;
  const int width = w.c_in * 3;
  for (int64_t b = 0; b < n; ++b) {
    for (int t = 0; t < t_out; ++t) {
      float* row = cols + (b * t_out + t) * width;
      for (int k = 0; k < 3; ++k) {
        const int src_t = t * w.stride + k - 1;
        const bool inside = src_t >= 0 && src_t < t_in;
        const float* src = in + (b * t_in + src_t) * w.c_in;
        for (int c = 0; c < w.c_in; ++c) row[c * 3 + k] = inside ? src[c] : 0.0f;
      }
    }
  }
  const int64_t rows = n * t_out;
  row_gemm(cols, rows, width, w.packed, out, w.c_out);
  for (int64_t i = 0; i < rows * w.c_out; ++i) out[i] = std::max(out[i], 0.0f);
  return t_out;
}

// Runs up to kBlockChunks chunks: batched front end and input projection, then the
// sequential recurrence.
void run_block(const SileroWeights& w, const float* samples, int64_t n, SileroState& state, Scratch& s,
               float* probs) {
  for (int64_t b = 0; b < n; ++b) {
    const float* context = b == 0 ? state.context.data() : samples + b * kChunkSamples - kContextSamples;
    frame_chunk(context, samples + b * kChunkSamples, s.frames.data() + b * kFrames * kFilterLength);
  }
  std::memcpy(state.context.data(), samples + n * kChunkSamples - kContextSamples, sizeof(float) * kContextSamples);

  stft_magnitude(w, n, s, s.act_a.data());
  int t = kFrames;
  t = conv_block(w.conv[0], n, t, s.act_a.data(), s.cols.data(), s.act_b.data());
  t = conv_block(w.conv[1], n, t, s.act_b.data(), s.cols.data(), s.act_a.data());
  t = conv_block(w.conv[2], n, t, s.act_a.data(), s.cols.data(), s.act_b.data());
  t = conv_block(w.conv[3], n, t, s.act_b.data(), s.cols.data(), s.act_a.data());
  if (t != 1) throw Error(ErrorCode::Internal, "[vad] encoder produced more than one frame per chunk");

  // Input half of the LSTM gates for all chunks at once: x·W_ihᵀ + b_ih.
  row_gemm(s.act_a.data(), n, kHiddenSize, w.w_ih_packed, s.gates.data(), kGates);
  for (int64_t b = 0; b < n; ++b) probs[b] = lstm_step(w, s.gates.data() + b * kGates, state);
}

}  // namespace

void SileroModel::run_chunks(const float* samples, int64_t n_chunks, SileroState& state, float* probs) const {
  if (n_chunks < 0) throw Error(ErrorCode::InvalidArgument, "[vad] negative chunk count");
  if (n_chunks == 0) return;
  if (!samples || !probs) throw Error(ErrorCode::InvalidArgument, "[vad] null sample or probability buffer");
  Scratch scratch(std::min(n_chunks, kBlockChunks));
  for (int64_t first = 0; first < n_chunks; first += kBlockChunks) {
    const int64_t n = std::min(kBlockChunks, n_chunks - first);
    run_block(*weights_, samples + first * kChunkSamples, n, state, scratch, probs + first);
  }
}

std::vector<float> SileroModel::speech_probabilities(std::span<const float> audio) const {
  const int64_t n = static_cast<int64_t>(audio.size());
  const int64_t full = n / kChunkSamples;
  const int64_t total = (n + kChunkSamples - 1) / kChunkSamples;
  std::vector<float> probs(total);
  SileroState state;
  run_chunks(audio.data(), full, state, probs.data());
  if (total > full) {
    // get_speech_timestamps zero-pads the trailing partial chunk.
    float last[kChunkSamples] = {};
    std::memcpy(last, audio.data() + full * kChunkSamples, sizeof(float) * (n - full * kChunkSamples));
    run_chunks(last, 1, state, probs.data() + full);
  }
  return probs;
}

}  // namespace hark::vad
