#include "cli/compute_type.h"

#include "model/compute_type.h"

namespace hark::cli {

CLI::Option* add_compute_type_option(CLI::App* cmd, std::string& target) {
  return cmd
      ->add_option("--compute-type", target,
                   std::string("auto (f16 activations on a GPU, f32 on the CPU) | f32 (the reference path) | f16 | "
                               "bf16 (GPU) | fp8 (GPU, compute capability 8.9+: f16 with the encoder's convolutions and "
                               "MLP in e4m3; docs/gpu.md) | int8, int8_float16, int8_float32, q8_0 ... q6_k (CPU: quantized "
                               "weights; docs/models-formats.md)"))
      ->capture_default_str()
      ->check([](const std::string& value) {
        try {
          compute_type_named(value);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      });
}

void check_compute_type_for_device(const std::string& compute_type, const std::string& device) {
  check_compute_type(compute_type_named(compute_type), device_of(device));
}

}  // namespace hark::cli
