// The microphone through PortAudio's blocking read API, on a capture thread: the device
// runs at its own rate and channel count, the thread mixes to mono and resamples to
// 16 kHz with the audio library's StreamResampler.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cmath>

#include <portaudio.h>

#include "audio/audio.h"
#include "dictate/capture.h"
#include "hark/error.h"

namespace hark::dictate {
namespace {

// ALSA and JACK print their probing of absent cards straight to stderr; a one-line
// message is more useful than forty lines of "cannot find card '0'".
class QuietStderr {
 public:
  QuietStderr() : saved_(dup(STDERR_FILENO)) {
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0) {
      dup2(null, STDERR_FILENO);
      close(null);
    }
  }
  ~QuietStderr() {
    if (saved_ >= 0) {
      dup2(saved_, STDERR_FILENO);
      close(saved_);
    }
  }

 private:
  int saved_;
};

class PortAudioLibrary {
 public:
  PortAudioLibrary() {
    QuietStderr quiet;
    if (PaError e = Pa_Initialize(); e != paNoError)
      throw Error(ErrorCode::Unavailable, std::string("[dictate] cannot start PortAudio: ") + Pa_GetErrorText(e) +
                                              "; check the sound system (ALSA/PulseAudio/PipeWire), or feed a file with --input");
  }
  ~PortAudioLibrary() { Pa_Terminate(); }
  PortAudioLibrary(const PortAudioLibrary&) = delete;
  PortAudioLibrary& operator=(const PortAudioLibrary&) = delete;
};

std::string pa_error_text(PaError e) {
  std::string text = Pa_GetErrorText(e);
  if (e == paUnanticipatedHostError)
    if (const PaHostErrorInfo* host = Pa_GetLastHostErrorInfo(); host && host->errorText && *host->errorText)
      text += std::string(": ") + host->errorText;
  return text;
}

std::vector<InputDevice> input_devices() {
  std::vector<InputDevice> out;
  const PaDeviceIndex count = Pa_GetDeviceCount();
  const PaDeviceIndex default_input = Pa_GetDefaultInputDevice();
  for (PaDeviceIndex i = 0; i < count; ++i) {
    const PaDeviceInfo* info = Pa_GetDeviceInfo(i);
    if (!info || info->maxInputChannels <= 0) continue;
    const PaHostApiInfo* api = Pa_GetHostApiInfo(info->hostApi);
    out.push_back({i, info->name ? info->name : "?", api && api->name ? api->name : "?", info->maxInputChannels,
                   info->defaultSampleRate, i == default_input});
  }
  return out;
}

class Microphone : public AudioSource {
 public:
  Microphone(std::shared_ptr<PortAudioLibrary> library, const InputDevice& device)
      : library_(std::move(library)), device_(device), resampler_(static_cast<int>(std::lround(device.default_rate))) {
    PaStreamParameters in{};
    in.device = device.index;
    in.sampleFormat = paFloat32;
    in.suggestedLatency = Pa_GetDeviceInfo(device.index)->defaultLowInputLatency;
    in.channelCount = 1;
    QuietStderr quiet;
    if (Pa_IsFormatSupported(&in, nullptr, device.default_rate) != paFormatIsSupported)
      in.channelCount = std::min(device.max_channels, 2);
    channels_ = in.channelCount;
    frames_ = static_cast<unsigned long>(device.default_rate / 50);  // 20 ms reads
    if (PaError e = Pa_OpenStream(&stream_, &in, nullptr, device.default_rate, frames_, paClipOff, nullptr, nullptr);
        e != paNoError)
      throw Error(ErrorCode::Unavailable,
                  "[dictate] cannot open the microphone '" + device.name + "' (" + pa_error_text(e) +
                      "); close programs that hold it, check that your user may record (group 'audio', input "
                      "not muted), or pick another with --device-index (see --list-devices)");
  }
  ~Microphone() override {
    stop();
    if (stream_) Pa_CloseStream(stream_);
  }

  void start() override {
    if (PaError e = Pa_StartStream(stream_); e != paNoError)
      throw Error(ErrorCode::Unavailable, "[dictate] the microphone '" + device_.name + "' did not start (" +
                                              pa_error_text(e) + "); is another program using it?");
    thread_ = std::thread([this] { capture(); });
  }
  void stop() override {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::string describe() const override {
    return "microphone '" + device_.name + "' (" + device_.host_api + ", " +
           std::to_string(static_cast<int>(device_.default_rate)) + " Hz, resampled to 16 kHz)";
  }

 private:
  void capture() {
    std::vector<float> frames(frames_ * channels_), mono(frames_), resampled;
    std::exception_ptr failure;
    while (!stopping_) {
      PaError e = Pa_ReadStream(stream_, frames.data(), frames_);
      if (e != paNoError && e != paInputOverflowed) {  // an overflow drops a block; the take goes on
        failure = std::make_exception_ptr(Error(ErrorCode::Unavailable,
            "[dictate] the microphone stopped delivering audio (" + pa_error_text(e) + "); was it unplugged?"));
        break;
      }
      for (unsigned long i = 0; i < frames_; ++i) {
        float sum = 0;
        for (int c = 0; c < channels_; ++c) sum += frames[i * channels_ + c];
        mono[i] = sum / channels_;
      }
      resampled.clear();
      resampler_.feed(mono.data(), mono.size(), resampled);
      push(resampled.data(), resampled.size());
    }
    Pa_StopStream(stream_);
    resampled.clear();
    resampler_.flush(resampled);
    push(resampled.data(), resampled.size());
    end(failure);
  }

  std::shared_ptr<PortAudioLibrary> library_;
  InputDevice device_;
  StreamResampler resampler_;
  PaStream* stream_ = nullptr;
  int channels_ = 1;
  unsigned long frames_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
};

}  // namespace

std::vector<InputDevice> list_input_devices() {
  PortAudioLibrary library;
  QuietStderr quiet;
  return input_devices();
}

std::unique_ptr<AudioSource> open_microphone(int device_index) {
  auto library = std::make_shared<PortAudioLibrary>();
  std::vector<InputDevice> devices;
  {
    QuietStderr quiet;
    devices = input_devices();
  }
  if (devices.empty())
    throw Error(ErrorCode::Unavailable,
                "[dictate] no microphone found: connect one and check that your user may record (group 'audio'), "
                "or feed a file with --input FILE");
  const InputDevice* chosen = nullptr;
  for (const auto& d : devices)
    if (device_index < 0 ? d.is_default : d.index == device_index) chosen = &d;
  if (!chosen && device_index >= 0)
    throw Error(ErrorCode::InvalidArgument, "[dictate] device " + std::to_string(device_index) +
                                                " is not a microphone; --list-devices lists the input devices");
  if (!chosen)
    throw Error(ErrorCode::Unavailable,
                "[dictate] no default microphone is set; pick one with --device-index N (see --list-devices)");
  return std::make_unique<Microphone>(std::move(library), *chosen);
}

}  // namespace hark::dictate
