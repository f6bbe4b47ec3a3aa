// Kernel launches with programmatic dependent launch (device/pdl.cuh) where the GPU has
// it (compute capability 9.0 and later) and HARK_CUDA_PDL is not 0. Within a recorded
// decoder step this lets each small kernel start, and fetch its weights, while the one
// before it drains: the gaps between ~50 short kernels are most of what a step costs
// beyond its memory reads.
#pragma once

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#include "core/cuda/cuda_check.h"

namespace hark::cuda {

inline bool pdl_enabled() {
  static const bool enabled = [] {
    if (const char* env = std::getenv("HARK_CUDA_PDL"); env && std::strcmp(env, "0") == 0) return false;
    int device = 0, major = 0;
    if (cudaGetDevice(&device) != cudaSuccess) return false;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess) return false;
    return major >= 9;
  }();
  return enabled;
}

// kernel<<<grid, block, smem, stream>>>(args...), allowed to overlap the previous kernel.
// Every kernel launched so must begin with pdl_enter() or reach pdl_wait() in all blocks.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                   Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl_enabled() ? 1 : 0;
  check(cudaLaunchKernelEx(&config, kernel, static_cast<Params>(std::forward<Args>(args))...), "kernel launch");
}

}  // namespace hark::cuda
