// Where runtime assets (tokenizer ranks, mel filters) live: $HARK_ASSETS, then
// <exe>/../share/hark, then the source tree's assets/ folder.
#pragma once

#include <string>

namespace hark {

std::string assets_dir();
// assets_dir() + "/" + name, throwing NotFound with the searched places when missing.
std::string asset_path(const std::string& name);

}  // namespace hark
