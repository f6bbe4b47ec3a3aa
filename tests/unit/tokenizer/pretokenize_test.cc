#include <gtest/gtest.h>

#include "tokenizer/pretokenize.h"

namespace hark::tok {
namespace {

std::vector<std::string> pieces(std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view p : split_gpt2(text)) out.emplace_back(p);
  return out;
}

using V = std::vector<std::string>;

}  // namespace

// Expected splits are what Python's regex engine produces for the GPT-2 pattern.
TEST(TokenizerSplit, WordsTakeOneLeadingSpace) {
  EXPECT_EQ(pieces("Hello world"), (V{"Hello", " world"}));
  EXPECT_EQ(pieces(" 123abc"), (V{" 123", "abc"}));
  EXPECT_EQ(pieces(" !? x"), (V{" !?", " x"}));
  EXPECT_EQ(pieces("中文 字"), (V{"中文", " 字"}));
  EXPECT_EQ(pieces("😀😀 hi"), (V{"😀😀", " hi"}));
  EXPECT_EQ(pieces("1 2  3"), (V{"1", " 2", " ", " 3"}));
}

TEST(TokenizerSplit, WhitespaceRunsGiveTheirLastCharacterToTheNextWord) {
  EXPECT_EQ(pieces("  a"), (V{" ", " a"}));
  EXPECT_EQ(pieces("a  b"), (V{"a", " ", " b"}));
  EXPECT_EQ(pieces("a\n\nb"), (V{"a", "\n", "\n", "b"}));
  EXPECT_EQ(pieces("x\t\ty"), (V{"x", "\t", "\t", "y"}));
  EXPECT_EQ(pieces("\n a"), (V{"\n", " a"}));
  EXPECT_EQ(pieces("a \xC2\xA0" "b"), (V{"a", " ", "\xC2\xA0", "b"}));
  EXPECT_EQ(pieces("\xC2\xA0" "a"), (V{"\xC2\xA0", "a"}));
  EXPECT_EQ(pieces("\xC2\x85\xC2\x85z"), (V{"\xC2\x85", "\xC2\x85", "z"}));
}

TEST(TokenizerSplit, TrailingWhitespaceStaysWhole) {
  EXPECT_EQ(pieces("trailing   "), (V{"trailing", "   "}));
  EXPECT_EQ(pieces("a\r\n"), (V{"a", "\r\n"}));
  EXPECT_EQ(pieces("  "), (V{"  "}));
  EXPECT_EQ(pieces(" "), (V{" "}));
  EXPECT_EQ(pieces(""), V{});
}

TEST(TokenizerSplit, ContractionsAreLowerCaseAndComeFirst) {
  EXPECT_EQ(pieces("don't I'M 'sa ''s"), (V{"don", "'t", " I", "'", "M", " '", "sa", " ''", "s"}));
  EXPECT_EQ(pieces("we'll they've you're"), (V{"we", "'ll", " they", "'ve", " you", "'re"}));
  EXPECT_EQ(pieces("'"), (V{"'"}));
  EXPECT_EQ(pieces("' s"), (V{"'", " s"}));
  EXPECT_EQ(pieces("'\n"), (V{"'", "\n"}));
  EXPECT_EQ(pieces("'lll"), (V{"'ll", "l"}));
}

TEST(TokenizerSplit, CombiningMarksAndSeparatorsAreNotLettersOrSpace) {
  EXPECT_EQ(pieces("e\xCC\x81t\xC3\xA9"), (V{"e", "\xCC\x81", "t\xC3\xA9"}));
  EXPECT_EQ(pieces("\x1c a"), (V{"\x1c", " a"}));  // U+001C is not White_Space
}

TEST(TokenizerSplit, PiecesAlwaysConcatenateBackToTheInput) {
  std::string text = "  Mixed\tinput, with 12,345 numbers!!\n\n  and    more \xE2\x80\xA8 ' 's x\xE3\x80\x80 ";
  std::string joined;
  for (std::string_view p : split_gpt2(text)) {
    EXPECT_FALSE(p.empty());
    joined += p;
  }
  EXPECT_EQ(joined, text);
}

}  // namespace hark::tok
