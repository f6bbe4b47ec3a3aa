#include "align/alignment_heads.h"

#include <map>

#include "hark/error.h"

namespace hark {

AlignmentHeads official_alignment_heads(const std::string& size_name) {
  // (layer, head) pairs published with the official checkpoints.
  static const std::map<std::string, AlignmentHeads> kTable = {
      {"tiny.en", {{1, 0}, {2, 0}, {2, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}}},
      {"tiny", {{2, 2}, {3, 0}, {3, 2}, {3, 3}, {3, 4}, {3, 5}}},
      {"base.en", {{3, 3}, {4, 7}, {5, 1}, {5, 5}, {5, 7}}},
      {"base", {{3, 1}, {4, 2}, {4, 3}, {4, 7}, {5, 1}, {5, 2}, {5, 4}, {5, 6}}},
      {"small.en", {{6, 6}, {7, 0}, {7, 3}, {7, 8}, {8, 2}, {8, 5}, {8, 7}, {9, 0}, {9, 4}, {9, 8},
                    {9, 10}, {10, 0}, {10, 1}, {10, 2}, {10, 3}, {10, 6}, {10, 11}, {11, 2}, {11, 4}}},
      {"small", {{5, 3}, {5, 9}, {8, 0}, {8, 4}, {8, 7}, {8, 8}, {9, 0}, {9, 7}, {9, 9}, {10, 5}}},
      {"medium.en", {{11, 4}, {14, 1}, {14, 12}, {14, 14}, {15, 4}, {16, 0}, {16, 4}, {16, 9}, {17, 12},
                     {17, 14}, {18, 7}, {18, 10}, {18, 15}, {20, 0}, {20, 3}, {20, 9}, {20, 14}, {21, 12}}},
      {"medium", {{13, 15}, {15, 4}, {15, 15}, {16, 1}, {20, 0}, {23, 4}}},
      {"large-v2", {{10, 12}, {13, 17}, {16, 11}, {16, 12}, {16, 13}, {17, 15}, {17, 16}, {18, 4},
                    {18, 11}, {18, 19}, {19, 11}, {21, 2}, {21, 3}, {22, 3}, {22, 9}, {22, 12},
                    {23, 5}, {23, 7}, {23, 13}, {25, 5}, {26, 1}, {26, 12}, {27, 15}}},
      {"large-v3", {{7, 0}, {10, 17}, {12, 18}, {13, 12}, {16, 1}, {17, 14}, {19, 11}, {21, 4}, {24, 1}, {25, 6}}},
      {"large-v3-turbo", {{2, 4}, {2, 11}, {3, 3}, {3, 6}, {3, 11}, {3, 14}}},
  };
  auto it = kTable.find(size_name);
  return it == kTable.end() ? AlignmentHeads{} : it->second;
}

AlignmentHeads default_alignment_heads(const HParams& hp) {
  AlignmentHeads heads;
  for (int layer = hp.n_text_layer / 2; layer < hp.n_text_layer; ++layer)
    for (int head = 0; head < hp.n_text_head; ++head) heads.emplace_back(layer, head);
  return heads;
}

AlignmentHeads resolve_alignment_heads(const Checkpoint& checkpoint, bool trust_official_shape,
                                       AlignmentHeadsSource* source) {
  const HParams& hp = checkpoint.hparams;
  AlignmentHeads heads = checkpoint.alignment_heads;
  AlignmentHeadsSource from = AlignmentHeadsSource::Checkpoint;
  if (heads.empty() && trust_official_shape) {
    heads = official_alignment_heads(hp.size_name());
    from = AlignmentHeadsSource::OfficialTable;
  }
  if (heads.empty()) {
    heads = default_alignment_heads(hp);
    from = AlignmentHeadsSource::Default;
  }
  for (auto [layer, head] : heads)
    if (layer < 0 || layer >= hp.n_text_layer || head < 0 || head >= hp.n_text_head)
      throw Error(ErrorCode::ModelFormat, "[align] alignment head (" + std::to_string(layer) + ", " +
                                              std::to_string(head) + ") is outside this model's " +
                                              std::to_string(hp.n_text_layer) + " layers × " +
                                              std::to_string(hp.n_text_head) + " heads");
  if (source) *source = from;
  return heads;
}

}  // namespace hark
