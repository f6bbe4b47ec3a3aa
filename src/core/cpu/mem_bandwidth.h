// The machine's read bandwidth, for the decoder step's memory floor (`hark bench`,
// bench/mem_bandwidth.cc): a batch-1 step reads every decoder weight and the cross-
// attention K/V once, so bytes per step / bandwidth is the fastest a step can be.
#pragma once

#include <cstddef>

#include "core/thread_pool.h"

namespace hark {

// Best of `repeats` passes reading a buffer of `bytes` (split over the pool's threads),
// in GB/s (1e9 bytes per second). A buffer the size of the step's working set measures
// the bandwidth the step sees: cache-resident if it fits, DRAM if not.
double read_bandwidth_gbs(ThreadPool& pool, size_t bytes, int repeats = 10);

}  // namespace hark
