// Test helpers: a tiny vocabulary and an Inference whose logits are a function of each
// row's token history, so the search logic can be checked by hand.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "decode/decoding_task.h"

namespace hark::testing {

// ids: text 0..9, eot 10, sot 11, language 12 ("en") and 20 ("de"), translate 13,
// transcribe 14, sot_lm 15, sot_prev 16, no_speech 17, no_timestamps 18, timestamps
// 19.. (0.00 s, 0.02 s, ...). A vocabulary of 40 tokens.
inline SpecialTokens tiny_specials() {
  SpecialTokens s;
  s.n_vocab = 40;
  s.eot = 10;
  s.sot = 11;
  s.language_tokens = {12};
  s.translate = 13;
  s.transcribe = 14;
  s.sot_lm = 15;
  s.sot_prev = 16;
  s.no_speech = 17;
  s.no_timestamps = 18;
  s.timestamp_begin = 19;
  s.space = {3};
  return s;
}

inline DecodingVocabulary tiny_vocabulary() {
  DecodingVocabulary v;
  v.specials = tiny_specials();
  v.language_codes = {"en"};
  v.non_speech = {7, 8};
  v.multilingual = true;
  v.decode_text = [](std::span<const int> tokens) {
    std::string text;
    for (int t : tokens)
      if (t < 10) text += " w" + std::to_string(t);
    return text;
  };
  return v;
}

using LogitFn = std::function<std::vector<float>(const std::vector<int>& history)>;

class ScriptedInference : public Inference {
 public:
  explicit ScriptedInference(LogitFn fn) : fn_(std::move(fn)) {}
  void begin(int rows) override { rows_.assign(rows, {}); ++begins; }
  std::vector<float> step(std::span<const int32_t> tokens, int n_new) override {
    std::vector<float> out;
    for (size_t r = 0; r < rows_.size(); ++r) {
      for (int i = 0; i < n_new; ++i) rows_[r].push_back(tokens[r * n_new + i]);
      std::vector<float> logits = fn_(rows_[r]);
      out.insert(out.end(), logits.begin(), logits.end());
    }
    ++steps;
    return out;
  }
  void reorder(std::span<const int> source) override {
    std::vector<std::vector<int>> next;
    for (int s : source) next.push_back(rows_.at(s));
    rows_ = next;
    reorders.emplace_back(source.begin(), source.end());
  }
  std::vector<std::vector<int>> rows_;
  std::vector<std::vector<int>> reorders;
  int begins = 0, steps = 0;

 private:
  LogitFn fn_;
};

// Log-probabilities with `p` at the given tokens and a tiny floor elsewhere.
inline std::vector<float> logprobs_with(int n_vocab, std::vector<std::pair<int, double>> p) {
  std::vector<float> out(n_vocab, static_cast<float>(std::log(1e-9)));
  for (auto [token, prob] : p) out[token] = static_cast<float>(std::log(prob));
  return out;
}

}  // namespace hark::testing
