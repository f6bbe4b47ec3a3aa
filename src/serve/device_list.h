// The --device value of `hark serve`: one device ("cpu", "cuda", "cuda:N", "auto") or a
// list of GPUs for one engine worker each ("cuda:0,cuda:1", "cuda:all"). Parsed and
// validated at start-up so a typo fails at once instead of on the first request.
#pragma once

#include <string>
#include <vector>

namespace hark::serve {

struct DeviceSelection {
  // Canonical names: "cpu", "auto", "cuda" (the default GPU), "cuda:N"; several only for GPUs.
  std::vector<std::string> devices;
  bool all_gpus = false;  // cuda:all: every visible GPU, enumerated when the workers start

  // More than one engine worker was asked for.
  bool several() const { return all_gpus || devices.size() > 1; }
};

// Throws hark::Error(InvalidArgument) naming the bad entry and the accepted forms.
DeviceSelection parse_device_selection(const std::string& text);

}  // namespace hark::serve
