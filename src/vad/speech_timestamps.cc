#include "vad/speech_timestamps.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "hark/error.h"

namespace hark::vad {
namespace {

// Python's floor division (the merge rule uses `silence // 2`, which rounds towards −∞).
int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// Python's int() of a float: truncation towards zero.
int64_t py_int(double v) { return static_cast<int64_t>(v); }

[[noreturn]] void bad_option(const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, "[vad] " + what);
}

}  // namespace

void SpeechTimestampOptions::validate() const {
  if (!(threshold > 0.0 && threshold < 1.0)) bad_option("threshold must be in (0, 1), got " + std::to_string(threshold));
  if (neg_threshold && !(*neg_threshold >= 0.0 && *neg_threshold <= threshold))
    bad_option("neg_threshold must be in [0, threshold], got " + std::to_string(*neg_threshold));
  if (min_speech_duration_ms < 0) bad_option("min_speech_duration_ms must be >= 0");
  if (min_silence_duration_ms < 0) bad_option("min_silence_duration_ms must be >= 0");
  if (speech_pad_ms < 0) bad_option("speech_pad_ms must be >= 0");
  if (!(max_speech_duration_s > 0.0)) bad_option("max_speech_duration_s must be > 0 (inf: no limit)");
  if (!(min_silence_at_max_speech_ms >= 0.0)) bad_option("min_silence_at_max_speech_ms must be >= 0");
}

double SpeechTimestampOptions::effective_neg_threshold() const {
  return neg_threshold ? *neg_threshold : std::max(threshold - 0.15, 0.01);
}

SpeechSegmenter::SpeechSegmenter(const SpeechTimestampOptions& options) : options_(options) {
  options_.validate();
  const double sr = kVadSampleRate;
  neg_threshold_ = options_.effective_neg_threshold();
  min_speech_samples_ = sr * options_.min_speech_duration_ms / 1000;
  speech_pad_samples_ = sr * options_.speech_pad_ms / 1000;
  max_speech_samples_ = sr * options_.max_speech_duration_s - kChunkSamples - 2 * speech_pad_samples_;
  min_silence_samples_ = sr * options_.min_silence_duration_ms / 1000;
  min_silence_samples_at_max_speech_ = sr * options_.min_silence_at_max_speech_ms / 1000;
}

// The reference's branch for a segment that reached max_speech_duration_s: cut at a recorded
// silence if there is one, else right here.
void SpeechSegmenter::split_at_max_speech(int64_t cur_sample) {
  if (!possible_ends_.empty()) {
    auto chosen = possible_ends_.back();
    if (options_.use_max_poss_sil_at_max_speech) {
      chosen = possible_ends_.front();  // Python's max(): the first of equal maxima
      for (const auto& p : possible_ends_)
        if (p.second > chosen.second) chosen = p;
    }
    prev_end_ = chosen.first;
    speeches_.push_back({*current_start_, prev_end_});
    current_start_.reset();
    next_start_ = prev_end_ + chosen.second;
    if (next_start_ < prev_end_ + cur_sample)
      current_start_ = next_start_;
    else
      triggered_ = false;
    std::erase_if(possible_ends_, [&](const auto& p) { return !(p.first > next_start_); });
    prev_end_ = next_start_ = temp_end_ = 0;
  } else {
    speeches_.push_back({*current_start_, cur_sample});
    current_start_.reset();
    prev_end_ = next_start_ = temp_end_ = 0;
    triggered_ = false;
    possible_ends_.clear();
  }
}

void SpeechSegmenter::push(float probability) {
  const double p = probability;
  const int64_t cur_sample = kChunkSamples * chunk_index_++;

  if (p >= options_.threshold && temp_end_) {
    const int64_t silence = cur_sample - temp_end_;
    if (silence > min_silence_samples_at_max_speech_) possible_ends_.emplace_back(temp_end_, silence);
    temp_end_ = 0;
    if (next_start_ < prev_end_) next_start_ = cur_sample;
  }

  if (p >= options_.threshold && !triggered_) {
    triggered_ = true;
    current_start_ = cur_sample;
    return;
  }

  if (triggered_ && static_cast<double>(cur_sample - *current_start_) > max_speech_samples_) {
    const bool had_split_point = !possible_ends_.empty();
    split_at_max_speech(cur_sample);
    if (!had_split_point) return;  // the reference `continue`s only after an abrupt cut
  }

  if (p < neg_threshold_ && triggered_) {
    if (!temp_end_) temp_end_ = cur_sample;
    if (static_cast<double>(cur_sample - temp_end_) < min_silence_samples_) return;
    const SpeechSegment segment{*current_start_, temp_end_};
    if (static_cast<double>(segment.end - segment.start) > min_speech_samples_) speeches_.push_back(segment);
    current_start_.reset();
    prev_end_ = next_start_ = temp_end_ = 0;
    triggered_ = false;
    possible_ends_.clear();
  }
}

std::vector<SpeechSegment> SpeechSegmenter::finish(int64_t audio_samples) const {
  std::vector<SpeechSegment> speeches = speeches_;
  if (current_start_ && static_cast<double>(audio_samples - *current_start_) > min_speech_samples_)
    speeches.push_back({*current_start_, audio_samples});

  // Padding: each segment grows by speech_pad on both sides, except that two segments closer
  // than twice the pad split the gap between them.
  const double pad = speech_pad_samples_;
  const double length = static_cast<double>(audio_samples);
  for (size_t i = 0; i < speeches.size(); ++i) {
    SpeechSegment& s = speeches[i];
    if (i == 0) s.start = py_int(std::max(0.0, static_cast<double>(s.start) - pad));
    if (i + 1 < speeches.size()) {
      SpeechSegment& next = speeches[i + 1];
      const int64_t silence = next.start - s.end;
      if (static_cast<double>(silence) < 2 * pad) {
        s.end += floor_div2(silence);
        next.start = std::max<int64_t>(0, next.start - floor_div2(silence));
      } else {
        s.end = py_int(std::min(length, static_cast<double>(s.end) + pad));
        next.start = py_int(std::max(0.0, static_cast<double>(next.start) - pad));
      }
    } else {
      s.end = py_int(std::min(length, static_cast<double>(s.end) + pad));
    }
  }
  return speeches;
}

std::vector<SpeechSegment> speech_segments_from_probabilities(std::span<const float> probabilities,
                                                             int64_t audio_samples,
                                                             const SpeechTimestampOptions& options) {
  SpeechSegmenter segmenter(options);
  for (float p : probabilities) segmenter.push(p);
  return segmenter.finish(audio_samples);
}

std::vector<SpeechSegment> get_speech_timestamps(const SileroModel& model, std::span<const float> audio,
                                                 const SpeechTimestampOptions& options) {
  options.validate();
  const std::vector<float> probs = model.speech_probabilities(audio);
  return speech_segments_from_probabilities(probs, static_cast<int64_t>(audio.size()), options);
}

}  // namespace hark::vad
