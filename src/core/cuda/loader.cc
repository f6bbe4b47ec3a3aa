// cuda_available() and make_cuda_backend() of a CUDA build: they load the CUDA backend
// module (libhark_cuda.so, plugin_api.h) on first use.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/cuda/plugin_api.h"

namespace hark {
namespace {

struct Module {
  HarkCudaDeviceCount device_count = nullptr;
  HarkCudaCreateBackend create = nullptr;
  std::string error;  // why it could not be loaded
};

std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("HARK_CUDA_MODULE"); env && *env) out.emplace_back(env);
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((exe.parent_path() / "libhark_cuda.so").string());
    out.push_back((exe.parent_path().parent_path() / "lib" / "hark" / "libhark_cuda.so").string());
  }
#ifdef HARK_CUDA_MODULE_BUILD_PATH
  out.emplace_back(HARK_CUDA_MODULE_BUILD_PATH);
#endif
  out.emplace_back("libhark_cuda.so");  // LD_LIBRARY_PATH
  return out;
}

const Module& module() {
  static Module m;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string tried;
    for (const std::string& path : candidates()) {
      if (path.find('/') != std::string::npos && !std::filesystem::exists(path)) continue;
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        tried += std::string("\n  ") + dlerror();
        continue;
      }
      m.device_count = reinterpret_cast<HarkCudaDeviceCount>(dlsym(handle, kHarkCudaDeviceCountSymbol));
      m.create = reinterpret_cast<HarkCudaCreateBackend>(dlsym(handle, kHarkCudaCreateBackendSymbol));
      if (m.device_count && m.create) return;  // kept loaded for the life of the process
      tried += "\n  " + path + ": not a hark CUDA module";
      m.device_count = nullptr;
      m.create = nullptr;
    }
    m.error = tried.empty() ? std::string("\n  libhark_cuda.so: not found next to the program or in ../lib/hark")
                            : tried;
  });
  return m;
}

}  // namespace

int cuda_device_count() {
  const Module& m = module();
  return m.device_count ? m.device_count() : 0;
}

bool cuda_available() {
  const Module& m = module();
  return m.device_count && m.device_count() > 0;
}

std::unique_ptr<Backend> make_cuda_backend(int device_index, const BackendOptions& options) {
  const DType act = parse_compute_type(options.compute_type, Device::Cuda);
  const Module& m = module();
  if (!m.create)
    throw Error(ErrorCode::Unavailable,
                "[cuda] cannot load the CUDA backend module (it needs the CUDA 13 runtime and cuBLAS):" + m.error +
                    "\nSet HARK_CUDA_MODULE to its path, install the CUDA libraries, or use --device cpu");
  int code = 0;
  char message[512] = {0};
  const unsigned flags = compute_type_fp8(options.compute_type) ? kHarkCudaFp8Products : 0u;
  Backend* backend = m.create(device_index, static_cast<int>(act), flags, &code, message, sizeof message);
  if (!backend) throw Error(static_cast<ErrorCode>(code), message);
  return std::unique_ptr<Backend>(backend);
}

}  // namespace hark
