// Helpers for the audio tests: WAV images built in memory, the ffmpeg CLI for fixtures,
// and signal comparisons.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace hark::test {

inline void put16(std::string& s, uint16_t v) { s.push_back(char(v & 0xFF)), s.push_back(char(v >> 8)); }
inline void put32(std::string& s, uint32_t v) { put16(s, uint16_t(v & 0xFFFF)), put16(s, uint16_t(v >> 16)); }
inline void put_chunk(std::string& s, const char* id, const std::string& body) {
  s.append(id, 4);
  put32(s, static_cast<uint32_t>(body.size()));
  s += body;
  if (body.size() & 1) s.push_back('\0');
}

// The body of a plain 'fmt ' chunk.
inline std::string fmt_body(uint16_t tag, int channels, int rate, int bits) {
  std::string f;
  int block = channels * ((bits + 7) / 8);
  put16(f, tag), put16(f, uint16_t(channels)), put32(f, uint32_t(rate)), put32(f, uint32_t(rate * block));
  put16(f, uint16_t(block)), put16(f, uint16_t(bits));
  return f;
}

// Encodes interleaved samples in [-1, 1] as `bits`-bit PCM (tag 1) or float (tag 3).
inline std::string encode_samples(const std::vector<double>& interleaved, uint16_t tag, int bits) {
  std::string d;
  for (double v : interleaved) {
    if (tag == 3 && bits == 32) {
      float f = static_cast<float>(v);
      d.append(reinterpret_cast<const char*>(&f), 4);
    } else if (tag == 3) {
      d.append(reinterpret_cast<const char*>(&v), 8);
    } else if (bits == 8) {
      d.push_back(char(std::lround(std::clamp(v * 128 + 128, 0.0, 255.0))));
    } else {
      int bytes = bits / 8;
      double scale = std::ldexp(1.0, bits - 1);
      int64_t q = std::clamp<int64_t>(std::llround(v * scale), -int64_t(scale), int64_t(scale) - 1);
      for (int b = 0; b < bytes; ++b) d.push_back(char((q >> (8 * b)) & 0xFF));
    }
  }
  return d;
}

// A complete RIFF/WAVE image: RIFF header, 'fmt ' then 'data'.
inline std::string make_wav(const std::vector<double>& interleaved, int channels, int rate, int bits,
                            uint16_t tag = 1) {
  std::string body = "WAVE";
  put_chunk(body, "fmt ", fmt_body(tag, channels, rate, bits));
  put_chunk(body, "data", encode_samples(interleaved, tag, bits));
  std::string wav = "RIFF";
  put32(wav, static_cast<uint32_t>(body.size()));
  return wav + body;
}

inline std::vector<double> sine(double freq, int rate, double seconds, double amp = 0.5, double phase = 0) {
  std::vector<double> s(static_cast<size_t>(std::llround(seconds * rate)));
  for (size_t i = 0; i < s.size(); ++i) s[i] = amp * std::sin(2 * M_PI * freq * i / rate + phase);
  return s;
}

inline bool have_ffmpeg() { return std::system("ffmpeg -hide_banner -version >/dev/null 2>&1") == 0; }

// Runs `ffmpeg -y -loglevel error <args>`; true on success.
inline bool ffmpeg(const std::string& args) {
  return std::system(("ffmpeg -nostdin -y -hide_banner -loglevel error " + args).c_str()) == 0;
}

// Pearson correlation of a[i] with b[i + lag] over their overlap.
inline double correlation(const std::vector<float>& a, const std::vector<float>& b, int lag) {
  double sa = 0, sb = 0, saa = 0, sbb = 0, sab = 0;
  size_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t j = int64_t(i) + lag;
    if (j < 0 || j >= int64_t(b.size())) continue;
    double x = a[i], y = b[size_t(j)];
    sa += x, sb += y, saa += x * x, sbb += y * y, sab += x * y, ++n;
  }
  if (n < 2) return 0;
  double cov = sab - sa * sb / n, va = saa - sa * sa / n, vb = sbb - sb * sb / n;
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

// Finds the lag of b against a on a 1 s probe from the middle of a (cheap enough under
// ASan), then returns the full-length correlation at that lag.
inline double best_correlation(const std::vector<float>& a, const std::vector<float>& b, int max_lag,
                               int* best_lag = nullptr) {
  size_t probe = std::min<size_t>(16000, a.size() / 2), start = (a.size() - probe) / 2;
  int lag_found = 0;
  double best = -2;
  for (int lag = -max_lag; lag <= max_lag; ++lag) {
    double dot = 0, nb = 0;
    for (size_t i = start; i < start + probe; ++i) {
      int64_t j = int64_t(i) + lag;
      double y = j >= 0 && j < int64_t(b.size()) ? b[size_t(j)] : 0.0;
      dot += a[i] * y, nb += y * y;
    }
    double score = nb > 0 ? dot / std::sqrt(nb) : -1;
    if (score > best) best = score, lag_found = lag;
  }
  if (best_lag) *best_lag = lag_found;
  return correlation(a, b, lag_found);
}

}  // namespace hark::test
