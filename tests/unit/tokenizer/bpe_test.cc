#include <gtest/gtest.h>

#include <random>

#include "core/assets.h"
#include "hark/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenize.h"

namespace hark::tok {
namespace {

// Every single byte at rank = byte value, then the given merges at 256, 257, ...
RankTable table_with(std::vector<std::string> merges) {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  for (auto& m : merges) tokens.push_back(std::move(m));
  return RankTable::from_tokens(std::move(tokens));
}

std::vector<int> encode_piece(const RankTable& t, std::string_view piece) {
  std::vector<int> out;
  byte_pair_encode(t, piece, out);
  return out;
}

std::string read_all(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  std::string s;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

}  // namespace

TEST(TokenizerBpe, LowestRankMergesFirst) {
  RankTable t = table_with({"bc", "ab"});  // "bc" = 256 beats "ab" = 257
  EXPECT_EQ(encode_piece(t, "abc"), (std::vector<int>{'a', 256}));
  EXPECT_EQ(encode_piece(t, "ab"), (std::vector<int>{257}));
  EXPECT_EQ(encode_piece(t, "x"), (std::vector<int>{'x'}));
}

TEST(TokenizerBpe, EqualRanksMergeLeftmostFirst) {
  RankTable t = table_with({"aa"});
  EXPECT_EQ(encode_piece(t, "aaa"), (std::vector<int>{256, 'a'}));
  EXPECT_EQ(encode_piece(t, "aaaaa"), (std::vector<int>{256, 256, 'a'}));
}

TEST(TokenizerBpe, MergesChainIntoLongerTokens) {
  RankTable t = table_with({"aa", "aaaa", "ab"});
  EXPECT_EQ(encode_piece(t, "aaaab"), (std::vector<int>{257, 'b'}));  // aa|aa|b -> aaaa|b ("ab" never forms)
  EXPECT_EQ(encode_piece(t, "aab"), (std::vector<int>{256, 'b'}));
}

TEST(TokenizerBpe, WholePieceInTheTableIsOneToken) {
  // tiktoken looks the whole piece up before merging.
  RankTable t = table_with({"xyz"});
  EXPECT_EQ(encode_piece(t, "xyz"), (std::vector<int>{256}));
  EXPECT_EQ(t.find("xyz"), 256);
  EXPECT_EQ(t.find("xy"), RankTable::kMissing);
  EXPECT_EQ(t.bytes(256), "xyz");
}

TEST(TokenizerBpe, ParsesRankFilesAndRejectsBrokenOnes) {
  std::string good;
  for (int b = 0; b < 256; ++b) {
    static const char* b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    good += std::string{b64[b >> 2], b64[(b & 3) << 4], '=', '='} + " " + std::to_string(b) + "\n";
  }
  RankTable t = RankTable::parse(good + "YWI= 256\n", "test");  // "ab"
  EXPECT_EQ(t.size(), 257);
  EXPECT_EQ(t.find("ab"), 256);
  EXPECT_EQ(t.find(std::string(1, '\xFF')), 255);
  auto expect_format_error = [](const std::string& contents) {
    try {
      RankTable::parse(contents, "bad.tiktoken");
      ADD_FAILURE() << "accepted: " << contents.substr(contents.size() > 40 ? contents.size() - 40 : 0);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::ModelFormat);
      EXPECT_NE(std::string(e.what()).find("bad.tiktoken"), std::string::npos);
    }
  };
  expect_format_error("");
  expect_format_error(good + "YWI= 300\n");             // gap in the ranks
  expect_format_error(good + "YWI= 10\n");              // rank twice
  expect_format_error(good + "YW*= 256\n");             // not base64
  expect_format_error(good + "YWI=256\n");              // no separator
  expect_format_error(good + "YWI= x\n");               // rank not a number
  expect_format_error(good + "QQ== 256\n");             // same bytes as rank 65
  expect_format_error("YWI= 0\n");                      // single bytes missing
}

TEST(TokenizerBpe, ScanAndHeapMergesAgreeOnRealRanks) {
  RankTable ranks = RankTable::parse(read_all(asset_path("multilingual.tiktoken")), "multilingual.tiktoken");
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {"a", "b", "e", "n", "t", "s", "th", "ing", "的", "是", "ä", "ш",
                                             "1", "0", "!", "😀", "\xF0", "\x9F", "\xE2", " "};
  for (int round = 0; round < 300; ++round) {
    std::string piece;
    int len = 1 + static_cast<int>(rng() % 200);
    for (int i = 0; i < len; ++i) piece += alphabet[rng() % alphabet.size()];
    std::vector<int> scan, heap;
    byte_pair_merge_scan(ranks, piece, scan);
    byte_pair_merge_heap(ranks, piece, heap);
    ASSERT_EQ(scan, heap) << "piece #" << round;
    std::string joined;
    for (int id : heap) joined += ranks.bytes(id);
    ASSERT_EQ(joined, piece);
  }
}

}  // namespace hark::tok
