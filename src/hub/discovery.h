// Finds every usable checkpoint in hark's model directory, the Hugging Face caches and
// whisper.cpp's model folders. Read-only: nothing outside hark's directory is touched.
#pragma once

#include <string>
#include <vector>

#include "hub/inspect.h"
#include "hub/paths.h"

namespace hark::hub {

// In search order (hark, then each HF cache, then each whisper.cpp folder); a checkpoint
// reachable through several paths is listed once, under the first.
std::vector<ModelInfo> discover_models(const SearchPaths& paths);

// The snapshot folder of an HF cache repo folder (…/models--org--name) for `revision`:
// refs/<revision> when present, snapshots/<revision> for a commit hash, else the newest
// snapshot. "" when the folder has no snapshot.
std::string hf_cache_snapshot(const std::string& repo_folder, const std::string& revision = "main");

// The HF cache folder name of a repo: "models--org--name".
std::string hf_cache_folder_name(const std::string& repo_id);

}  // namespace hark::hub
