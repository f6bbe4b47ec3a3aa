#include <gtest/gtest.h>

#include "core/assets.h"
#include "hark/error.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace hark {
namespace {

using Ids = std::vector<int>;

template <typename F>
void expect_error(ErrorCode code, F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error thrown (expected one mentioning '" << needle << "')";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

struct Layout {
  int n_vocab, eot, translate, transcribe, sot_lm, sot_prev, no_speech, no_timestamps, timestamp_begin, languages;
};

}  // namespace

TEST(Tokenizer, MultilingualKnownIds) {
  auto tok = Tokenizer::for_vocab_size(51865);
  EXPECT_EQ(tok->eot(), 50257);
  EXPECT_EQ(tok->sot(), 50258);
  EXPECT_EQ(tok->encode(" And so my fellow Americans, ask not"), (Ids{400, 370, 452, 7177, 6280, 11, 1029, 406}));
  EXPECT_EQ(tok->decode(Ids{400, 370, 452, 7177, 6280, 11, 1029, 406}), " And so my fellow Americans, ask not");
}

TEST(Tokenizer, EnglishOnlyUsesGpt2Ranks) {
  auto tok = Tokenizer::for_vocab_size(51864);
  // GPT-2's well-known ids: "Hello" 15496, "," 11, " world" 995, "!" 0.
  EXPECT_EQ(tok->encode("Hello, world! How are you today?"), (Ids{15496, 11, 995, 0, 1374, 389, 345, 1909, 30}));
  EXPECT_FALSE(tok->multilingual());
}

TEST(Tokenizer, SpecialTokenLayoutForEachVocabularySize) {
  // The ids published in the official checkpoints' generation configs.
  for (const Layout& l : {Layout{51864, 50256, 50357, 50358, 50359, 50360, 50361, 50362, 50363, 99},
                          Layout{51865, 50257, 50358, 50359, 50360, 50361, 50362, 50363, 50364, 99},
                          Layout{51866, 50257, 50359, 50360, 50361, 50362, 50363, 50364, 50365, 100}}) {
    SCOPED_TRACE(l.n_vocab);
    auto tok = Tokenizer::for_vocab_size(l.n_vocab);
    EXPECT_EQ(tok->n_vocab(), l.n_vocab);
    EXPECT_EQ(tok->eot(), l.eot);
    EXPECT_EQ(tok->sot(), l.eot + 1);
    EXPECT_EQ(tok->first_language_token(), l.eot + 2);
    EXPECT_EQ(tok->translate(), l.translate);
    EXPECT_EQ(tok->transcribe(), l.transcribe);
    EXPECT_EQ(tok->sot_lm(), l.sot_lm);
    EXPECT_EQ(tok->sot_prev(), l.sot_prev);
    EXPECT_EQ(tok->no_speech(), l.no_speech);
    EXPECT_EQ(tok->no_timestamps(), l.no_timestamps);
    EXPECT_EQ(tok->timestamp_begin(), l.timestamp_begin);
    EXPECT_EQ(tok->num_languages(), l.languages);
    EXPECT_EQ(tok->timestamp_begin() + 1500, l.n_vocab - 1);
    EXPECT_EQ(tok->token_name(l.n_vocab - 1), "<|30.00|>");
    EXPECT_EQ(tok->token_name(tok->timestamp_begin() + 54), "<|1.08|>");
    EXPECT_EQ(tok->token_name(tok->eot()), "<|endoftext|>");
    EXPECT_EQ(tok->token_name(tok->sot()), "<|startoftranscript|>");
    EXPECT_EQ(tok->token_name(tok->first_language_token()), "<|en|>");
    EXPECT_EQ(tok->token_name(tok->no_timestamps()), "<|notimestamps|>");
    EXPECT_EQ(tok->special_token("<|nospeech|>"), l.no_speech);
    EXPECT_EQ(tok->special_token("<|29.98|>"), l.n_vocab - 2);
    expect_error(ErrorCode::InvalidArgument, [&] { tok->special_token("<|30.02|>"); }, "<|30.02|>");
  }
  EXPECT_EQ(Tokenizer::for_vocab_size(51866)->language_token("yue"), 50358);
  EXPECT_EQ(Tokenizer::for_vocab_size(51865)->special_token("<|su|>"), 50357);
}

TEST(Tokenizer, RejectsUnknownVocabularySizesAndRankFiles) {
  expect_error(ErrorCode::InvalidArgument, [] { Tokenizer::for_vocab_size(50000); }, "50000");
  expect_error(ErrorCode::ModelFormat, [] { Tokenizer::from_file(asset_path("gpt2.tiktoken"), 51866); },
               "gpt2.tiktoken");
  expect_error(ErrorCode::NotFound, [] { Tokenizer::from_file("/nonexistent/x.tiktoken", 51865); },
               "/nonexistent/x.tiktoken");
}

TEST(Tokenizer, BrokenRankFilesAreClearErrors) {
  std::string dir = test::temp_dir("tokenizer_ranks");
  auto write = [&](const std::string& name, const std::string& contents) {
    std::string path = dir + "/" + name;
    FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(contents.data(), 1, contents.size(), f);
    std::fclose(f);
    return path;
  };
  std::string empty = write("empty.tiktoken", "");
  try {
    Tokenizer::from_file(empty, 51865);
    ADD_FAILURE() << "empty rank file accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty.tiktoken"), std::string::npos) << e.what();
  }
  expect_error(ErrorCode::ModelFormat, [&] { Tokenizer::from_file(write("junk.tiktoken", "hello world\n"), 51865); },
               "junk.tiktoken");
}

