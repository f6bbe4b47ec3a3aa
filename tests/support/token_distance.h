// Levenshtein distance between two token sequences: the "differing tokens" of the fast
// path's ≤ 2-token rule (a substitution, an insertion and a deletion count one each).
#pragma once

#include <algorithm>
#include <numeric>
#include <vector>

namespace hark::test {

inline int edit_distance(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace hark::test
