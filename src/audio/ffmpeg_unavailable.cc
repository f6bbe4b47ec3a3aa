// Linked when hark is built with -DHARK_FFMPEG=OFF (e.g. for machines without Debian's
// FFmpeg libraries, such as a bare GPU host): only the exact WAV parser reads audio, and
// everything else fails with a message that names the option.
#include <string>

#include "audio/audio_internal.h"

namespace hark::audio_detail {

DecodedAudio ffmpeg_decode(const uint8_t*, size_t, const AudioLimits&, std::string_view name_hint) {
  const std::string name = name_hint.empty() ? "input" : std::string(name_hint);
  throw Error(ErrorCode::UnsupportedFormat,
              "[audio] cannot decode '" + name +
                  "': this hark was built without FFmpeg (-DHARK_FFMPEG=OFF) and reads only PCM/float WAV files; "
                  "convert it (ffmpeg -i IN -ar 16000 -ac 1 OUT.wav) or rebuild with -DHARK_FFMPEG=ON");
}

}  // namespace hark::audio_detail

namespace hark {
bool audio_has_ffmpeg() { return false; }
}  // namespace hark
