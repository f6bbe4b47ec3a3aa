#include "dictate/take.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "hark/error.h"

namespace hark::dictate {

void Take::append(std::span<const float> samples) {
  {
    std::lock_guard lock(mutex_);
    samples_.insert(samples_.end(), samples.begin(), samples.end());
  }
  grew_.notify_all();
}

void Take::close() {
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  grew_.notify_all();
}

bool Take::wait_for(size_t from, size_t min_new, size_t max_new, std::vector<float>& out) {
  std::unique_lock lock(mutex_);
  grew_.wait(lock, [&] { return closed_ || samples_.size() >= from + std::max<size_t>(min_new, 1); });
  if (samples_.size() <= from) return !closed_;
  const size_t n = std::min(max_new, samples_.size() - from);
  const auto begin = samples_.begin() + static_cast<std::ptrdiff_t>(from);
  out.insert(out.end(), begin, begin + static_cast<std::ptrdiff_t>(n));
  return true;
}

std::vector<float> Take::samples() const {
  std::lock_guard lock(mutex_);
  return samples_;
}

size_t Take::size() const {
  std::lock_guard lock(mutex_);
  return samples_.size();
}

void write_wav(const std::string& path, std::span<const float> samples) {
  const uint32_t data_bytes = static_cast<uint32_t>(samples.size() * 2);
  std::string out = "RIFF";
  auto u32 = [&](uint32_t v) { for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff); };
  auto u16 = [&](uint16_t v) { out += static_cast<char>(v & 0xff); out += static_cast<char>(v >> 8); };
  u32(36 + data_bytes);
  out += "WAVEfmt ";
  u32(16), u16(1), u16(1), u32(16000), u32(32000), u16(2), u16(16);
  out += "data";
  u32(data_bytes);
  out.reserve(out.size() + data_bytes);
  for (float s : samples) {
    const float clipped = std::isfinite(s) ? std::clamp(s, -1.0f, 1.0f) : 0.0f;
    u16(static_cast<uint16_t>(static_cast<int16_t>(std::lround(clipped * 32767.0f))));
  }
  std::ofstream file(path, std::ios::binary);
  file.write(out.data(), static_cast<std::streamsize>(out.size()));
  file.close();
  if (!file) throw Error(ErrorCode::Io, "[dictate] cannot write the take to " + path + "; check --save-dir");
}

std::string new_take_path(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::Io, "[dictate] cannot create " + dir + " (" + ec.message() + "); pass another --save-dir");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  std::string path = (std::filesystem::path(dir) / ("take-" + std::string(stamp) + ".wav")).string();
  for (int n = 2; std::filesystem::exists(path); ++n)
    path = (std::filesystem::path(dir) / ("take-" + std::string(stamp) + "-" + std::to_string(n) + ".wav")).string();
  return path;
}

std::string default_take_dir() {
  if (const char* state = std::getenv("XDG_STATE_HOME"); state && *state)
    return (std::filesystem::path(state) / "hark" / "takes").string();
  const char* home = std::getenv("HOME");
  return (std::filesystem::path(home && *home ? home : ".") / ".local" / "state" / "hark" / "takes").string();
}

double level_dbfs(std::span<const float> samples) {
  double energy = 0;
  for (float s : samples) energy += double(s) * s;
  if (samples.empty() || energy <= 0) return -120.0;
  return std::max(-120.0, 10.0 * std::log10(energy / samples.size()));
}

std::string level_bar(double dbfs, int width) {
  const double fraction = std::clamp((dbfs + 60.0) / 60.0, 0.0, 1.0);
  const int filled = static_cast<int>(std::lround(fraction * width));
  return "[" + std::string(filled, '#') + std::string(width - filled, '.') + "]";
}

}  // namespace hark::dictate
