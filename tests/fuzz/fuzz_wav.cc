// libFuzzer target: hark's own WAV parser on arbitrary bytes. Any hark::Error is a
// correct answer; a crash, sanitizer report, timeout or huge allocation is a finding.
#include <cstddef>
#include <cstdint>

#include "audio/audio_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hark::AudioLimits limits;
  limits.max_seconds = 600;  // keeps a valid-but-long header from exhausting -rss_limit_mb
  try {
    if (hark::audio_detail::looks_like_wav(data, size)) hark::audio_detail::parse_wav(data, size, limits);
  } catch (const hark::Error&) {
  }
  return 0;
}
