// Front door of the audio module: size limits, WAV-or-FFmpeg dispatch, minimum length.
#include "audio/audio.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sys/stat.h>

#include "audio/audio_internal.h"

namespace hark {
namespace detail = audio_detail;

namespace audio_detail {

void check_duration_limit(uint64_t frames, int rate, const AudioLimits& limits, std::string_view what) {
  double seconds = static_cast<double>(frames) / rate;
  if (seconds > limits.max_seconds) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " input lasts %.1f s, over the limit of %g s; split it or raise the limit", seconds,
                  limits.max_seconds);
    throw Error(ErrorCode::TooLarge, "[audio] " + std::string(what) + buf);
  }
}

}  // namespace audio_detail

namespace {

void check_size(size_t size, const AudioLimits& limits, std::string_view name) {
  if (size == 0) throw Error(ErrorCode::InvalidAudio, "[audio] '" + std::string(name) + "' is empty (0 bytes)");
  if (size > limits.max_bytes)
    throw Error(ErrorCode::TooLarge, "[audio] '" + std::string(name) + "' is " + std::to_string(size) +
                                         " bytes, over the limit of " + std::to_string(limits.max_bytes) + " bytes");
}

detail::DecodedAudio decode_any(const void* data, size_t size, const AudioLimits& limits, std::string_view name) {
  std::string label = name.empty() ? "input" : std::string(name);
  check_size(size, limits, label);
  const auto* bytes = static_cast<const uint8_t*>(data);
  detail::DecodedAudio audio;
  if (detail::looks_like_wav(bytes, size)) {
    try {
      audio = detail::parse_wav(bytes, size, limits);
    } catch (const detail::WavCodecNotNative&) {
      audio = detail::ffmpeg_decode(bytes, size, limits, name);  // ADPCM, mu-law, MP3-in-WAV, ...
    }
  } else {
    audio = detail::ffmpeg_decode(bytes, size, limits, name);
  }
  double seconds = static_cast<double>(audio.samples.size()) / kSampleRate;
  if (seconds < limits.min_seconds) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.3f s of audio; at least %g s is needed", seconds, limits.min_seconds);
    throw Error(ErrorCode::AudioTooShort, "[audio] '" + label + "' decodes to " + buf);
  }
  return audio;
}

std::string read_whole_file(const std::string& path, const AudioLimits& limits) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw Error(ErrorCode::NotFound, "[audio] no such file: '" + path + "'");
  if (S_ISDIR(st.st_mode)) throw Error(ErrorCode::InvalidArgument, "[audio] '" + path + "' is a directory");
  if (S_ISREG(st.st_mode)) check_size(static_cast<size_t>(st.st_size), limits, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::Io, "[audio] cannot open '" + path + "' for reading");
  std::string bytes;
  if (S_ISREG(st.st_mode)) {
    bytes.resize(static_cast<size_t>(st.st_size));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<size_t>(in.gcount()));
  } else {  // a pipe or device: read in blocks, stopping at the size limit
    char block[1 << 16];
    while (in.read(block, sizeof block) || in.gcount() > 0) {
      bytes.append(block, static_cast<size_t>(in.gcount()));
      if (bytes.size() > limits.max_bytes) check_size(bytes.size(), limits, path);
    }
  }
  return bytes;
}

}  // namespace

std::vector<float> decode_audio_memory(const void* data, size_t size, const AudioLimits& limits,
                                       std::string_view name_hint) {
  return decode_any(data, size, limits, name_hint).samples;
}

std::vector<float> decode_audio_file(const std::string& path, const AudioLimits& limits) {
  std::string bytes = read_whole_file(path, limits);
  return decode_any(bytes.data(), bytes.size(), limits, path).samples;
}

ProbeInfo probe_audio_memory(const void* data, size_t size, const AudioLimits& limits, std::string_view name_hint) {
  detail::DecodedAudio audio = decode_any(data, size, limits, name_hint);
  ProbeInfo info;
  info.container = audio.container;
  info.codec = audio.codec;
  info.channels = audio.channels;
  info.sample_rate = audio.sample_rate;
  info.decoded_samples = static_cast<int64_t>(audio.samples.size());
  info.duration_s = static_cast<double>(audio.samples.size()) / kSampleRate;
  return info;
}

ProbeInfo probe_audio_file(const std::string& path, const AudioLimits& limits) {
  std::string bytes = read_whole_file(path, limits);
  return probe_audio_memory(bytes.data(), bytes.size(), limits, path);
}

std::vector<float> decode_pcm_f32(const void* data, size_t size, int rate) {
  if (size % 4 != 0)
    throw Error(ErrorCode::InvalidAudio, "[audio] raw PCM chunk of " + std::to_string(size) +
                                             " bytes is not a whole number of float32 samples; send "
                                             "little-endian float32 mono (audio/pcm;rate=N)");
  if (rate < kMinInputRate || rate > kMaxInputRate)
    throw Error(ErrorCode::InvalidAudio, "[audio] raw PCM rate " + std::to_string(rate) + " Hz is out of range (" +
                                             std::to_string(kMinInputRate) + " to " + std::to_string(kMaxInputRate) +
                                             " Hz)");
  std::vector<float> in(size / 4);
  if (size) std::memcpy(in.data(), data, size);  // x86/ARM hosts are little-endian, as the wire format
  for (size_t i = 0; i < in.size(); ++i)
    if (!std::isfinite(in[i]))
      throw Error(ErrorCode::InvalidAudio, "[audio] raw PCM sample " + std::to_string(i) + " is NaN or infinite");
  if (rate == kSampleRate) return in;
  std::vector<float> out;
  StreamResampler resampler(rate);
  resampler.feed(in.data(), in.size(), out);
  resampler.flush(out);
  return out;
}

}  // namespace hark
