#include "decode/token_decoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "decode/logit_filters.h"
#include "hark/error.h"

namespace hark {
namespace {

int argmax(std::span<const float> x) {
  return static_cast<int>(std::max_element(x.begin(), x.end()) - x.begin());
}

// Keeps candidates in first-insertion order with unique keys, like a Python dict.
struct OrderedScores {
  std::vector<std::vector<int>> keys;
  std::vector<double> scores;
  std::vector<int> sources;
  std::map<std::vector<int>, size_t> index;

  void put(std::vector<int> key, double score, int source) {
    auto it = index.find(key);
    if (it != index.end()) {
      scores[it->second] = score;
      sources[it->second] = source;
      return;
    }
    index.emplace(key, keys.size());
    keys.push_back(std::move(key));
    scores.push_back(score);
    sources.push_back(source);
  }
  // Indices by descending score; equal scores keep insertion order (Python's stable sort).
  std::vector<size_t> by_score() const {
    std::vector<size_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    return order;
  }
};

}  // namespace

GreedyDecoder::GreedyDecoder(float temperature, int eot, uint64_t seed)
    : temperature_(temperature), eot_(eot), rng_(seed) {}

int GreedyDecoder::sample(std::span<const float> logits) {
  if (temperature_ == 0) return argmax(logits);
  // Inverse-CDF sampling over softmax(logits / T), in double for a stable cumulative sum.
  const float peak = *std::max_element(logits.begin(), logits.end());
  std::vector<double> weights(logits.size());
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    weights[i] = std::exp((static_cast<double>(logits[i]) - peak) / temperature_);
    total += weights[i];
  }
  const double target = std::uniform_real_distribution<double>(0.0, total)(rng_);
  double cumulative = 0;
  int last_positive = argmax(logits);
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    cumulative += weights[i];
    last_positive = static_cast<int>(i);
    if (cumulative > target) return static_cast<int>(i);
  }
  return last_positive;
}

StepResult GreedyDecoder::update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs) {
  const size_t rows = tokens.size();
  const size_t vocab = logits.size() / rows;
  std::vector<float> logprobs;
  bool completed = true;
  for (size_t r = 0; r < rows; ++r) {
    auto row = logits.subspan(r * vocab, vocab);
    int next = sample(row);
    if (tokens[r].back() == eot_) {
      next = eot_;
    } else {
      log_softmax(row, logprobs);
      // float32 accumulation, as the reference's float32 sum tensor.
      sum_logprobs[r] = static_cast<float>(sum_logprobs[r]) + logprobs[next];
    }
    tokens[r].push_back(next);
    completed = completed && next == eot_;
  }
  return {completed, {}};
}

StepResult GreedyDecoder::update_choices(TokenRows& tokens, std::span<const TokenChoice> choices, int k,
                                         std::vector<double>& sum_logprobs) {
  if (temperature_ != 0) throw Error(ErrorCode::Internal, "[decode] sampling needs the logits, not choices");
  bool completed = true;
  for (size_t r = 0; r < tokens.size(); ++r) {
    const TokenChoice& best = choices[r * k];
    int next = best.token;
    if (tokens[r].back() == eot_)
      next = eot_;
    else
      sum_logprobs[r] = static_cast<float>(sum_logprobs[r]) + best.logprob;
    tokens[r].push_back(next);
    completed = completed && next == eot_;
  }
  return {completed, {}};
}

std::vector<Candidate> GreedyDecoder::finalize(const TokenRows& tokens, const std::vector<double>& sum_logprobs) {
  std::vector<Candidate> out;
  for (size_t r = 0; r < tokens.size(); ++r) {
    Candidate c{tokens[r], sum_logprobs[r]};
    c.tokens.push_back(eot_);  // every candidate ends with at least one EOT
    out.push_back(std::move(c));
  }
  return out;
}

BeamSearchDecoder::BeamSearchDecoder(int beam_size, int eot, std::optional<float> patience)
    : beam_size_(beam_size), eot_(eot) {
  const float p = patience && *patience != 0 ? *patience : 1.0f;
  max_candidates_ = static_cast<int>(std::nearbyint(beam_size * p));
  if (beam_size <= 0 || max_candidates_ <= 0)
    throw Error(ErrorCode::InvalidArgument, "[decode] beam_size " + std::to_string(beam_size) + " with patience " +
                                                std::to_string(p) + " keeps no candidates; use beam_size >= 1 and patience > 0");
}

