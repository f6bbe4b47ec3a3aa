// Hopper's bulk copies (cp.async.bulk, the copy engine that TMA also drives) and the
// shared-memory transaction barriers (mbarrier) that say when one has landed. One thread
// asks for a whole contiguous range of global memory in one instruction; the block's other
// threads are free meanwhile, and no registers hold the data in flight. Device helpers only;
// on GPUs older than compute capability 9.0 they compile to a trap (callers choose other
// kernels there).
#pragma once

#include <cstdint>

#include "core/cuda/device/mma.cuh"

namespace hark::cuda::device {

// A barrier in shared memory that one arrival (with the expected byte count) and the
// bytes of the copies completing on it move to its next phase.
__device__ __forceinline__ void barrier_init(uint64_t* bar, unsigned arrivals) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals) : "memory");
#endif
}

// Makes initialised barriers visible to the copy engine (before any copy names them).
__device__ __forceinline__ void barrier_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// This thread's arrival, announcing `bytes` more to come from bulk copies.
__device__ __forceinline__ void barrier_expect_bytes(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes)
               : "memory");
#endif
}

// Waits until the barrier has completed the phase of this parity (0, 1, 0, ... per use).
__device__ __forceinline__ void barrier_wait(uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n"
        "}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

// bytes (a multiple of 16, both addresses 16-byte aligned) from global src to shared dst,
// completing on bar; with evict_first, L2 keeps the data only as long as nothing else needs
// the room (weights read once a step).
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes, uint64_t* bar,
                                                    bool evict_first) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (evict_first) {
    const uint64_t policy = l2_policy_evict_first();
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::
            "r"(smem_addr(dst)),
        "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
        : "memory");
  } else {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
  }
#else
  __trap();
#endif
}

}  // namespace hark::cuda::device
