// --compute-type, for the weights and caches. (The activations' dtype, f32 / f16 / bf16,
// is the backend's: parse_compute_type in core/backend.h.)
//
//   auto          weights as stored (quantized ggml files run quantized, with q8_0 cross K/V)
//   f32           fp32 arithmetic on the weights as stored, quantized ones widened to fp32 at
//                 load: the reference path
//   f16, bf16     the GPU's half-precision activations (weights as stored)
//   fp8           f16 on the GPU, with the encoder's convolution and MLP products on e4m3
//                 operands: per-row activation and per-channel weight scales, fp32
//                 accumulation; attention, cross K/V and decoder in f16 (compute capability 8.9+)
//   int8          8-bit weights: float 2-D weights become q8_0 at load (per block of 32,
//                 fp16 scale), integer dot products; cross-attention K/V in q8_0 too
//   int8_float16, int8_float32
//                 int8 with the cross-attention K/V kept in f16 / fp32
//   q8_0, q5_0, q5_1, q4_0, q4_1, q2_k … q6_k
//                 float 2-D weights quantized at load to that ggml type (whisper-quantize's
//                 rule: positional embeddings, 1-D and 3-D tensors stay), cross K/V in q8_0
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "model/checkpoint.h"

namespace hark {

struct ComputeType {
  std::string name = "auto";
  std::optional<DType> weights;    // storage the 2-D weights are converted to; nullopt = as stored
  bool requantize = false;         // also convert weights that are quantized to another type
  DType cross_kv = DType::F32;     // storage of the cross-attention K/V on the CPU
  bool cpu = true, gpu = true;     // devices that can run it
};

// Every accepted name, for --help and error messages.
const char* compute_type_choices();
// Throws InvalidArgument naming the choices.
ComputeType compute_type_named(const std::string& name);
// Throws InvalidArgument when `device` cannot run `ct` (before any model is loaded).
void check_compute_type(const ComputeType& ct, Device device);
// Fills what `auto` leaves open from the checkpoint and the device (checks it too).
ComputeType resolve_compute_type(ComputeType ct, const Checkpoint& checkpoint, Device device);
// The checkpoint with its weights stored as `ct` says (the same one when nothing changes).
// On the GPU, quantized weights are widened to f16 (its backend has no quantized kernels).
std::shared_ptr<const Checkpoint> apply_compute_type(std::shared_ptr<const Checkpoint> checkpoint,
                                                     const ComputeType& ct, Device device);
// "int8 (weights q8_0, cross K/V f16)", for hark bench and logs. A GPU backend keeps the
// cross K/V in its activation dtype whatever `ct` says: pass the backend's cross_kv_dtype().
std::string describe(const ComputeType& ct, const Checkpoint& checkpoint, DType cross_kv);
// The device a --device string names ("auto": CUDA when a GPU is present).
Device device_of(const std::string& device);

}  // namespace hark
