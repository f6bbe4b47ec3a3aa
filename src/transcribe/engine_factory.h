// Building an Engine around an already loaded checkpoint (tests, benchmarks, the
// synthetic model) instead of a path.
#pragma once

#include <memory>

#include "core/backend.h"
#include "hark/engine.h"
#include "model/checkpoint.h"

namespace hark {

std::unique_ptr<Engine> make_engine(std::shared_ptr<const Checkpoint> checkpoint, std::shared_ptr<Backend> backend);

}  // namespace hark
