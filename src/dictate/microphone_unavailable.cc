// Built instead of microphone_portaudio.cc when PortAudio's headers are missing: the
// rest of `hark dictate` (--input files, servers, in-process engines) still works.
#include "dictate/capture.h"
#include "hark/error.h"

namespace hark::dictate {
namespace {

[[noreturn]] void no_portaudio() {
  throw Error(ErrorCode::Unavailable,
              "[dictate] this hark was built without PortAudio, so it cannot record: install portaudio19-dev "
              "and rebuild, or feed a file with --input FILE");
}

}  // namespace

std::vector<InputDevice> list_input_devices() { no_portaudio(); }
std::unique_ptr<AudioSource> open_microphone(int) { no_portaudio(); }

}  // namespace hark::dictate
