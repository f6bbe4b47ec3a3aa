// Which cross-attention heads track time, for word timestamps: the checkpoint's own
// list, else the published table for the official checkpoints, else the reference's
// default (every head of the last half of the decoder layers).
#pragma once

#include <string>

#include "model/checkpoint.h"

namespace hark {

enum class AlignmentHeadsSource { Checkpoint, OfficialTable, Default };

// The published heads of an official checkpoint ("tiny", "base.en", "large-v3", ...);
// empty when `size_name` is not one of them.
AlignmentHeads official_alignment_heads(const std::string& size_name);
// Every head of decoder layers [n_text_layer / 2, n_text_layer).
AlignmentHeads default_alignment_heads(const HParams& hp);

// The checkpoint's heads when present; else the official table when `trust_official_shape`
// (the weights are believed to be an official release of that shape); else the default.
// Heads outside the model's layers or heads are rejected with ModelFormat.
AlignmentHeads resolve_alignment_heads(const Checkpoint& checkpoint, bool trust_official_shape,
                                       AlignmentHeadsSource* source = nullptr);

}  // namespace hark