TEST(Tokenizer, LanguagesInWhisperOrder) {
  const auto& langs = whisper_languages();
  ASSERT_EQ(langs.size(), 100u);
  EXPECT_EQ(langs[0].code, "en");
  EXPECT_EQ(langs[1].code, "zh");
  EXPECT_EQ(langs[98].code, "su");
  EXPECT_EQ(langs[99].code, "yue");
  EXPECT_EQ(langs[99].name, "cantonese");
  EXPECT_EQ(langs[80].name, "haitian creole");

  auto tok = Tokenizer::for_vocab_size(51865);
  EXPECT_EQ(tok->language_token("en"), 50259);
  EXPECT_EQ(tok->language_token("de"), 50261);
  EXPECT_EQ(tok->language_token("German"), 50261);
  EXPECT_EQ(tok->language_token("castilian"), tok->language_token("es"));
  EXPECT_EQ(tok->language_token("mandarin"), tok->language_token("zh"));
  EXPECT_EQ(tok->language_token("haitian creole"), tok->language_token("ht"));
  EXPECT_EQ(tok->language_code(50261), "de");
  EXPECT_EQ(tok->language_code(tok->sot()), "");
  EXPECT_EQ(tok->language_code(tok->translate()), "");
  for (size_t i = 0; i < 99; ++i) {
    EXPECT_EQ(tok->language_token(langs[i].code), tok->first_language_token() + static_cast<int>(i));
    EXPECT_EQ(tok->language_token(langs[i].name), tok->first_language_token() + static_cast<int>(i));
    EXPECT_EQ(tok->token_name(tok->first_language_token() + static_cast<int>(i)), "<|" + langs[i].code + "|>");
  }
  Ids tokens = tok->language_tokens();
  ASSERT_EQ(tokens.size(), 99u);
  EXPECT_EQ(tokens.front(), 50259);
  EXPECT_EQ(tokens.back(), 50357);
  EXPECT_EQ(Tokenizer::for_vocab_size(51866)->language_tokens().size(), 100u);
  expect_error(ErrorCode::InvalidArgument, [&] { tok->language_token("klingon"); }, "klingon");
  expect_error(ErrorCode::InvalidArgument, [&] { tok->language_token(""); }, "unknown language");
  expect_error(ErrorCode::InvalidArgument, [&] { tok->language_token("yue"); }, "51865");
}

TEST(Tokenizer, SotSequence) {
  auto multi = Tokenizer::for_vocab_size(51865);
  EXPECT_EQ(multi->sot_sequence("en", false), (Ids{50258, 50259, 50359}));
  EXPECT_EQ(multi->sot_sequence("", false), (Ids{50258, 50259, 50359}));
  EXPECT_EQ(multi->sot_sequence("french", true), (Ids{50258, 50265, 50358}));
  EXPECT_EQ(Tokenizer::for_vocab_size(51866)->sot_sequence("yue", false), (Ids{50258, 50358, 50360}));
  EXPECT_EQ(Tokenizer::for_vocab_size(51864)->sot_sequence("en", false), (Ids{50257}));
  expect_error(ErrorCode::InvalidArgument, [&] { multi->sot_sequence("xx", false); }, "xx");
}

