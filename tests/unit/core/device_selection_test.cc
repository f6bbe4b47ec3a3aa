// Device selection without a GPU (the CI machine): "auto" falls back to the CPU, and every
// explicit request for CUDA fails with Unavailable and a message that says what to do,
// whether the CUDA module is missing, cannot load, or finds no device.
#include <gtest/gtest.h>

#include <string>

#include "core/backend.h"

namespace hark {
namespace {

TEST(DeviceSelection, AutoIsTheCpuWithoutAGpu) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA GPU is present";
  auto backend = make_backend("auto", {1});
  EXPECT_EQ(backend->device(), Device::Cpu);
}

TEST(DeviceSelection, CudaWithoutAGpuIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a CUDA GPU is present";
  for (const char* device : {"cuda", "cuda:0", "cuda:3"}) {
    try {
      make_backend(device, {1});
      ADD_FAILURE() << device << " did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Unavailable) << device;
      EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what();
    }
  }
}

TEST(DeviceSelection, BadNamesAreInvalidArguments) {
  for (const char* device : {"gpu", "cuda:x", "", "CPU"}) {
    try {
      make_backend(device, {1});
      ADD_FAILURE() << "'" << device << "' did not throw";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << device;
    }
  }
}

}  // namespace
}  // namespace hark
