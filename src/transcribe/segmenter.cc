#include "transcribe/segmenter.h"

#include <algorithm>

namespace hark {

WindowSplit split_window(std::span<const int> tokens, int timestamp_begin, double time_offset, int segment_size) {
  WindowSplit out;
  const size_t n = tokens.size();
  auto is_ts = [&](size_t i) { return tokens[i] >= timestamp_begin; };
  out.single_timestamp_ending = n >= 2 && !is_ts(n - 2) && is_ts(n - 1);

  std::vector<size_t> slices;
  for (size_t i = 0; i + 1 < n; ++i)
    if (is_ts(i) && is_ts(i + 1)) slices.push_back(i + 1);

  auto make = [&](size_t begin, size_t end, double start, double stop) {
    Segment s;
    s.start = start;
    s.end = stop;
    s.tokens.assign(tokens.begin() + begin, tokens.begin() + end);
    out.segments.push_back(std::move(s));
  };
  if (!slices.empty()) {
    if (out.single_timestamp_ending) slices.push_back(n);
    size_t last = 0;
    for (size_t current : slices) {
      const int start_pos = tokens[last] - timestamp_begin;
      const int end_pos = tokens[current - 1] - timestamp_begin;
      make(last, current, time_offset + start_pos * kTimePrecision, time_offset + end_pos * kTimePrecision);
      last = current;
    }
    out.seek_advance = out.single_timestamp_ending ? segment_size : (tokens[last - 1] - timestamp_begin) * kInputStride;
  } else {
    double duration = segment_size / static_cast<double>(kFramesPerSecond);
    int last_ts = -1;
    for (int t : tokens)
      if (t >= timestamp_begin) last_ts = t;
    // A single <|0.00|> carries no duration information.
    if (last_ts >= 0 && last_ts != timestamp_begin) duration = (last_ts - timestamp_begin) * kTimePrecision;
    make(0, n, time_offset, time_offset + duration);
    out.seek_advance = segment_size;
  }
  return out;
}

std::optional<double> last_end(std::span<const Segment> segments) {
  for (auto s = segments.rbegin(); s != segments.rend(); ++s)
    if (!s->words.empty()) return s->words.back().end;
  if (segments.empty()) return std::nullopt;
  return segments.back().end;
}

namespace {

double word_anomaly_score(const Word& word) {
  const double duration = word.end - word.start;
  double score = 0;
  if (word.probability < 0.15) score += 1.0;
  if (duration < 0.133) score += (0.133 - duration) * 15;
  if (duration > 2.0) score += duration - 2.0;
  return score;
}

}  // namespace

bool is_segment_anomaly(const Segment* segment, const std::string& punctuation) {
  if (segment == nullptr || segment->words.empty()) return false;
  double score = 0;
  int counted = 0;
  for (const Word& w : segment->words) {
    if (punctuation.find(w.word) != std::string::npos) continue;  // Python's `in` on a string
    if (counted == 8) break;
    score += word_anomaly_score(w);
    ++counted;
  }
  return score >= 3 || score + 0.01 >= counted;
}

}  // namespace hark