TEST(Tokenizer, NonSpeechTokensMatchThePublishedSuppressLists) {
  // Whisper's computed set; the official generation configs list the same ids (plus specials).
  Ids multilingual = {1,     2,     7,     8,     9,     10,    14,    25,    26,    27,    28,    29,    31,    58,
                      59,    60,    61,    62,    63,    90,    91,    92,    93,    359,   503,   522,   542,   873,
                      893,   902,   918,   922,   931,   1350,  1853,  1982,  2460,  2627,  3246,  3253,  3268,  3536,
                      3846,  3961,  4183,  4667,  6585,  6647,  7273,  9061,  9383,  10428, 10929, 11938, 12033, 12331,
                      12562, 13793, 14157, 14635, 15265, 15618, 16553, 16604, 18362, 18956, 20075, 21675, 22520, 26130,
                      26161, 26435, 28279, 29464, 31650, 32302, 32470, 36865, 42863, 47425, 49870, 50254};
  Ids english = {1,     2,     7,     8,     9,     10,    14,    25,    26,    27,    28,    29,    31,    58,
                 59,    60,    61,    62,    63,    90,    91,    92,    93,    357,   366,   438,   532,   685,
                 705,   796,   930,   1058,  1220,  1267,  1279,  1303,  1343,  1377,  1391,  1635,  1782,  1875,
                 2162,  2361,  2488,  3467,  4008,  4211,  4600,  4808,  5299,  5855,  6329,  7203,  9609,  9959,
                 10563, 10786, 11420, 11709, 11907, 13163, 13697, 13700, 14808, 15306, 16410, 16791, 17992, 19203,
                 19510, 20724, 22305, 22935, 27007, 30109, 30420, 33409, 34949, 40283, 40493, 40549, 47282, 49146};
  EXPECT_EQ(Tokenizer::for_vocab_size(51865)->non_speech_tokens(), multilingual);
  EXPECT_EQ(Tokenizer::for_vocab_size(51866)->non_speech_tokens(), multilingual);
  EXPECT_EQ(Tokenizer::for_vocab_size(51864)->non_speech_tokens(), english);
}

TEST(Tokenizer, DecodeReplacesBrokenUtf8LikePython) {
  auto tok = Tokenizer::for_vocab_size(51865);
  // Every byte has a single-byte token; build ill-formed sequences from them.
  std::vector<int> byte_token(256, -1);
  for (int id = 0; id < tok->eot(); ++id) {
    std::string b = tok->token_bytes(id);
    if (b.size() == 1) byte_token[static_cast<unsigned char>(b[0])] = id;
  }
  for (int b = 0; b < 256; ++b) ASSERT_GE(byte_token[b], 0) << b;
  auto bytes = [&](std::initializer_list<int> values) {
    Ids ids;
    for (int v : values) ids.push_back(byte_token[v]);
    return ids;
  };
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(tok->decode(bytes({0xE2, 0x82, 0xAC})), "€");
  EXPECT_EQ(tok->decode(bytes({0xE2, 0x82})), fffd);              // truncated: one replacement
  EXPECT_EQ(tok->decode(bytes({0xE2, 0x82, 'a'})), fffd + "a");
  EXPECT_EQ(tok->decode(bytes({0xFF, 0xFF})), fffd + fffd);
  EXPECT_EQ(tok->decode(bytes({0xED, 0xA0, 0x80})), fffd + fffd + fffd);  // encoded surrogate
  EXPECT_EQ(tok->decode_with_timestamps(Ids{byte_token[0xE2], tok->timestamp_begin(), byte_token[0xAC]}),
            fffd + "<|0.00|>" + fffd);
}

TEST(Tokenizer, DecodeDropsTimestampsButDecodeWithTimestampsKeepsThem) {
  auto tok = Tokenizer::for_vocab_size(51865);
  Ids text = tok->encode(" Hello");
  Ids ids = {tok->sot(), tok->timestamp_begin()};
  ids.insert(ids.end(), text.begin(), text.end());
  ids.push_back(tok->timestamp_begin() + 54);
  ids.push_back(tok->eot());
  EXPECT_EQ(tok->decode(ids), "<|startoftranscript|> Hello<|endoftext|>");
  EXPECT_EQ(tok->decode_with_timestamps(ids), "<|startoftranscript|><|0.00|> Hello<|1.08|><|endoftext|>");
  expect_error(ErrorCode::InvalidArgument, [&] { tok->decode(Ids{-1}); }, "-1");
  expect_error(ErrorCode::InvalidArgument, [&] { tok->decode(Ids{51865}); }, "51865");
  expect_error(ErrorCode::InvalidArgument, [&] { tok->token_bytes(99999); }, "99999");
  EXPECT_EQ(tok->decode(Ids{}), "");
}

TEST(Tokenizer, EncodeTreatsSpecialTokenTextAsPlainText) {
  auto tok = Tokenizer::for_vocab_size(51865);
  Ids ids = tok->encode("<|endoftext|>");
  EXPECT_GT(ids.size(), 1u);
  for (int id : ids) EXPECT_LT(id, tok->eot());
  EXPECT_EQ(tok->decode(ids), "<|endoftext|>");
  EXPECT_TRUE(tok->encode("").empty());
}

