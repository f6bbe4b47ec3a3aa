// Where a take's audio comes from: the microphone (PortAudio, resampled to 16 kHz in
// process) or a file played at real-time pace as if it were the microphone (--input).
// Both deliver 16 kHz mono float32 through the same queue.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hark::dictate {

class AudioSource {
 public:
  virtual ~AudioSource() = default;
  virtual void start() = 0;  // begin delivering samples (a source runs once)
  virtual void stop() = 0;   // stop capturing; samples already captured can still be read
  // Moves what has arrived into `out`, waiting up to `timeout` when nothing has. Returns
  // false once the source has ended (stopped or end of file) and everything was read.
  bool read(std::vector<float>& out, std::chrono::milliseconds timeout);
  // Rethrows a capture failure (a device that vanished mid-take) once its samples are read.
  void rethrow_failure();
  virtual std::string describe() const = 0;

 protected:
  void push(const float* samples, size_t n);
  void end(std::exception_ptr failure = nullptr);  // no more samples will come

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<float> queue_;
  bool ended_ = false;
  std::exception_ptr failure_;
};

struct FileSourceOptions {
  bool realtime = true;        // pace at 1 s of audio per second (false: as fast as possible)
  bool silence_after = false;  // after the end, deliver silence until stop() (a live microphone)
};

// Decodes `path` (any format hark reads) up front, so a bad file fails before the take.
std::unique_ptr<AudioSource> open_file_source(const std::string& path, FileSourceOptions options);

struct InputDevice {
  int index = 0;
  std::string name, host_api;
  int max_channels = 0;
  double default_rate = 0;
  bool is_default = false;
};

// Every capture-capable device PortAudio sees; throws hark::Error(Unavailable) when this
// build has no PortAudio.
std::vector<InputDevice> list_input_devices();
// Opens the device (-1: the system default input) at its own rate and resamples to
// 16 kHz. Fails with one line that says what to do: no microphone, an unknown index, a
// device that is busy or denied.
std::unique_ptr<AudioSource> open_microphone(int device_index);

}  // namespace hark::dictate
