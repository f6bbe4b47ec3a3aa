// SeekLoop::run_window and the word-timestamp / hallucination handling of one window.
#include <algorithm>
#include <cmath>

#include "core/text.h"
#include "hark/error.h"
#include "tokenizer/tokenizer.h"
#include "transcribe/seek_loop.h"
#include "transcribe/segmenter.h"

namespace hark {
namespace {

constexpr double kSecondsPerFrame = 0.01;

int64_t frames_at(double seconds) { return static_cast<int64_t>(std::nearbyint(seconds * kFramesPerSecond)); }

const Segment* first_with_words(std::span<const Segment> segments) {
  for (const Segment& s : segments)
    if (!s.words.empty()) return &s;
  return nullptr;
}

}  // namespace

std::vector<Segment> SeekLoop::run_window(const Tensor& mel, int segment_size, int64_t content_frames,
                                          const std::function<void()>& after_encode) {
  if (segment_size <= 0) throw Error(ErrorCode::Internal, "[transcribe] empty window");
  const double time_offset = seek_ * kSecondsPerFrame;
  const double window_end_time = (seek_ + 3000) * kSecondsPerFrame;
  std::shared_ptr<const AudioContext> audio = take_ahead(segment_size);
  if (!audio) audio = encode(mel);
  if (after_encode) after_encode();
  DecodingResult result = decode_with_fallback(audio);
  ++window_index_;

  if (options_.no_speech_threshold && result.no_speech_prob > *options_.no_speech_threshold &&
      !(options_.logprob_threshold && result.avg_logprob > *options_.logprob_threshold)) {
    seek_ += segment_size;  // silence: fast-forward past the window
    return {};
  }
  const int64_t previous_seek = seek_;
  WindowSplit split = split_window(result.tokens, ctx_.vocab.specials.timestamp_begin, time_offset, segment_size);
  std::vector<Segment> current = std::move(split.segments);
  for (Segment& s : current) {
    std::vector<int> text_tokens;
    for (int t : s.tokens)
      if (t < ctx_.vocab.specials.eot) text_tokens.push_back(t);
    if (ctx_.vocab.decode_text) s.text = ctx_.vocab.decode_text(text_tokens);
    s.seek = static_cast<int>(previous_seek);
    s.temperature = result.temperature;
    s.avg_logprob = result.avg_logprob;
    s.compression_ratio = result.compression_ratio;
    s.no_speech_prob = result.no_speech_prob;
  }
  seek_ += split.seek_advance;

  if (options_.word_timestamps) {
    bool skip_rest = false;
    add_word_timestamps(current, audio, segment_size, previous_seek, split.single_timestamp_ending, window_end_time,
                        content_frames, skip_rest);
    if (skip_rest) return {};
  }
  finish_window(current, result);
  return current;
}

void SeekLoop::add_word_timestamps(std::vector<Segment>& current, std::shared_ptr<const AudioContext> audio,
                                   int segment_size, int64_t previous_seek, bool single_timestamp_ending,
                                   double window_end_time, int64_t content_frames, bool& skip_rest) {
  const double time_offset = previous_seek * kSecondsPerFrame;
  const SpecialTokens& s = ctx_.vocab.specials;
  if (!current.empty()) {
    AlignmentRequest request;
    request.sot_sequence = {s.sot};
    if (ctx_.vocab.multilingual) {
      int lang = s.language_tokens.empty() ? s.sot + 1 : s.language_tokens.front();
      for (size_t i = 0; i < ctx_.vocab.language_codes.size(); ++i)
        if (ctx_.vocab.language_codes[i] == language_) lang = s.language_tokens[i];
      request.sot_sequence.push_back(lang);
      request.sot_sequence.push_back(options_.task == Task::Translate ? s.translate : s.transcribe);
    }
    request.no_timestamps = s.no_timestamps;
    request.eot = s.eot;
    request.num_frames = segment_size;
    for (const Segment& seg : current)
      for (int t : seg.tokens)
        if (t < s.eot) request.text_tokens.push_back(t);
    std::vector<WordTiming> alignment;
    if (!request.text_tokens.empty()) {
      std::vector<double> probs;
      Matrix matrix;
      auto align = [&] { matrix = alignment_matrix(*ctx_.model, audio, ctx_.alignment_heads, request, probs); };
      if (ctx_.access.exclusive)
        ctx_.access.exclusive(align);
      else
        align();
      std::vector<std::string> words;
      std::vector<std::vector<int>> word_tokens;
      std::vector<int> with_eot = request.text_tokens;
      with_eot.push_back(s.eot);
      if (!ctx_.split_words) throw Error(ErrorCode::InvalidArgument, "[transcribe] word timestamps need a tokenizer");
      ctx_.split_words(with_eot, language_, words, word_tokens);
      alignment = timings_from_matrix(matrix, probs, words, word_tokens);
    }
    assign_words(current, std::move(alignment), time_offset, last_speech_timestamp_,
                 {options_.prepend_punctuations, options_.append_punctuations}, s.eot);
  }

  std::optional<double> end = last_end(current);
  if (!single_timestamp_ending && end && *end > time_offset) seek_ = frames_at(*end);

  if (options_.hallucination_silence_threshold &&
      skip_hallucinations(current, previous_seek, segment_size, single_timestamp_ending, window_end_time,
                          content_frames)) {
    skip_rest = true;
    return;
  }
  if (std::optional<double> e = last_end(current)) last_speech_timestamp_ = *e;
}

bool SeekLoop::skip_hallucinations(std::vector<Segment>& current, int64_t previous_seek, int segment_size,
                                   bool single_timestamp_ending, double window_end_time, int64_t content_frames) {
  const double time_offset = previous_seek * kSecondsPerFrame;
  std::optional<double> end = last_end(current);
  const double threshold = *options_.hallucination_silence_threshold;
  const std::string punctuation = options_.prepend_punctuations + options_.append_punctuations;
  if (!single_timestamp_ending && end && *end > time_offset)
    seek_ = window_end_time - *end > threshold ? frames_at(*end) : previous_seek + segment_size;
  // A possibly hallucinated first segment after a long silence: skip the silence.
  const Segment* first = first_with_words(current);
  if (first && is_segment_anomaly(first, punctuation)) {
    const double gap = first->start - time_offset;
    if (gap > threshold) {
      seek_ = previous_seek + frames_at(gap);
      return true;
    }
  }
  // Drop a hallucination surrounded by silence or by more hallucinations, and
  // everything after it in this window.
  double hal_last_end = last_speech_timestamp_;
  for (size_t si = 0; si < current.size(); ++si) {
    const Segment& seg = current[si];
    if (seg.words.empty()) continue;
    if (is_segment_anomaly(&seg, punctuation)) {
      const Segment* next = first_with_words(std::span<const Segment>(current).subspan(si + 1));
      const double hal_next_start = next ? next->words.front().start : time_offset + segment_size * kSecondsPerFrame;
      const bool silence_before =
          seg.start - hal_last_end > threshold || seg.start < threshold || seg.start - time_offset < 2.0;
      const bool silence_after =
          hal_next_start - seg.end > threshold || is_segment_anomaly(next, punctuation) || window_end_time - seg.end < 2.0;
      if (silence_before && silence_after) {
        seek_ = frames_at(std::max(time_offset + 1, seg.start));
        if (content_frames != kUnknownLength && content_frames * kSecondsPerFrame - seg.end < threshold)
          seek_ = content_frames;
        current.erase(current.begin() + si, current.end());
        break;
      }
    }
    hal_last_end = seg.end;
  }
  return false;
}

void SeekLoop::finish_window(std::vector<Segment>& current, const DecodingResult& result) {
  for (Segment& s : current) {
    // An instantaneous or blank segment keeps its place but carries nothing.
    if (s.start == s.end || strip_whitespace(s.text).empty()) {
      s.text.clear();
      s.tokens.clear();
      s.words.clear();
    }
    s.id = static_cast<int>(segments_.size());
    segments_.push_back(s);
    all_tokens_.insert(all_tokens_.end(), s.tokens.begin(), s.tokens.end());
  }
  if (!options_.condition_on_previous_text || result.temperature > 0.5)
    prompt_reset_since_ = all_tokens_.size();  // a high temperature's text is not a good prompt
}

}  // namespace hark
