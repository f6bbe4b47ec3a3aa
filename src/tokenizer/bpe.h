// tiktoken's byte-level BPE: a hash table from byte strings to ranks, and the merge loop
// that repeatedly joins the adjacent pair whose bytes have the lowest rank.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hark::tok {

class RankTable {
 public:
  // Parses a .tiktoken file ("<base64 bytes> <rank>" per line). Ranks must be exactly
  // 0..N-1 and every single byte must have one; otherwise ModelFormat.
  static RankTable parse(std::string_view contents, const std::string& origin);
  // tokens[r] holds the bytes of rank r; origin names the source in errors.
  static RankTable from_tokens(std::vector<std::string> tokens, const std::string& origin = "rank table");

  static constexpr int kMissing = -1;
  int find(std::string_view bytes) const;
  std::string_view bytes(int rank) const {
    return std::string_view(arena_).substr(offsets_[rank], offsets_[rank + 1] - offsets_[rank]);
  }
  int size() const { return static_cast<int>(offsets_.size()) - 1; }

 private:
  struct Slot {
    uint32_t hash = 0;
    int32_t rank = kMissing;
  };
  void build_index(const std::string& origin);

  std::string arena_;              // all token bytes, in rank order
  std::vector<uint32_t> offsets_;  // rank r spans arena_[offsets_[r], offsets_[r+1])
  std::vector<Slot> slots_;        // open addressing, linear probing, power-of-two size
  uint32_t mask_ = 0;
};

// Appends the ranks of one pre-tokenized piece to out.
void byte_pair_encode(const RankTable& ranks, std::string_view piece, std::vector<int>& out);

// The two merge strategies behind byte_pair_encode, exposed so tests can check that
// they agree: a linear scan per merge (fast for short pieces) and a heap over a linked
// list (n log n for long ones). Both pick the leftmost pair among equal ranks.
void byte_pair_merge_scan(const RankTable& ranks, std::string_view piece, std::vector<int>& out);
void byte_pair_merge_heap(const RankTable& ranks, std::string_view piece, std::vector<int>& out);

}  // namespace hark::tok
