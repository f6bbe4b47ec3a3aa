// libFuzzer target: the FFmpeg memory-buffer path (probe, custom AVIOContext, demux,
// decode, mono mix, resampling) on arbitrary bytes, as an upload would reach it.
// FFmpeg itself is not instrumented, so coverage guides through hark's code and the
// demuxer/decoder choices; crashes inside FFmpeg still show up as findings.
#include <cstddef>
#include <cstdint>

#include "audio/audio_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  hark::AudioLimits limits;
  limits.max_seconds = 120;
  try {
    hark::audio_detail::ffmpeg_decode(data, size, limits, "fuzz");
  } catch (const hark::Error&) {
  }
  return 0;
}
