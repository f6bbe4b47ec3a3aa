// Where checkpoints live: hark's own model directory (written by `hark get`) and the
// folders other tools fill, which hark only reads. The order of each list is the
// search order; docs/models.md documents it.
#pragma once

#include <string>
#include <vector>

namespace hark::hub {

struct SearchPaths {
  std::string hark_models;               // $HARK_HOME/models: `hark get` writes here
  std::vector<std::string> hf_caches;    // Hugging Face hub caches (models--org--name/...)
  std::vector<std::string> whisper_cpp;  // folders holding whisper.cpp ggml-*.bin files

  // Built from HARK_HOME, XDG_CACHE_HOME, HF_HUB_CACHE, HF_HOME, WHISPER_CPP_MODELS, HOME.
  static SearchPaths from_environment();
};

// $HARK_HOME, else $XDG_CACHE_HOME/hark, else ~/.cache/hark.
std::string hark_home();
// The directory `hark get` fills for a repo: <hark_models>/<org>--<name>.
std::string repo_dir_name(const std::string& repo_id);
// Inverse of repo_dir_name ("openai--whisper-tiny" → "openai/whisper-tiny"); "" if not of that form.
std::string repo_id_from_dir_name(const std::string& dir_name);
// The environment variable `name`, or "" when it is unset.
std::string env(const char* name);
// Expands a leading "~/" with $HOME.
std::string expand_home(const std::string& path);

}  // namespace hark::hub
