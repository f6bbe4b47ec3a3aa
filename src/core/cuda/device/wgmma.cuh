// Hopper warpgroup matrix multiply (wgmma, sm_90a only): the shared-memory matrix
// descriptor of a tile stored with the 128-byte swizzle, the m64n64k16 product with A in
// registers and B in shared memory (f16 or bf16 operands, fp32 accumulators), and the
// fences that order it. Device helpers only: includes nothing of hark's.
//
// A warpgroup is 4 consecutive warps (128 threads) starting at a warp index divisible by
// 4; every thread of it executes each call here together. The accumulator layout of
// m64nNk16 is the m16n8 accumulator layout of mma.sync per warp (warp w of the group owns
// rows 16w..16w+15), repeated for each 8 columns: d[j][e] holds row g + 8·(e / 2),
// column 8j + 2·(lane % 4) + e % 2, with g = lane / 4. The A fragment in registers is the
// m16n8k16 A fragment of mma.sync for the warp's 16 rows.
//
// Built only where the compiler targets sm_90a (__CUDA_ARCH_FEAT_SM90_ALL); callers guard
// their kernels' bodies with HARK_WGMMA.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/cuda/device/mma.cuh"

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define HARK_WGMMA 1
#endif

namespace hark::cuda::device {

// Descriptor of a shared-memory operand laid out in rows of 128 bytes whose 16-byte chunks
// are XOR-swizzled by (row % 8), groups of 8 rows 1024 bytes apart; the tile must start on
// a 1024-byte boundary (the swizzle is applied to address bits, so the phase must match),
// and a step within a row (along K for K-major operands) adds its byte offset to `p`.
// lbo/sbo are the leading and stride byte offsets of the PTX ISA's canonical layouts
// (K-major: sbo is the stride of 8-row groups, lbo unused; MN-major: sbo the stride of
// 8-row groups along K, lbo that of 64-element blocks along MN).
__device__ __forceinline__ uint64_t wgmma_desc_sw128(const void* p, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  const uint64_t addr = smem_addr(p);
  uint64_t desc = (addr & 0x3FFFF) >> 4;
  desc |= static_cast<uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16;
  desc |= static_cast<uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32;
  desc |= uint64_t{1} << 62;  // 128-byte swizzle
  return desc;
}

// Orders this thread's register writes (accumulators, A fragments) before the wgmma that
// reads them; required before the first wgmma and after registers it uses were changed.
__device__ __forceinline__ void wgmma_fence() {
#ifdef HARK_WGMMA
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#ifdef HARK_WGMMA
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#ifdef HARK_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
#endif
}

// Makes this thread's ordinary shared-memory writes (cp.async and st.shared) visible to
// the async proxy that wgmma reads shared memory through; then a barrier for the others'.
__device__ __forceinline__ void fence_proxy_async_shared() {
#ifdef HARK_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Tells the compiler that the registers may change here: keeps reads of the accumulators
// after the wait, and their writes before the fence, where the code puts them.
template <int kN8>
__device__ __forceinline__ void fence_registers(float (&r)[kN8][4]) {
#pragma unroll
  for (int j = 0; j < kN8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(r[j][e])::"memory");
}

// The 32 fp32 accumulators of an m64n64 product, as operands %0..%31 of the asm below.
#define HARK_WGMMA_D                                                                                             \
  " {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, " \
  "%23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define HARK_WGMMA_ACCUMULATORS(d)                                                                                \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]),      \
      "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]),  \
      "+f"(d[3][2]), "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), "+f"(d[5][0]),  \
      "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),  \
      "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])

// d (+)= a · b for a 64×16 A in registers (the warp's 16 rows, mma.sync's A fragment) and
// a 16×64 B described by desc_b: K-major (kTransB = false: B stored as 64 rows of N, each
// holding its 16 K values) or MN-major (kTransB = true: K rows, each holding 64 N values).
// With accumulate = false, d = a · b.
#define HARK_WGMMA_64x64x16(TYPE)                                                                                 \
  asm volatile(                                                                                                   \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                                \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE                                                 \
      HARK_WGMMA_D ", {%32, %33, %34, %35}, %36, p, 1, 1, %38;\n}\n"               \
      : HARK_WGMMA_ACCUMULATORS(d) \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(static_cast<int>(accumulate)),             \
        "n"(kTransB ? 1 : 0))

template <class T, bool kTransB>
__device__ __forceinline__ void wgmma_64x64x16(float (&d)[8][4], const unsigned (&a)[4], uint64_t desc_b,
                                               bool accumulate) {
#ifdef HARK_WGMMA
  if constexpr (std::is_same_v<T, __half>)
    HARK_WGMMA_64x64x16("f16");
  else
    HARK_WGMMA_64x64x16("bf16");
#endif
}

#undef HARK_WGMMA_64x64x16

// d (+)= a · b with both operands in shared memory, K-major (a: 64 rows of M, each holding
// its 16 K values; b as for the K-major form above), described by desc_a and desc_b.
#define HARK_WGMMA_64x64x16_SS(TYPE)                                                                              \
  asm volatile(                                                                                                   \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                                \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE                                                 \
      HARK_WGMMA_D ", %32, %33, p, 1, 1, 0, 0;\n}\n"                              \
      : HARK_WGMMA_ACCUMULATORS(d) \
      : "l"(desc_a), "l"(desc_b), "r"(static_cast<int>(accumulate)))

template <class T>
__device__ __forceinline__ void wgmma_64x64x16_ss(float (&d)[8][4], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
#ifdef HARK_WGMMA
  if constexpr (std::is_same_v<T, __half>)
    HARK_WGMMA_64x64x16_SS("f16");
  else
    HARK_WGMMA_64x64x16_SS("bf16");
#endif
}

#undef HARK_WGMMA_64x64x16_SS

#undef HARK_WGMMA_ACCUMULATORS
#undef HARK_WGMMA_D

}  // namespace hark::cuda::device