StepResult BeamSearchDecoder::update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs) {
  const int rows = static_cast<int>(tokens.size());
  if (rows != beam_size_) throw Error(ErrorCode::Internal, "[decode] beam search got a row count other than beam_size");
  const size_t vocab = logits.size() / rows;
  const int k = std::min<int>(beam_size_ + 1, static_cast<int>(vocab));
  std::vector<TokenChoice> choices;
  std::vector<float> logprobs;
  std::vector<int> order(vocab);
  for (int j = 0; j < rows; ++j) {
    log_softmax(logits.subspan(j * vocab, vocab), logprobs);
    // top (beam_size + 1) by log-probability; ties resolved by the lower id.
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
      return logprobs[a] > logprobs[b] || (logprobs[a] == logprobs[b] && a < b);
    });
    for (int c = 0; c < k; ++c) choices.push_back({order[c], logprobs[order[c]]});
  }
  return update_choices(tokens, choices, k, sum_logprobs);
}

StepResult BeamSearchDecoder::update_choices(TokenRows& tokens, std::span<const TokenChoice> choices, int k,
                                             std::vector<double>& sum_logprobs) {
  const int rows = static_cast<int>(tokens.size());
  if (rows != beam_size_) throw Error(ErrorCode::Internal, "[decode] beam search got a row count other than beam_size");
  if (static_cast<int>(choices.size()) != rows * k) throw Error(ErrorCode::Internal, "[decode] beam choices size");
  OrderedScores candidates;
  for (int j = 0; j < rows; ++j) {
    for (int c = 0; c < std::min(k, beam_size_ + 1); ++c) {
      const TokenChoice& choice = choices[j * k + c];
      std::vector<int> sequence = tokens[j];
      sequence.push_back(choice.token);
      // float32 addition, as the reference adds a float32 log-prob to a float32 sum.
      const float score = static_cast<float>(sum_logprobs[j]) + choice.logprob;
      candidates.put(std::move(sequence), score, j);
    }
  }

  TokenRows next;
  std::vector<double> next_sums;
  StepResult result;
  OrderedScores newly_finished;
  for (size_t i : candidates.by_score()) {
    if (candidates.keys[i].back() == eot_) {
      newly_finished.put(candidates.keys[i], candidates.scores[i], 0);
      continue;
    }
    next.push_back(candidates.keys[i]);
    next_sums.push_back(candidates.scores[i]);
    result.source.push_back(candidates.sources[i]);
    if (static_cast<int>(next.size()) == beam_size_) break;
  }
  tokens = std::move(next);
  sum_logprobs = std::move(next_sums);

  for (size_t i : newly_finished.by_score()) {
    if (static_cast<int>(finished_.size()) >= max_candidates_) break;
    auto same = std::find_if(finished_.begin(), finished_.end(),
                             [&](const Candidate& c) { return c.tokens == newly_finished.keys[i]; });
    if (same != finished_.end())
      same->sum_logprob = newly_finished.scores[i];
    else
      finished_.push_back({newly_finished.keys[i], newly_finished.scores[i]});
  }
  result.completed = static_cast<int>(finished_.size()) >= max_candidates_;
  return result;
}

std::vector<Candidate> BeamSearchDecoder::finalize(const TokenRows& tokens, const std::vector<double>& sum_logprobs) {
  std::vector<Candidate> out = finished_;
  if (static_cast<int>(out.size()) < beam_size_) {
    // Not enough finished: add the unfinished beams, best first, closed with EOT.
    std::vector<size_t> order(tokens.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sum_logprobs[a] > sum_logprobs[b]; });
    for (size_t r : order) {
      std::vector<int> sequence = tokens[r];
      sequence.push_back(eot_);
      auto same = std::find_if(out.begin(), out.end(), [&](const Candidate& c) { return c.tokens == sequence; });
      if (same != out.end())
        same->sum_logprob = sum_logprobs[r];
      else
        out.push_back({std::move(sequence), sum_logprobs[r]});
      if (static_cast<int>(out.size()) >= beam_size_) break;
    }
  }
  return out;
}

int MaximumLikelihoodRanker::rank(std::span<const int> lengths, std::span<const double> sum_logprobs) const {
  int best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < lengths.size(); ++i) {
    double penalty = lengths[i];
    if (length_penalty_) penalty = std::pow((5.0 + lengths[i]) / 6.0, static_cast<double>(*length_penalty_));
    // An empty candidate (possible without suppress_blank) would divide by zero in the
    // reference; hark scores it by its raw log-probability instead.
    const double score = penalty > 0 ? sum_logprobs[i] / penalty : sum_logprobs[i];
    if (i == 0 || score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  return best;
}

}  // namespace hark
