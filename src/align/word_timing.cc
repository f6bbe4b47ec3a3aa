#include "align/word_timing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "core/text.h"
#include "hark/error.h"

namespace hark {
namespace {

constexpr double kTokensPerSecond = 50.0;  // one audio position = 20 ms

// Python's `needle in haystack` for strings: a substring test (true for an empty needle).
bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

bool starts_with_space(const std::string& s) { return !s.empty() && s.front() == ' '; }
bool ends_with_space(const std::string& s) { return !s.empty() && s.back() == ' '; }

double round2(double x) { return std::nearbyint(x * 100.0) / 100.0; }

// Softmax over the kept frames, then each (head, frame) column standardised over the
// tokens, as the reference does before the median filter.
Matrix head_weights(const Tensor& captured, int head, int n_tokens, int n_ctx, int frames) {
  const int n_heads = static_cast<int>(captured.dim(1));
  const float* base = captured.data<float>() + static_cast<size_t>(head) * n_tokens * n_ctx;
  (void)n_heads;
  Matrix m{n_tokens, frames, std::vector<float>(static_cast<size_t>(n_tokens) * frames)};
  for (int t = 0; t < n_tokens; ++t) {
    const float* row = base + static_cast<size_t>(t) * n_ctx;
    // The capture is a softmax over all positions; renormalising the kept prefix equals
    // the reference's softmax over the kept frames only.
    double sum = 0;
    for (int f = 0; f < frames; ++f) sum += row[f];
    for (int f = 0; f < frames; ++f) m.at(t, f) = sum > 0 ? static_cast<float>(row[f] / sum) : 0.0f;
  }
  for (int f = 0; f < frames; ++f) {
    double mean = 0, var = 0;
    for (int t = 0; t < n_tokens; ++t) mean += m.at(t, f);
    mean /= n_tokens;
    for (int t = 0; t < n_tokens; ++t) var += (m.at(t, f) - mean) * (m.at(t, f) - mean);
    const double std = std::sqrt(var / n_tokens);
    for (int t = 0; t < n_tokens; ++t) m.at(t, f) = static_cast<float>((m.at(t, f) - mean) / std);
  }
  return m;
}

}  // namespace

Matrix alignment_matrix(WhisperModel& model, std::shared_ptr<const AudioContext> audio, const AlignmentHeads& heads,
                        const AlignmentRequest& request, std::vector<double>& text_token_probs, int median_filter_width) {
  if (heads.empty()) throw Error(ErrorCode::InvalidArgument, "[align] no alignment heads");
  std::vector<int32_t> tokens(request.sot_sequence.begin(), request.sot_sequence.end());
  tokens.push_back(request.no_timestamps);
  tokens.insert(tokens.end(), request.text_tokens.begin(), request.text_tokens.end());
  tokens.push_back(request.eot);
  const int n_tokens = static_cast<int>(tokens.size());
  const int n_ctx = static_cast<int>(audio->features.dim(0));
  const int frames = std::clamp(request.num_frames / 2, 1, n_ctx);

  CrossAttentionCapture capture;
  std::set<int> layers;
  for (auto [layer, head] : heads) layers.insert(layer);
  capture.layers.assign(layers.begin(), layers.end());
  auto state = model.new_state(audio, 1);
  Tensor logits = model.backend().to_host(model.decode(*state, tokens, n_tokens, true, &capture));

  // Probability of each text token among the text vocabulary, at the position before it.
  const int64_t n_vocab = logits.dim(-1);
  const float* lg = logits.data<float>();
  const int first = static_cast<int>(request.sot_sequence.size());
  text_token_probs.clear();
  for (size_t i = 0; i < request.text_tokens.size(); ++i) {
    const float* row = lg + (first + i) * n_vocab;
    const float peak = *std::max_element(row, row + request.eot);
    double sum = 0;
    for (int v = 0; v < request.eot; ++v) sum += std::exp(static_cast<double>(row[v]) - peak);
    const int tok = request.text_tokens[i];
    text_token_probs.push_back(tok < request.eot ? std::exp(static_cast<double>(row[tok]) - peak) / sum : 0.0);
  }

  Matrix mean{n_tokens, frames, std::vector<float>(static_cast<size_t>(n_tokens) * frames, 0.0f)};
  for (auto [layer, head] : heads) {
    const size_t slot = std::find(capture.layers.begin(), capture.layers.end(), layer) - capture.layers.begin();
    Matrix w = head_weights(capture.weights[slot], head, n_tokens, n_ctx, frames);
    median_filter_rows(w, median_filter_width);
    for (size_t i = 0; i < w.data.size(); ++i) mean.data[i] += w.data[i];
  }
  for (float& v : mean.data) v /= static_cast<float>(heads.size());
  // Rows from <|notimestamps|> (predicting the first text token) to the last text token.
  Matrix out{n_tokens - first - 1, frames, {}};
  out.data.assign(mean.data.begin() + static_cast<size_t>(first) * frames,
                  mean.data.begin() + static_cast<size_t>(n_tokens - 1) * frames);
  return out;
}

std::vector<WordTiming> timings_from_matrix(const Matrix& matrix, std::span<const double> text_token_probs,
                                            const std::vector<std::string>& words,
                                            const std::vector<std::vector<int>>& word_tokens) {
  if (word_tokens.size() <= 1 || matrix.rows == 0) return {};
  Matrix cost = matrix;
  for (float& v : cost.data) v = -v;
  std::vector<int> text_idx, time_idx;
  dtw(cost, text_idx, time_idx);

  std::vector<int> bounds = {0};
  for (size_t w = 0; w + 1 < word_tokens.size(); ++w) bounds.push_back(bounds.back() + static_cast<int>(word_tokens[w].size()));
  std::vector<double> jump_times;
  for (size_t k = 0; k < text_idx.size(); ++k)
    if (k == 0 || text_idx[k] != text_idx[k - 1]) jump_times.push_back(time_idx[k] / kTokensPerSecond);

  std::vector<WordTiming> out;
  for (size_t w = 0; w + 1 < bounds.size() && w < words.size(); ++w) {
    const int i = bounds[w], j = bounds[w + 1];
    if (j >= static_cast<int>(jump_times.size()) || j > static_cast<int>(text_token_probs.size())) break;
    double p = 0;
    for (int k = i; k < j; ++k) p += text_token_probs[k];
    out.push_back({words[w], word_tokens[w], jump_times[i], jump_times[j], j > i ? p / (j - i) : 0.0});
  }
  return out;
}

void merge_punctuations(std::vector<WordTiming>& alignment, const std::string& prepended, const std::string& appended) {
  if (alignment.size() >= 2) {
    int j = static_cast<int>(alignment.size()) - 1;
    for (int i = j - 1; i >= 0; --i) {
      WordTiming& previous = alignment[i];
      WordTiming& following = alignment[j];
      if (starts_with_space(previous.word) && contains(prepended, strip_whitespace(previous.word))) {
        following.word = previous.word + following.word;
        following.tokens.insert(following.tokens.begin(), previous.tokens.begin(), previous.tokens.end());
        previous.word.clear();
        previous.tokens.clear();
      } else {
        j = i;
      }
    }
  }
  size_t i = 0;
  for (size_t j = 1; j < alignment.size(); ++j) {
    WordTiming& previous = alignment[i];
    WordTiming& following = alignment[j];
    if (!ends_with_space(previous.word) && contains(appended, following.word)) {
      previous.word += following.word;
      previous.tokens.insert(previous.tokens.end(), following.tokens.begin(), following.tokens.end());
      following.word.clear();
      following.tokens.clear();
    } else {
      i = j;
    }
  }
}

}  // namespace hark

