// One take of dictation: every 16 kHz sample recorded, kept whole so that a failed
// upload loses nothing (the take is then written to a WAV file), plus the level meter.
#pragma once

#include <condition_variable>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace hark::dictate {

// Appended by the capture loop, read by the uploader thread.
class Take {
 public:
  void append(std::span<const float> samples);
  void close();  // no more samples will come
  // Waits until `min_new` samples past `from` exist or the take is closed, then copies
  // up to `max_new` of them into `out`. Returns false once closed with nothing past `from`.
  bool wait_for(size_t from, size_t min_new, size_t max_new, std::vector<float>& out);
  std::vector<float> samples() const;  // a copy of everything so far
  size_t size() const;
  double seconds() const { return size() / 16000.0; }

 private:
  mutable std::mutex mutex_;
  std::condition_variable grew_;
  std::vector<float> samples_;
  bool closed_ = false;
};

// 16-bit PCM mono 16 kHz WAV (clipped to [-1, 1]); throws hark::Error(Io) naming the path.
void write_wav(const std::string& path, std::span<const float> samples);
// A new file name in `dir` (created when missing): take-YYYYMMDD-HHMMSS[-N].wav.
std::string new_take_path(const std::string& dir);
// Where failed takes go by default: $XDG_STATE_HOME/hark/takes, else ~/.local/state/hark/takes.
std::string default_take_dir();

// Root-mean-square level of `samples` in dBFS (a full-scale sine is -3 dB); -120 for silence.
double level_dbfs(std::span<const float> samples);
// "[#######.......]": -60 dBFS and below is empty, 0 dBFS full.
std::string level_bar(double dbfs, int width);

}  // namespace hark::dictate
