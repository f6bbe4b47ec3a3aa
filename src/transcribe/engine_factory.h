// Building an Engine around an already loaded checkpoint (tests, benchmarks, the
// synthetic model) instead of a path.
#pragma once

#include <memory>

#include "batch/batch_scheduler.h"
#include "core/backend.h"
#include "hark/engine.h"
#include "model/checkpoint.h"

namespace hark {

// max_batch > 1: the engine batches concurrent runs (src/batch/batch_scheduler.h).
std::unique_ptr<Engine> make_engine(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend,
                                    int max_batch = 1, int encode_batch = 0);
// The same with every batching option (e.g. the encoder lane forced on the CPU in tests).
std::unique_ptr<Engine> make_engine(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend,
                                    const BatchOptions& batch);

}  // namespace hark
