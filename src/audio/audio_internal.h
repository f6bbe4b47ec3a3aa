// Shared between the decoders of src/audio (not part of the module's API).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "audio/audio.h"
#include "hark/error.h"

namespace hark::audio_detail {

// One decoded input before the final length checks: mono at 16 kHz plus what was found.
struct DecodedAudio {
  std::vector<float> samples;  // 16 kHz mono
  std::string container;
  std::string codec;
  int channels = 0;
  int sample_rate = 0;
};

// The most channels either decoder accepts.
inline constexpr int kMaxChannels = 256;

// Appended to every "cannot decode" message so the user knows what would work.
inline constexpr const char* kAcceptedFormats =
    "accepted: WAV (PCM 8/16/24/32-bit, IEEE float 32/64, extensible), MP3, M4A/AAC, FLAC, "
    "Ogg Vorbis/Opus, WebM/Matroska, MP4/MOV audio track, AIFF, CAF";

// A WAV whose codec (format tag) hark's own parser does not read, e.g. ADPCM or
// mu-law: the caller hands the bytes to FFmpeg instead.
class WavCodecNotNative : public Error {
 public:
  explicit WavCodecNotNative(const std::string& message) : Error(ErrorCode::UnsupportedFormat, message) {}
};

// True for a RIFF/RF64 "WAVE" header (the only bytes that go to parse_wav).
bool looks_like_wav(const uint8_t* data, size_t size);

// The exact WAV parser: mono (channel average) at 16 kHz; resampled when the file's
// rate differs. Throws WavCodecNotNative for codecs it leaves to FFmpeg.
DecodedAudio parse_wav(const uint8_t* data, size_t size, const AudioLimits& limits);

// FFmpeg's libraries reading from memory; the first audio stream, mono, 16 kHz.
DecodedAudio ffmpeg_decode(const uint8_t* data, size_t size, const AudioLimits& limits, std::string_view name_hint);

// Throws TooLarge when `frames` at `rate` exceed limits.max_seconds (checked before
// allocating, so absurd headers cannot make hark allocate).
void check_duration_limit(uint64_t frames, int rate, const AudioLimits& limits, std::string_view what);

}  // namespace hark::audio_detail
