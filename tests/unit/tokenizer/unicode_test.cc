#include <gtest/gtest.h>

#include "tokenizer/unicode.h"

namespace hark::tok {
namespace {

std::string replaced(std::string_view bytes) { return sanitize_utf8(bytes); }
const std::string kFFFD = "\xEF\xBF\xBD";

}  // namespace

TEST(TokenizerUnicode, CharClassesMatchTheGeneralCategories) {
  EXPECT_EQ(char_class(U'a'), CharClass::Letter);
  EXPECT_EQ(char_class(U'Z'), CharClass::Letter);
  EXPECT_EQ(char_class(U'ª'), CharClass::Letter);   // Lo
  EXPECT_EQ(char_class(U'ǅ'), CharClass::Letter);   // Lt
  EXPECT_EQ(char_class(U'ʰ'), CharClass::Letter);   // Lm
  EXPECT_EQ(char_class(U'中'), CharClass::Letter);  // CJK range entry of UnicodeData
  EXPECT_EQ(char_class(U'한'), CharClass::Letter);  // Hangul range entry
  EXPECT_EQ(char_class(0x2A6DF), CharClass::Letter);
  EXPECT_EQ(char_class(U'7'), CharClass::Number);
  EXPECT_EQ(char_class(U'٣'), CharClass::Number);  // Nd
  EXPECT_EQ(char_class(U'Ⅻ'), CharClass::Number);  // Nl
  EXPECT_EQ(char_class(U'½'), CharClass::Number);  // No
  EXPECT_EQ(char_class(U'²'), CharClass::Number);
  EXPECT_EQ(char_class(U' '), CharClass::Space);
  EXPECT_EQ(char_class(0x85), CharClass::Space);
  EXPECT_EQ(char_class(0xA0), CharClass::Space);
  EXPECT_EQ(char_class(0x3000), CharClass::Space);
  EXPECT_EQ(char_class(0x2029), CharClass::Space);
  EXPECT_EQ(char_class(0x1C), CharClass::Other);  // not White_Space (Rust's \s), though Python isspace()
  EXPECT_EQ(char_class(0x200B), CharClass::Other);  // zero width space is Cf
  EXPECT_EQ(char_class(0x301), CharClass::Other);   // combining acute is Mn
  EXPECT_EQ(char_class(U'_'), CharClass::Other);
  EXPECT_EQ(char_class(U'😀'), CharClass::Other);
  EXPECT_EQ(char_class(0xFFFD), CharClass::Other);
  EXPECT_EQ(char_class(0x10FFFF), CharClass::Other);
  EXPECT_EQ(char_class(0x110000), CharClass::Other);
}

TEST(TokenizerUnicode, PythonIsspaceAddsTheInformationSeparators) {
  EXPECT_TRUE(python_isspace(0x1C));
  EXPECT_TRUE(python_isspace(0x1F));
  EXPECT_TRUE(python_isspace(U' '));
  EXPECT_TRUE(python_isspace(0x3000));
  EXPECT_FALSE(python_isspace(0x200B));
  EXPECT_FALSE(python_isspace(U'x'));
}

TEST(TokenizerUnicode, ReplacementFollowsPythonsMaximalSubparts) {
  // Expected strings are what bytes.decode("utf-8", errors="replace") gives.
  EXPECT_EQ(replaced("\xFF"), kFFFD);
  EXPECT_EQ(replaced("\xC0\xAF"), kFFFD + kFFFD);
  EXPECT_EQ(replaced("\xE2\x82"), kFFFD);
  EXPECT_EQ(replaced("\xE2\x82" "a"), kFFFD + "a");
  EXPECT_EQ(replaced("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);  // a UTF-8 encoded surrogate
  EXPECT_EQ(replaced("\xF0\x9F\x98"), kFFFD);
  EXPECT_EQ(replaced("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(replaced("abc\x80" "def"), "abc" + kFFFD + "def");
  EXPECT_EQ(replaced("\xF0\x9F\x98\x80\x80"), "\xF0\x9F\x98\x80" + kFFFD);
  EXPECT_EQ(replaced("\xE0\x80\xAF"), kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(replaced("\xF8\x88\x80\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD + kFFFD);
  EXPECT_EQ(replaced("\xF0\x9F\x98" "a\xE2"), kFFFD + "a" + kFFFD);
  EXPECT_EQ(replaced(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(TokenizerUnicode, ValidityCheck) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("plain"));
  EXPECT_TRUE(is_valid_utf8("\xEF\xBF\xBD"));  // a real U+FFFD is valid
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));
  EXPECT_FALSE(is_valid_utf8("\xF0\x9F\x98"));
  EXPECT_FALSE(is_valid_utf8("\xC1\xBF"));
}

TEST(TokenizerUnicode, Utf32RoundTrip) {
  std::string text = "aé中😀";
  std::u32string wide = utf8_to_u32(text);
  EXPECT_EQ(wide, U"aé中😀");
  EXPECT_EQ(u32_to_utf8(wide), text);
  EXPECT_EQ(utf8_to_u32("\xE2\x82"), std::u32string(1, kReplacementChar));
}

}  // namespace hark::tok
