#include "dictate/capture.h"

#include <algorithm>
#include <atomic>

#include "audio/audio.h"
#include "hark/error.h"

namespace hark::dictate {

bool AudioSource::read(std::vector<float>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return ended_ || !queue_.empty(); });
  out.insert(out.end(), queue_.begin(), queue_.end());
  queue_.clear();
  return !ended_;
}

void AudioSource::rethrow_failure() {
  std::lock_guard lock(mutex_);
  if (failure_ && queue_.empty()) std::rethrow_exception(failure_);
}

void AudioSource::push(const float* samples, size_t n) {
  {
    std::lock_guard lock(mutex_);
    queue_.insert(queue_.end(), samples, samples + n);
  }
  ready_.notify_all();
}

void AudioSource::end(std::exception_ptr failure) {
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
    failure_ = failure;
  }
  ready_.notify_all();
}

namespace {

// Delivers the decoded file in 20 ms blocks on its own thread, like a sound card would.
class FileSource : public AudioSource {
 public:
  FileSource(std::string path, std::vector<float> samples, FileSourceOptions options)
      : path_(std::move(path)), samples_(std::move(samples)), options_(options) {}
  ~FileSource() override { stop(); }

  void start() override {
    thread_ = std::thread([this] { play(); });
  }
  void stop() override {
    {
      std::lock_guard lock(stop_mutex_);
      stopping_ = true;
    }
    stop_cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  std::string describe() const override {
    return "file " + path_ + (options_.realtime ? " at real-time pace" : " as fast as possible");
  }

 private:
  static constexpr size_t kBlock = 16000 / 50;

  void play() {
    const auto begin = std::chrono::steady_clock::now();
    const std::vector<float> silence(kBlock, 0.0f);
    for (size_t at = 0;; at += kBlock) {
      const bool in_file = at < samples_.size();
      if (!in_file && !options_.silence_after) break;
      if (options_.realtime && !wait_until(begin + std::chrono::microseconds(at * 1000000 / 16000))) break;
      if (!options_.realtime && stopped()) break;
      if (in_file) push(samples_.data() + at, std::min(kBlock, samples_.size() - at));
      else push(silence.data(), silence.size());
    }
    end();
  }
  // False when stop() came first.
  bool wait_until(std::chrono::steady_clock::time_point when) {
    std::unique_lock lock(stop_mutex_);
    return !stop_cv_.wait_until(lock, when, [&] { return stopping_; });
  }
  bool stopped() {
    std::lock_guard lock(stop_mutex_);
    return stopping_;
  }

  std::string path_;
  std::vector<float> samples_;
  FileSourceOptions options_;
  std::thread thread_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
};

}  // namespace

std::unique_ptr<AudioSource> open_file_source(const std::string& path, FileSourceOptions options) {
  return std::make_unique<FileSource>(path, decode_audio_file(path), options);
}

}  // namespace hark::dictate
