// Whisper's log-mel front end, numerically the reference's (OpenAI whisper/audio.py and
// transformers' WhisperFeatureExtractor): reflect padding (center=True), 400-point
// periodic Hann window, hop 160, |rfft|² in double precision, Slaney mel filters from
// assets/mel_filters.npz, log10(max(x, 1e-10)), the last STFT frame dropped, clamp to
// (max − 8), then (x + 4) / 4.
#pragma once

#include <cstdint>
#include <span>

#include "core/tensor.h"

namespace hark {

class ThreadPool;

inline constexpr int kNFft = 400;
inline constexpr int kHopLength = 160;
inline constexpr int kWindowFrames = 3000;        // one 30 s model window
inline constexpr int64_t kWindowSamples = 480000;  // 30 s at 16 kHz

// The Slaney filter bank [n_mels, 201] (n_mels 80 or 128), loaded once from the assets.
const Tensor& mel_filters(int n_mels);

// Log-mel of `samples` followed by `pad_samples` zeros → f32 [n_mels, (n + pad) / 160].
// OpenAI's transcribe() pads with 30 s (the default), so every 30 s window that starts
// inside the audio is complete and its tail frames are log-mel of silence (the clamp
// value max − 8, rescaled), not raw zeros. The clamp uses the maximum over the whole
// result. `pool` parallelises over frames (null: the calling thread only).
Tensor log_mel_spectrogram(std::span<const float> samples, int n_mels, int64_t pad_samples = kWindowSamples,
                           ThreadPool* pool = nullptr);

// The same frames as raw log10 mel energies: before the (max − 8) clamp and the
// (x + 4) / 4 rescale, for callers that choose the clamp floor themselves.
Tensor log_mel_unclamped(std::span<const float> samples, int n_mels, int64_t pad_samples = kWindowSamples,
                         ThreadPool* pool = nullptr);

// Frames of real audio in a mel made from `num_samples` samples (OpenAI's content_frames).
inline int64_t mel_content_frames(int64_t num_samples) { return num_samples / kHopLength; }

// The model's input for the window starting at `frame_offset`: [n_mels, 3000], frames
// past the end of `full_mel` zero-filled (whisper.audio.pad_or_trim). With the default
// 30 s padding no window that starts before the content end needs that fill.
Tensor mel_window(const Tensor& full_mel, int64_t frame_offset);

}  // namespace hark
