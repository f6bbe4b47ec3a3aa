// Audio input: any supported file or upload → 16 kHz mono float32 in [-1, 1].
// WAV goes through hark's own exact parser; every other container is decoded in-process
// by FFmpeg's libraries from a memory buffer (no temp files, no child processes).
// Every failure is a hark::Error: InvalidAudio, AudioTooShort, TooLarge or UnsupportedFormat.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hark/error.h"

namespace hark {

inline constexpr int kSampleRate = 16000;          // what the model consumes
inline constexpr double kMinAudioSeconds = 0.1;    // shorter clips are AudioTooShort

struct AudioLimits {
  double max_seconds = 4 * 3600.0;        // decoded duration limit (TooLarge beyond it)
  size_t max_bytes = size_t{1} << 30;     // encoded input size limit (TooLarge beyond it)
  double min_seconds = kMinAudioSeconds;  // AudioTooShort below it (0 turns the check off)
};

// Decodes a file (read whole, within limits.max_bytes) to 16 kHz mono float32.
std::vector<float> decode_audio_file(const std::string& path, const AudioLimits& limits = {});
// False when hark was built with -DHARK_FFMPEG=OFF: then only WAV files decode.
bool audio_has_ffmpeg();
// Decodes an in-memory upload. `name_hint` (a file name or extension) only helps FFmpeg's
// format detection and error messages; the bytes decide.
std::vector<float> decode_audio_memory(const void* data, size_t size, const AudioLimits& limits = {},
                                       std::string_view name_hint = {});

// A raw `audio/pcm;rate=N` streaming chunk: little-endian float32 mono at `rate` Hz,
// returned at 16 kHz. No minimum length; each call resamples independently (use
// StreamResampler to carry filter state across chunks).
std::vector<float> decode_pcm_f32(const void* data, size_t size, int rate);

// What `hark probe` prints.
struct ProbeInfo {
  std::string container;      // "wav", "mp3", "mov,mp4,m4a,3gp,3g2,mj2", ...
  std::string codec;          // "pcm_s16le", "mp3", "aac", ...
  int channels = 0;
  int sample_rate = 0;        // the source rate, before resampling
  double duration_s = 0;      // decoded duration (decoded_samples / 16000)
  int64_t decoded_samples = 0;  // at 16 kHz mono
};
ProbeInfo probe_audio_memory(const void* data, size_t size, const AudioLimits& limits = {},
                             std::string_view name_hint = {});
ProbeInfo probe_audio_file(const std::string& path, const AudioLimits& limits = {});

// Stateful mono resampler to 16 kHz for streams (FFmpeg's libswresample, windowed-sinc).
// At 16 kHz input it is an exact pass-through.
class StreamResampler {
 public:
  explicit StreamResampler(int input_rate);
  ~StreamResampler();
  StreamResampler(const StreamResampler&) = delete;
  StreamResampler& operator=(const StreamResampler&) = delete;

  int input_rate() const { return input_rate_; }
  // Appends the 16 kHz samples available so far for `n` more input samples to `out`.
  void feed(const float* samples, size_t n, std::vector<float>& out);
  // Appends the samples still held in the filter (call once at the end of the stream).
  void flush(std::vector<float>& out);

 private:
  struct Impl;
  int input_rate_;
  std::unique_ptr<Impl> impl_;
};

// Sample rates hark accepts at its inputs (WAV headers, streams, FFmpeg streams).
inline constexpr int kMinInputRate = 1000;
inline constexpr int kMaxInputRate = 768000;

}  // namespace hark