TEST(Tokenizer, EncodeOfInvalidUtf8EncodesThePythonReplacement) {
  auto tok = Tokenizer::for_vocab_size(51865);
  EXPECT_EQ(tok->encode("caf\xC3"), tok->encode("caf\xEF\xBF\xBD"));
  EXPECT_EQ(tok->encode("\xED\xA0\x80 x"), tok->encode("\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD x"));
  EXPECT_EQ(tok->decode(tok->encode("a\xFF" "b")), "a\xEF\xBF\xBD" "b");
}

TEST(Tokenizer, RoundTripsEveryLanguageName) {
  auto tok = Tokenizer::for_vocab_size(51866);
  for (const Language& l : whisper_languages()) {
    for (const std::string& s : {l.name, " " + l.name, l.code}) EXPECT_EQ(tok->decode(tok->encode(s)), s);
  }
}

TEST(Tokenizer, EncodesAMegabyteQuickly) {
  // Sanity for the cache-friendly path: a megabyte of mixed text tokenizes and round-trips.
  auto tok = Tokenizer::for_vocab_size(51865);
  std::string block = " The quick brown fox, 12345 jumps; über 日本語のテキスト 😀!\n";
  std::string text;
  while (text.size() < (1u << 20)) text += block;
  Ids ids = tok->encode(text);
  EXPECT_GT(ids.size(), text.size() / 8);
  EXPECT_EQ(tok->decode(ids), text);
}

}  // namespace hark

namespace hark {
namespace {

Ids byte_tokens(const Tokenizer& tok, std::string_view bytes) {
  Ids ids;
  for (char c : bytes) {
    for (int id = 0; id < tok.eot(); ++id) {
      if (tok.token_bytes(id) == std::string(1, c)) {
        ids.push_back(id);
        break;
      }
    }
  }
  return ids;
}

Ids concat(std::initializer_list<Ids> parts) {
  Ids out;
  for (const Ids& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

}  // namespace

TEST(TokenizerWords, SpacesAndPunctuationSplitEnglish) {
  auto tok = Tokenizer::for_vocab_size(51865);
  Ids hello = tok->encode(" Hello"), comma = tok->encode(","), its = tok->encode(" It's"), dash = tok->encode("--");
  ASSERT_EQ(its.size(), 2u);  // " It" + "'s": the second subword joins the first
  Ids bang = tok->encode("!");
  Ids tokens = concat({{tok->sot()}, hello, comma, its, dash, bang, {tok->timestamp_begin() + 5, tok->eot()}});
  std::vector<std::string> words;
  std::vector<Ids> word_tokens;
  tok->split_to_word_tokens(tokens, "en", words, word_tokens);
  // "--" is not a substring of string.punctuation, so like the reference it joins the word.
  EXPECT_EQ(words, (std::vector<std::string>{"<|startoftranscript|>", " Hello", ",", " It's--", "!", "<|0.10|>",
                                             "<|endoftext|>"}));
  ASSERT_EQ(word_tokens.size(), 7u);
  EXPECT_EQ(word_tokens[3], concat({its, dash}));
}

TEST(TokenizerWords, UnicodeSplitWaitsForWholeCharacters) {
  auto tok = Tokenizer::for_vocab_size(51865);
  Ids hao = byte_tokens(*tok, "好");  // three single-byte tokens for one character
  Ids tokens = concat({hao, tok->encode("世")});
  std::vector<std::string> words;
  std::vector<Ids> word_tokens;
  tok->split_to_word_tokens(tokens, "zh", words, word_tokens);
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0], "好");
  EXPECT_EQ(word_tokens[0], hao);
  EXPECT_EQ(words[1], "世");
}

TEST(TokenizerWords, ARealReplacementCharacterClosesAWord) {
  // 0xFF can never become valid, so the full text has U+FFFD there too.
  auto tok = Tokenizer::for_vocab_size(51865);
  Ids tokens = concat({byte_tokens(*tok, "\xFF"), tok->encode("a")});
  std::vector<std::string> words;
  std::vector<Ids> word_tokens;
  tok->split_to_word_tokens(tokens, "ja", words, word_tokens);
  EXPECT_EQ(words, (std::vector<std::string>{"\xEF\xBF\xBD", "a"}));
  // An unfinished character at the very end never closes: the reference drops it.
  tokens = concat({tok->encode("a"), byte_tokens(*tok, "\xE5\xA5")});
  tok->split_to_word_tokens(tokens, "zh", words, word_tokens);
  EXPECT_EQ(words, (std::vector<std::string>{"a", "\xEF\xBF\xBD"}));
}

}  // namespace hark
