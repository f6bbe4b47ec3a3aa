// GPT-2's pre-tokenizer, written by hand: the pieces that
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// finds with leftmost-first alternation (tiktoken's fancy-regex, Python's `regex`).
// BPE merges never cross a piece boundary.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace hark::tok {

// End (byte offset) of the piece that starts at byte `start` of valid UTF-8 `text`.
size_t gpt2_piece_end(std::string_view text, size_t start);

// All pieces of valid UTF-8 text, in order; they concatenate back to text.
std::vector<std::string_view> split_gpt2(std::string_view text);

}  // namespace hark::tok
