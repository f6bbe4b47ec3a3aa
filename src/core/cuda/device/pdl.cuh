// Programmatic dependent launch (Hopper): a kernel launched with launch_kernel() may
// start while the kernel before it is still finishing. It must call pdl_wait() before it
// reads anything an earlier kernel wrote, and before it writes anything at all; what it
// does before (fetching weights, which no kernel of a step writes) overlaps the previous
// kernel's tail and the launch latency. On older GPUs both calls compile to nothing.
#pragma once

namespace hark::cuda::device {

// Blocks until every kernel this one depends on has finished and its writes are visible.
// Every block must reach it (an exit before it could let the grid finish early).
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the next kernel in the stream launch now (it still waits in its own pdl_wait()).
__device__ __forceinline__ void pdl_launch_next() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::);
#endif
}

// The usual prologue of a kernel with nothing to fetch early.
__device__ __forceinline__ void pdl_enter() {
  pdl_launch_next();
  pdl_wait();
}

}  // namespace hark::cuda::device
