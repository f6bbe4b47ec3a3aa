// Single-instruction math for the attention kernels' softmax. Device helpers only.
#pragma once

namespace hark::cuda::device {

// 2^x as one MUFU.EX2. exp2f without fast-math compiles to ex2.approx.f32, which wraps the
// same instruction in a range check and two multiplies to keep denormal results; in a
// softmax those results (below 2^-126 of the row's largest weight) are zeros anyway, and
// the extra three instructions per score were a third of the flash kernel's issue slots.
// ex2(-inf) = +0, which masked keys rely on.
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace hark::cuda::device
