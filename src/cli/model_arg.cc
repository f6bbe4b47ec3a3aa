#include "cli/model_arg.h"

#include "hub/resolve.h"
#include "model/synthetic.h"

namespace hark::cli {

std::shared_ptr<const Checkpoint> open_model_arg(const std::string& spec, const std::string& synthetic_dtype) {
  const std::string prefix = "synthetic:";
  if (spec.rfind(prefix, 0) == 0) {
    DType dtype = synthetic_dtype == "f16" ? DType::F16 : synthetic_dtype == "bf16" ? DType::BF16 : DType::F32;
    if (synthetic_dtype != "f32" && synthetic_dtype != "f16" && synthetic_dtype != "bf16")
      throw Error(ErrorCode::InvalidArgument, "[model] --dtype must be f32, f16 or bf16");
    return std::make_shared<const Checkpoint>(make_synthetic_checkpoint(hparams_for_size(spec.substr(prefix.size())), dtype));
  }
  return load_checkpoint(spec);
}

std::string engine_model_arg(const std::string& spec) {
  return spec.rfind("synthetic:", 0) == 0 ? spec : resolve_model(spec);
}

}  // namespace hark::cli
