// Language lookups shared by the tokenizer's sources.
#pragma once

#include <string>

namespace hark::tok {

// Index in whisper_languages() of a code ("de"), a name ("german") or one of the
// reference's aliases ("castilian"), case-insensitively; -1 when unknown.
int language_index(const std::string& code_or_name);

}  // namespace hark::tok
