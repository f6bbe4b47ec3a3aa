#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <queue>

#include "hark/error.h"

namespace hark::tok {
namespace {

constexpr int kNoRank = std::numeric_limits<int>::max();
// Pieces up to this many bytes merge by linear scan; nearly all words are far shorter.
constexpr size_t kScanLimit = 96;

uint32_t hash_bytes(std::string_view s) {
  // FNV-1a with a final avalanche: the keys are short, so this is as fast as anything.
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  return h;
}

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Appends the bytes of `in` to out; false when it is not base64.
bool decode_base64(std::string_view in, std::string& out) {
  uint32_t acc = 0;
  int bits = 0;
  size_t padding = 0;
  for (char c : in) {
    if (c == '=') {
      ++padding;
      continue;
    }
    int v = base64_value(c);
    if (v < 0 || padding) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  // multilingual.tiktoken's rank 50256 is "=", the empty string (as Python's b64decode reads it).
  return padding <= 2;
}

[[noreturn]] void bad_rank_file(const std::string& origin, size_t line, const std::string& what) {
  throw Error(ErrorCode::ModelFormat, "[tokenizer] " + origin + " line " + std::to_string(line) + ": " + what +
                                          "; expected '<base64 token> <rank>' lines with ranks 0..N-1");
}

}  // namespace

RankTable RankTable::parse(std::string_view contents, const std::string& origin) {
  struct Entry {
    uint32_t offset, length;
  };
  std::string decoded;         // every token's bytes, in file order
  std::vector<Entry> by_rank;  // where rank r's bytes are in `decoded`
  std::vector<bool> seen;
  size_t line_no = 0;
  for (size_t pos = 0; pos < contents.size();) {
    size_t eol = contents.find('\n', pos);
    if (eol == std::string_view::npos) eol = contents.size();
    std::string_view line = contents.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    size_t space = line.find(' ');
    if (space == std::string_view::npos) bad_rank_file(origin, line_no, "no space between token and rank");
    size_t offset = decoded.size();
    if (!decode_base64(line.substr(0, space), decoded)) bad_rank_file(origin, line_no, "token is not base64");
    std::string_view rank_text = line.substr(space + 1);
    size_t rank = 0;
    if (rank_text.empty() || rank_text.size() > 8) bad_rank_file(origin, line_no, "rank is not a number");
    for (char c : rank_text) {
      if (c < '0' || c > '9') bad_rank_file(origin, line_no, "rank is not a number");
      rank = rank * 10 + static_cast<size_t>(c - '0');
    }
    if (rank >= by_rank.size()) {
      by_rank.resize(rank + 1);
      seen.resize(rank + 1, false);
    }
    if (seen[rank]) bad_rank_file(origin, line_no, "rank " + std::to_string(rank) + " appears twice");
    seen[rank] = true;
    by_rank[rank] = {static_cast<uint32_t>(offset), static_cast<uint32_t>(decoded.size() - offset)};
  }
  if (by_rank.empty()) bad_rank_file(origin, line_no, "no ranks at all");
  auto gap = std::find(seen.begin(), seen.end(), false);
  if (gap != seen.end()) bad_rank_file(origin, line_no, "rank " + std::to_string(gap - seen.begin()) + " is missing");

  // Lay the bytes out in rank order so that bytes(rank) is two array reads.
  RankTable table;
  table.arena_.reserve(decoded.size());
  table.offsets_.reserve(by_rank.size() + 1);
  table.offsets_.push_back(0);
  for (const Entry& e : by_rank) {
    table.arena_.append(decoded, e.offset, e.length);
    table.offsets_.push_back(static_cast<uint32_t>(table.arena_.size()));
  }
  table.build_index(origin);
  // BPE starts from single bytes, so without all 256 some text could not be encoded.
  for (int b = 0; b < 256; ++b) {
    char c = static_cast<char>(b);
    if (table.find(std::string_view(&c, 1)) == kMissing)
      bad_rank_file(origin, line_no, "byte " + std::to_string(b) + " has no rank");
  }
  return table;
}

RankTable RankTable::from_tokens(std::vector<std::string> tokens, const std::string& origin) {
  RankTable table;
  table.offsets_.reserve(tokens.size() + 1);
  table.offsets_.push_back(0);
  for (const std::string& t : tokens) {
    table.arena_ += t;
    table.offsets_.push_back(static_cast<uint32_t>(table.arena_.size()));
  }
  table.build_index(origin);
  return table;
}

void RankTable::build_index(const std::string& origin) {
  // Load factor under one half keeps probe chains short for the many failed lookups
  // the merge loop makes (most byte pairs of a word are not tokens).
  size_t capacity = 16;
  while (capacity < 2 * static_cast<size_t>(size()) + 16) capacity *= 2;
  slots_.assign(capacity, Slot{});
  mask_ = static_cast<uint32_t>(capacity - 1);
  for (int r = 0; r < size(); ++r) {
    std::string_view key = bytes(r);
    uint32_t h = hash_bytes(key);
    for (uint32_t i = h & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.rank == kMissing) {
        s = {h, r};
        break;
      }
      if (s.hash == h && bytes(s.rank) == key)
        throw Error(ErrorCode::ModelFormat, "[tokenizer] " + origin + ": ranks " + std::to_string(s.rank) + " and " +
                                                std::to_string(r) + " have the same bytes; the rank file is corrupt");
    }
  }
}

int RankTable::find(std::string_view key) const {
  // The stored hash rejects almost every non-matching slot before any byte compare.
  uint32_t h = hash_bytes(key);
  for (uint32_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.rank == kMissing) return kMissing;
    if (s.hash == h && bytes(s.rank) == key) return s.rank;
  }
}