namespace hark {
namespace {

// The reference's "hack" for long words at sentence ends, using the median duration.
void clamp_sentence_edges(std::vector<WordTiming>& alignment, double max_duration) {
  static const std::string kSentenceEnd = ".\u3002!\uff01?\uff1f";
  for (size_t i = 1; i < alignment.size(); ++i) {
    if (alignment[i].end - alignment[i].start <= max_duration) continue;
    if (contains(kSentenceEnd, alignment[i].word))
      alignment[i].end = alignment[i].start + max_duration;
    else if (contains(kSentenceEnd, alignment[i - 1].word))
      alignment[i].start = alignment[i].end - max_duration;
  }
}

// Long first words after a pause, and segment edges that disagree with the words.
void fit_segment_edges(Segment& segment, std::vector<Word>& words, double& last_speech, double median,
                       double max_duration) {
  if (words.empty()) return;
  if (words[0].end - last_speech > median * 4 &&
      (words[0].end - words[0].start > max_duration ||
       (words.size() > 1 && words[1].end - words[0].start > max_duration * 2))) {
    if (words.size() > 1 && words[1].end - words[1].start > max_duration) {
      const double boundary = std::max(words[1].end / 2, words[1].end - max_duration);
      words[0].end = words[1].start = boundary;
    }
    words[0].start = std::max(0.0, words[0].end - max_duration);
  }
  if (segment.start < words[0].end && segment.start - 0.5 > words[0].start)
    words[0].start = std::max(0.0, std::min(words[0].end - median, segment.start));
  else
    segment.start = words[0].start;
  if (segment.end > words.back().start && segment.end + 0.5 < words.back().end)
    words.back().end = std::max(words.back().start + median, segment.end);
  else
    segment.end = words.back().end;
  last_speech = segment.end;
}

}  // namespace

void assign_words(std::vector<Segment>& segments, std::vector<WordTiming> alignment, double time_offset,
                  double last_speech_timestamp, const WordOptions& options, int eot) {
  if (segments.empty()) return;
  std::vector<double> durations;
  for (const WordTiming& w : alignment)
    if (w.end - w.start != 0) durations.push_back(w.end - w.start);
  double median = 0;
  if (!durations.empty()) {
    std::sort(durations.begin(), durations.end());
    const size_t n = durations.size();
    median = n % 2 ? durations[n / 2] : (durations[n / 2 - 1] + durations[n / 2]) / 2;
  }
  median = std::min(0.7, median);
  const double max_duration = median * 2;
  if (!durations.empty()) clamp_sentence_edges(alignment, max_duration);
  merge_punctuations(alignment, options.prepend_punctuations, options.append_punctuations);

  size_t word_index = 0;
  for (Segment& segment : segments) {
    // The segment's tokens hold timestamps too; only text tokens are matched to words.
    size_t text_tokens = 0;
    for (int t : segment.tokens) text_tokens += t < eot ? 1 : 0;
    size_t saved = 0;
    std::vector<Word> words;
    while (word_index < alignment.size() && saved < text_tokens) {
      const WordTiming& timing = alignment[word_index];
      if (!timing.word.empty())
        words.push_back({timing.word, round2(time_offset + timing.start), round2(time_offset + timing.end),
                         timing.probability});
      saved += timing.tokens.size();
      ++word_index;
    }
    fit_segment_edges(segment, words, last_speech_timestamp, median, max_duration);
    segment.words = std::move(words);
  }
}

}  // namespace hark
