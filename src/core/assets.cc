#include "core/assets.h"

#include <cstdlib>
#include <filesystem>

#include "hark/error.h"

namespace hark {
namespace fs = std::filesystem;

std::string assets_dir() {
  if (const char* env = std::getenv("HARK_ASSETS"); env && *env) return env;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = exe.parent_path().parent_path() / "share" / "hark";
    if (fs::exists(installed / "multilingual.tiktoken", ec)) return installed.string();
  }
  return std::string(HARK_SOURCE_DIR) + "/assets";
}

std::string asset_path(const std::string& name) {
  std::string path = assets_dir() + "/" + name;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(ErrorCode::NotFound, "[assets] '" + name + "' not found at " + path +
                                         "; set HARK_ASSETS to the folder holding hark's assets");
  return path;
}

}  // namespace hark