namespace {

int pair_rank(const RankTable& ranks, std::string_view piece, size_t begin, size_t end) {
  int r = ranks.find(piece.substr(begin, end - begin));
  return r == RankTable::kMissing ? kNoRank : r;
}

}  // namespace

void byte_pair_merge_scan(const RankTable& ranks, std::string_view piece, std::vector<int>& out) {
  // parts[i] = start of part i and the rank of part i joined with part i+1; the last
  // entry is a sentinel at the end of the piece.
  struct Part {
    size_t start;
    int rank;
  };
  std::vector<Part> parts(piece.size() + 1);
  for (size_t i = 0; i <= piece.size(); ++i)
    parts[i] = {i, i + 2 <= piece.size() ? pair_rank(ranks, piece, i, i + 2) : kNoRank};
  auto joined_rank = [&](size_t i) {  // rank of parts i, i+1, i+2 joined (before removing i+1)
    return i + 3 < parts.size() ? pair_rank(ranks, piece, parts[i].start, parts[i + 3].start) : kNoRank;
  };
  while (parts.size() > 2) {
    // Strict "<" keeps the leftmost of equal ranks, as tiktoken does.
    size_t best = 0;
    for (size_t i = 1; i + 1 < parts.size(); ++i)
      if (parts[i].rank < parts[best].rank) best = i;
    if (parts[best].rank == kNoRank) break;
    if (best > 0) parts[best - 1].rank = joined_rank(best - 1);
    parts[best].rank = joined_rank(best);
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  for (size_t i = 0; i + 1 < parts.size(); ++i)
    out.push_back(ranks.find(piece.substr(parts[i].start, parts[i + 1].start - parts[i].start)));
}

void byte_pair_merge_heap(const RankTable& ranks, std::string_view piece, std::vector<int>& out) {
  const size_t n = piece.size();
  // A doubly linked list of parts over byte positions; part i starts at byte i.
  std::vector<size_t> next(n), prev(n);
  std::vector<int> rank(n, kNoRank);  // rank of part i joined with its successor
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1;
    prev[i] = i - 1;  // wraps for i == 0; never read there
  }
  using Entry = std::pair<int, size_t>;  // (rank, start): the smallest is the leftmost lowest rank
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  auto update = [&](size_t i) {
    size_t j = next[i];
    rank[i] = j < n ? pair_rank(ranks, piece, i, next[j]) : kNoRank;
    if (rank[i] != kNoRank) heap.push({rank[i], i});
  };
  for (size_t i = 0; i < n; ++i) update(i);
  while (!heap.empty()) {
    auto [r, i] = heap.top();
    heap.pop();
    // Stale entries: a rank names one byte string, so an equal rank at the same start
    // is the same pair.
    if (!alive[i] || rank[i] != r) continue;
    size_t j = next[i];
    alive[j] = false;
    next[i] = next[j];
    if (next[i] < n) prev[next[i]] = i;
    update(i);
    if (i > 0) update(prev[i]);
  }
  for (size_t i = 0; i < n; i = next[i]) out.push_back(ranks.find(piece.substr(i, next[i] - i)));
}

void byte_pair_encode(const RankTable& ranks, std::string_view piece, std::vector<int>& out) {
  if (piece.empty()) return;
  // Like tiktoken, a piece that is itself a token is never split, merges or not.
  if (int whole = ranks.find(piece); whole != RankTable::kMissing) {
    out.push_back(whole);
    return;
  }
  if (piece.size() <= kScanLimit)
    byte_pair_merge_scan(ranks, piece, out);
  else
    byte_pair_merge_heap(ranks, piece, out);
}

}  // namespace hark::tok
