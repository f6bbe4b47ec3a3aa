#include "tokenizer/languages.h"

#include <algorithm>
#include <cctype>

#include "tokenizer/tokenizer.h"

namespace hark {

const std::vector<Language>& whisper_languages() {
  // Token order of Whisper's language tokens; "yue" exists only in 51866-token vocabularies.
  static const std::vector<Language> languages = {
      {"en", "english"},    {"zh", "chinese"},     {"de", "german"},         {"es", "spanish"},
      {"ru", "russian"},    {"ko", "korean"},      {"fr", "french"},         {"ja", "japanese"},
      {"pt", "portuguese"}, {"tr", "turkish"},     {"pl", "polish"},         {"ca", "catalan"},
      {"nl", "dutch"},      {"ar", "arabic"},      {"sv", "swedish"},        {"it", "italian"},
      {"id", "indonesian"}, {"hi", "hindi"},       {"fi", "finnish"},        {"vi", "vietnamese"},
      {"he", "hebrew"},     {"uk", "ukrainian"},   {"el", "greek"},          {"ms", "malay"},
      {"cs", "czech"},      {"ro", "romanian"},    {"da", "danish"},         {"hu", "hungarian"},
      {"ta", "tamil"},      {"no", "norwegian"},   {"th", "thai"},           {"ur", "urdu"},
      {"hr", "croatian"},   {"bg", "bulgarian"},   {"lt", "lithuanian"},     {"la", "latin"},
      {"mi", "maori"},      {"ml", "malayalam"},   {"cy", "welsh"},          {"sk", "slovak"},
      {"te", "telugu"},     {"fa", "persian"},     {"lv", "latvian"},        {"bn", "bengali"},
      {"sr", "serbian"},    {"az", "azerbaijani"}, {"sl", "slovenian"},      {"kn", "kannada"},
      {"et", "estonian"},   {"mk", "macedonian"},  {"br", "breton"},         {"eu", "basque"},
      {"is", "icelandic"},  {"hy", "armenian"},    {"ne", "nepali"},         {"mn", "mongolian"},
      {"bs", "bosnian"},    {"kk", "kazakh"},      {"sq", "albanian"},       {"sw", "swahili"},
      {"gl", "galician"},   {"mr", "marathi"},     {"pa", "punjabi"},        {"si", "sinhala"},
      {"km", "khmer"},      {"sn", "shona"},       {"yo", "yoruba"},         {"so", "somali"},
      {"af", "afrikaans"},  {"oc", "occitan"},     {"ka", "georgian"},       {"be", "belarusian"},
      {"tg", "tajik"},      {"sd", "sindhi"},      {"gu", "gujarati"},       {"am", "amharic"},
      {"yi", "yiddish"},    {"lo", "lao"},         {"uz", "uzbek"},          {"fo", "faroese"},
      {"ht", "haitian creole"}, {"ps", "pashto"},  {"tk", "turkmen"},        {"nn", "nynorsk"},
      {"mt", "maltese"},    {"sa", "sanskrit"},    {"lb", "luxembourgish"},  {"my", "myanmar"},
      {"bo", "tibetan"},    {"tl", "tagalog"},     {"mg", "malagasy"},       {"as", "assamese"},
      {"tt", "tatar"},      {"haw", "hawaiian"},   {"ln", "lingala"},        {"ha", "hausa"},
      {"ba", "bashkir"},    {"jw", "javanese"},    {"su", "sundanese"},      {"yue", "cantonese"},
  };
  return languages;
}

namespace tok {

int language_index(const std::string& code_or_name) {
  std::string key = code_or_name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  // The reference's extra names (TO_LANGUAGE_CODE) besides each language's own.
  static const std::pair<const char*, const char*> aliases[] = {
      {"burmese", "my"},   {"valencian", "ca"}, {"flemish", "nl"},   {"haitian", "ht"},
      {"letzeburgesch", "lb"}, {"pushto", "ps"}, {"panjabi", "pa"},  {"moldavian", "ro"},
      {"moldovan", "ro"},  {"sinhalese", "si"}, {"castilian", "es"}, {"mandarin", "zh"},
  };
  // Names resolve to codes first so "castilian" and "spanish" give the same token.
  for (const auto& [alias, code] : aliases)
    if (key == alias) key = code;
  const auto& languages = whisper_languages();
  for (size_t i = 0; i < languages.size(); ++i)
    if (languages[i].code == key || languages[i].name == key) return static_cast<int>(i);
  return -1;
}

}  // namespace tok
}  // namespace hark
