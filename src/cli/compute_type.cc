#include "cli/compute_type.h"

#include "model/compute_type.h"

namespace hark::cli {

CLI::Option* add_compute_type_option(CLI::App* cmd, std::string& target) {
  return cmd
      ->add_option("--compute-type", target,
                   std::string("How weights are held and multiplied: ") + compute_type_choices() +
                       " (auto: as stored; int8: 8-bit weights, CPU)")
      ->capture_default_str()
      ->check([](const std::string& value) {
        try {
          parse_compute_type(value);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      });
}

void check_compute_type_for_device(const std::string& compute_type, const std::string& device) {
  check_compute_type(parse_compute_type(compute_type), device_of(device));
}

}  // namespace hark::cli
