#include "model/compute_type.h"

#include "core/backend.h"
#include "core/quant_format.h"
#include "model/loaders/loaders.h"
#include "model/loaders/tensor_io.h"

namespace hark {
namespace {

[[noreturn]] void refuse(const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, "[compute-type] " + what);
}

// The storage one tensor gets under `ct` on `device`.
DType storage_for(const std::string& name, const Shape& shape, DType stored, const ComputeType& ct, Device device) {
  const bool quantized = dtype_is_quantized(stored);
  if (device == Device::Cuda && quantized) return ct.weights == DType::F32 ? DType::F32 : DType::F16;
  if (!ct.weights) return stored;
  const DType want = *ct.weights;
  if (dtype_is_quantized(want)) {
    if (quantized && (!ct.requantize || stored == want)) return stored;
    const DType target = loaders::ggml_storage_dtype(name, shape, want);
    return dtype_is_quantized(target) ? target : (quantized ? DType::F16 : stored);
  }
  return quantized ? want : stored;  // f32: the reference path widens quantized weights
}

}  // namespace

const char* compute_type_choices() {
  return "auto, f32, f16, bf16, fp8, int8, int8_float16, int8_float32, q8_0, q5_0, q5_1, q4_0, q4_1, q2_k, q3_k, q4_k, "
         "q5_k, q6_k";
}

ComputeType compute_type_named(const std::string& name) {
  ComputeType ct;
  ct.name = name;
  if (name == "auto" || name.empty()) {
    ct.name = "auto";
  } else if (name == "f32" || name == "float32") {
    ct.name = "f32";
    ct.weights = DType::F32;
  } else if (name == "f16" || name == "float16" || name == "bf16" || name == "bfloat16") {
    ct.name = name[0] == 'b' ? "bf16" : "f16";  // the GPU's activation dtypes (core/backend.h)
    ct.cpu = false;
  } else if (compute_type_fp8(name)) {
    ct.name = "fp8";  // f16 activations, encoder products on e4m3 operands (core/cuda/cuda_fp8_products.cc)
    ct.cpu = false;
  } else if (name == "int8" || name == "int8_float16" || name == "int8_float32") {
    ct.name = name;
    ct.weights = DType::Q8_0;
    ct.cross_kv = name == "int8_float32" ? DType::F32 : name == "int8_float16" ? DType::F16 : DType::Q8_0;
    ct.gpu = false;
  } else if (auto q = quant::parse_name(name)) {
    ct.name = quant::block_info(*q).name;
    ct.weights = *q;
    ct.requantize = true;
    ct.cross_kv = DType::Q8_0;
    ct.gpu = false;
  } else {
    refuse("unknown compute type '" + name + "': use " + compute_type_choices());
  }
  return ct;
}

void check_compute_type(const ComputeType& ct, Device device) {
  if (device == Device::Cuda && !ct.gpu)
    refuse(ct.name + " runs on the CPU only (quantized kernels); on the GPU use auto, f32, f16, bf16 or fp8");
  if (device == Device::Cpu && !ct.cpu)
    refuse(ct.name + " is a GPU compute type; on the CPU use auto, f32, int8 or a ggml type such as q8_0");
}

ComputeType resolve_compute_type(ComputeType ct, const Checkpoint& checkpoint, Device device) {
  check_compute_type(ct, device);
  // A quantized checkpoint is run for speed: keep its cross-attention K/V in q8_0 too.
  if (ct.name == "auto" && device == Device::Cpu && dtype_is_quantized(checkpoint.dtype)) ct.cross_kv = DType::Q8_0;
  return ct;
}

std::shared_ptr<const Checkpoint> apply_compute_type(std::shared_ptr<const Checkpoint> checkpoint,
                                                     const ComputeType& ct, Device device) {
  std::vector<std::pair<std::string, DType>> changes;
  for (const auto& [name, shape] : expected_tensors(checkpoint->hparams)) {
    const Tensor& t = checkpoint->weights.get(name);
    const DType target = storage_for(name, t.shape(), t.dtype(), ct, device);
    if (target != t.dtype()) changes.emplace_back(name, target);
  }
  if (changes.empty()) return checkpoint;
  auto out = std::make_shared<Checkpoint>(*checkpoint);  // tensors share storage until replaced
  for (const auto& [name, target] : changes) out->weights.add(name, loaders::cast_tensor(checkpoint->weights.get(name), target));
  out->dtype = loaders::dominant_dtype(out->weights);
  return out;
}

std::string describe(const ComputeType& ct, const Checkpoint& checkpoint, DType cross_kv) {
  std::string text = ct.name + " (weights " + dtype_name(checkpoint.dtype);
  if (ct.name == "auto" || !ct.weights) text += " as stored";
  return text + ", cross K/V " + dtype_name(cross_kv) + ")";
}

Device device_of(const std::string& device) {
  if (device == "cpu") return Device::Cpu;
  if (device == "auto") return cuda_available() ? Device::Cuda : Device::Cpu;
  return Device::Cuda;
}

}  // namespace hark
