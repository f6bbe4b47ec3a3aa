#include "decode/token_decoder.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "decode/logit_filters.h"
#include "hark/error.h"

namespace hark {
namespace {

int argmax(std::span<const float> x) {
  return static_cast<int>(std::max_element(x.begin(), x.end()) - x.begin());
}

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
    weights[i] = exp_nonpositive((static_cast<double>(logits[i]) - peak) / temperature_);
  }
  for (double w : weights) total += w;
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

namespace {

// Row r's log-sum-exp: the filters' where they computed it, else computed here.
double row_log_sum_exp(std::span<const float> row, std::span<const double> row_lse, size_t r) {
  return r < row_lse.size() && !std::isnan(row_lse[r]) ? row_lse[r] : log_sum_exp(row);
}

}  // namespace

StepResult GreedyDecoder::update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs,
                                 std::span<const double> row_lse) {
  const size_t rows = tokens.size();
  const size_t vocab = logits.size() / rows;
  bool completed = true;
  for (size_t r = 0; r < rows; ++r) {
    auto row = logits.subspan(r * vocab, vocab);
    int next = sample(row);
    if (tokens[r].back() == eot_) {
      next = eot_;
    } else {
      // The chosen token's entry of the log-softmax (log_softmax's arithmetic, one entry).
      const float logprob = static_cast<float>(row[next] - row_log_sum_exp(row, row_lse, r));
      // float32 accumulation, as the reference's float32 sum tensor.
      sum_logprobs[r] = static_cast<float>(sum_logprobs[r]) + logprob;
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

StepResult BeamSearchDecoder::update(TokenRows& tokens, std::span<const float> logits, std::vector<double>& sum_logprobs,
                                     std::span<const double> row_lse) {
  const int rows = static_cast<int>(tokens.size());
  if (rows != beam_size_) throw Error(ErrorCode::Internal, "[decode] beam search got a row count other than beam_size");
  const size_t vocab = logits.size() / rows;
  const int k = std::min<int>(beam_size_ + 1, static_cast<int>(vocab));
  std::vector<TokenChoice> choices;
  std::vector<float> logprobs;
  for (int j = 0; j < rows; ++j) {
    const std::span<const float> row = logits.subspan(j * vocab, vocab);
    log_softmax(row, row_log_sum_exp(row, row_lse, static_cast<size_t>(j)), logprobs);
    // The top (beam_size + 1) by log-probability, ties resolved by the lower id: one pass
    // that keeps the best k in order (a token enters only if it beats the k-th, which
    // after the first few hundred tokens almost none does), not a sort of the vocabulary.
    const size_t first = choices.size();
    for (int id = 0; id < static_cast<int>(vocab); ++id) {
      const float lp = logprobs[id];
      const size_t kept = choices.size() - first;
      // Ids come in increasing order, so an equal log-probability never displaces one kept.
      if (kept == static_cast<size_t>(k) && !(lp > choices.back().logprob)) continue;
      if (kept == static_cast<size_t>(k)) choices.pop_back();
      auto at = choices.end();
      while (at != choices.begin() + first && lp > (at - 1)->logprob) --at;
      choices.insert(at, TokenChoice{id, lp});
    }
  }
  return update_choices(tokens, choices, k, sum_logprobs);
}

StepResult BeamSearchDecoder::update_choices(TokenRows& tokens, std::span<const TokenChoice> choices, int k,
                                             std::vector<double>& sum_logprobs) {
  const int rows = static_cast<int>(tokens.size());
  if (rows != beam_size_) throw Error(ErrorCode::Internal, "[decode] beam search got a row count other than beam_size");
  if (static_cast<int>(choices.size()) != rows * k) throw Error(ErrorCode::Internal, "[decode] beam choices size");
  // The reference keys its candidates by the whole sequence (row + token). Two of them are
  // the same sequence exactly when their rows hold the same tokens and they add the same
  // token, so a candidate is keyed by (the first row equal to its row, token): no copy of
  // a sequence per candidate and no map of sequences (30 copies and map inserts per beam-5
  // step), the same dictionary as the reference's, in the same insertion order.
  std::vector<int> same_as(rows);
  for (int j = 0; j < rows; ++j) {
    same_as[j] = j;
    for (int e = 0; e < j; ++e)
      if (same_as[e] == e && tokens[e] == tokens[j]) {
        same_as[j] = e;
        break;
      }
  }
  struct Entry {
    int group, token, source;
    double score;
  };
  std::vector<Entry> candidates;  // first-insertion order, unique (group, token)
  for (int j = 0; j < rows; ++j) {
    for (int c = 0; c < std::min(k, beam_size_ + 1); ++c) {
      const TokenChoice& choice = choices[j * k + c];
      // float32 addition, as the reference adds a float32 log-prob to a float32 sum.
      const float score = static_cast<float>(sum_logprobs[j]) + choice.logprob;
      auto it = std::find_if(candidates.begin(), candidates.end(),
                             [&](const Entry& e) { return e.group == same_as[j] && e.token == choice.token; });
      if (it != candidates.end())
        it->score = score, it->source = j;
      else
        candidates.push_back({same_as[j], choice.token, j, score});
    }
  }
  // Descending score; equal scores keep insertion order (Python's stable sort).
  std::vector<size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return candidates[a].score > candidates[b].score; });
  auto sequence = [&](const Entry& e) {
    std::vector<int> seq = tokens[e.group];
    seq.push_back(e.token);
    return seq;
  };

  TokenRows next;
  std::vector<double> next_sums;
  StepResult result;
  // Finished candidates met before the beams were full, as the reference collects them
  // (already in score order: a subsequence of `order`).
  std::vector<const Entry*> newly_finished;
  for (size_t i : order) {
    const Entry& e = candidates[i];
    if (e.token == eot_) {
      newly_finished.push_back(&e);
      continue;
    }
    next.push_back(sequence(e));
    next_sums.push_back(e.score);
    result.source.push_back(e.source);
    if (static_cast<int>(next.size()) == beam_size_) break;
  }

  for (const Entry* e : newly_finished) {
    if (static_cast<int>(finished_.size()) >= max_candidates_) break;
    std::vector<int> seq = sequence(*e);
    auto same = std::find_if(finished_.begin(), finished_.end(), [&](const Candidate& c) { return c.tokens == seq; });
    if (same != finished_.end())
      same->sum_logprob = e->score;
    else
      finished_.push_back({std::move(seq), e->score});
  }
  // With beam_size + 1 distinct tokens per row, at most one of them end-of-text, the beams
  // always refill, except where the filters left a row nothing at all: a selection next
  // to the logits then offers end-of-text at −∞ (token_select_rules.h), and when every
  // candidate ends, the search is over (the finished ones are what it found). Any other
  // shortfall means the choices were not distinct: a selection gone wrong.
  if (next.empty()) {
    result.completed = true;
    result.source.clear();
    return result;
  }
  if (static_cast<int>(next.size()) < beam_size_) {
    std::string seen;
    for (size_t i = 0; i < std::min<size_t>(choices.size(), 12); ++i)
      seen += (i ? " " : "") + std::to_string(choices[i].token) + ":" + std::to_string(choices[i].logprob);
    throw Error(ErrorCode::Internal, "[decode] beam search: " + std::to_string(candidates.size()) +
                                         " distinct candidates refill only " + std::to_string(next.size()) + " of " +
                                         std::to_string(beam_size_) + " beams (choices " + seen + ")");
  }
  tokens = std::move(next);
  sum_logprobs = std::move(next_sums);
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
