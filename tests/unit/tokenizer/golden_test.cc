// Parity with the reference tokenizer (tiktoken, built as Whisper builds it) on the
// corpus that scripts/oracle/tokenizer.py writes. Skips until the golden exists.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace hark {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int>;

// HARK_TOKENIZER_GOLDEN points at another tokenizer.json (to check a fresh oracle run).
std::string golden_path() {
  if (const char* env = std::getenv("HARK_TOKENIZER_GOLDEN"); env && *env) return env;
  return test::data_path("golden/tokenizer/tokenizer.json");
}

class TokenizerGolden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string path = golden_path();
    if (!std::filesystem::exists(path)) return;
    golden_ = new json(json::parse(test::read_file(path)));
  }
  static void TearDownTestSuite() {
    delete golden_;
    golden_ = nullptr;
  }
  void SetUp() override {
    if (!golden_) GTEST_SKIP() << "no tokenizer golden at " << golden_path() << " (run scripts/oracle/tokenizer.py)";
  }
  static const json& golden() { return *golden_; }
  static json* golden_;
};

json* TokenizerGolden::golden_ = nullptr;

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string escaped(const std::string& s) { return json(s).dump(); }

void expect_corpus_ids(const Tokenizer& tok, const json& strings, const json& expected) {
  ASSERT_EQ(strings.size(), expected.size());
  int mismatches = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    std::string text = strings[i].get<std::string>();
    Ids want = expected[i].get<Ids>();
    Ids got = tok.encode(text);
    if (got != want && ++mismatches <= 10)
      ADD_FAILURE() << "string #" << i << " " << escaped(text) << "\n  want " << json(want).dump() << "\n  got  "
                    << json(got).dump();
    if (tok.decode(want) != text && ++mismatches <= 10) ADD_FAILURE() << "decode of string #" << i << " differs";
  }
  EXPECT_EQ(mismatches, 0) << "of " << strings.size() << " strings";
}

TEST_F(TokenizerGolden, CorpusIsLargeAndVaried) {
  EXPECT_GE(golden()["strings"].size(), 1000u);
  EXPECT_TRUE(golden()["roundtrip_failures"].empty());
}

TEST_F(TokenizerGolden, MultilingualIdsMatchOnEveryString) {
  expect_corpus_ids(*Tokenizer::for_vocab_size(51865), golden()["strings"], golden()["multilingual"]);
}

TEST_F(TokenizerGolden, EnglishOnlyIdsMatchOnEveryString) {
  expect_corpus_ids(*Tokenizer::for_vocab_size(51864), golden()["strings"], golden()["gpt2"]);
}

TEST_F(TokenizerGolden, InvalidUtf8IsReplacedLikePython) {
  auto tok = Tokenizer::for_vocab_size(51865);
  for (const json& c : golden()["invalid_utf8"]) {
    std::string bytes = from_hex(c["hex"].get<std::string>());
    EXPECT_EQ(tok->encode(bytes), c["ids"].get<Ids>()) << c["hex"];
    EXPECT_EQ(tok->decode(tok->encode(bytes)), c["text"].get<std::string>()) << c["hex"];
  }
}

TEST_F(TokenizerGolden, RandomIdsDecodeLikeTiktoken) {
  for (const auto& [vocab, cases] : golden()["decode_cases"].items()) {
    auto tok = Tokenizer::for_vocab_size(std::stoi(vocab));
    for (const json& c : cases) {
      Ids ids = c["ids"].get<Ids>();
      EXPECT_EQ(tok->decode_with_timestamps(ids), c["text"].get<std::string>()) << vocab << " " << json(ids).dump();
      EXPECT_EQ(tok->decode(ids), c["text_no_timestamps"].get<std::string>()) << vocab << " " << json(ids).dump();
    }
  }
}

TEST_F(TokenizerGolden, SpecialTokensAndNonSpeechSets) {
  for (int vocab : {51864, 51865, 51866}) {
    SCOPED_TRACE(vocab);
    auto tok = Tokenizer::for_vocab_size(vocab);
    const json& specials = golden()["specials"][std::to_string(vocab)];
    EXPECT_EQ(specials.size(), static_cast<size_t>(vocab - tok->eot()));
    for (const auto& [name, id] : specials.items()) {
      EXPECT_EQ(tok->special_token(name), id.get<int>()) << name;
      EXPECT_EQ(tok->token_name(id.get<int>()), name);
    }
    EXPECT_EQ(tok->non_speech_tokens(), golden()["non_speech_tokens"][std::to_string(vocab)].get<Ids>());
  }
}

TEST_F(TokenizerGolden, WordSplitsMatchTheReferenceLogic) {
  auto tok = Tokenizer::for_vocab_size(51865);
  for (const json& c : golden()["word_splits"]) {
    std::vector<std::string> words;
    std::vector<Ids> word_tokens;
    tok->split_to_word_tokens(c["tokens"].get<Ids>(), c["language"].get<std::string>(), words, word_tokens);
    EXPECT_EQ(words, c["words"].get<std::vector<std::string>>()) << c["language"];
    EXPECT_EQ(word_tokens, c["word_tokens"].get<std::vector<Ids>>()) << c["language"];
  }
}

}  // namespace
}  // namespace hark
