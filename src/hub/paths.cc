#include "hub/paths.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace hark::hub {

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::string(value) : std::string();
}

namespace {

std::string home() { return env("HOME").empty() ? std::string("/root") : env("HOME"); }

std::string xdg_cache() { return env("XDG_CACHE_HOME").empty() ? home() + "/.cache" : env("XDG_CACHE_HOME"); }

void add_unique(std::vector<std::string>& list, const std::string& path) {
  if (!path.empty() && std::find(list.begin(), list.end(), path) == list.end()) list.push_back(path);
}

}  // namespace

std::string expand_home(const std::string& path) {
  if (path == "~") return home();
  if (path.rfind("~/", 0) == 0) return home() + path.substr(1);
  return path;
}

std::string hark_home() {
  if (!env("HARK_HOME").empty()) return expand_home(env("HARK_HOME"));
  return xdg_cache() + "/hark";
}

std::string repo_dir_name(const std::string& repo_id) {
  std::string out = repo_id;
  auto slash = out.find('/');
  if (slash != std::string::npos) out.replace(slash, 1, "--");
  return out;
}

std::string repo_id_from_dir_name(const std::string& dir_name) {
  auto sep = dir_name.find("--");
  if (sep == std::string::npos || sep == 0 || sep + 2 >= dir_name.size()) return "";
  return dir_name.substr(0, sep) + "/" + dir_name.substr(sep + 2);
}

SearchPaths SearchPaths::from_environment() {
  SearchPaths paths;
  paths.hark_models = hark_home() + "/models";

  // Same precedence as huggingface_hub: HF_HUB_CACHE, then the legacy name, then HF_HOME/hub.
  add_unique(paths.hf_caches, expand_home(env("HF_HUB_CACHE")));
  add_unique(paths.hf_caches, expand_home(env("HUGGINGFACE_HUB_CACHE")));
  if (!env("HF_HOME").empty()) add_unique(paths.hf_caches, expand_home(env("HF_HOME")) + "/hub");
  add_unique(paths.hf_caches, xdg_cache() + "/huggingface/hub");
  add_unique(paths.hf_caches, home() + "/.cache/huggingface/hub");

  // WHISPER_CPP_MODELS may hold several folders separated by ':'.
  std::stringstream list(env("WHISPER_CPP_MODELS"));
  for (std::string item; std::getline(list, item, ':');) add_unique(paths.whisper_cpp, expand_home(item));
  add_unique(paths.whisper_cpp, "models");
  add_unique(paths.whisper_cpp, "whisper.cpp/models");
  add_unique(paths.whisper_cpp, home() + "/whisper.cpp/models");
  add_unique(paths.whisper_cpp, home() + "/.local/share/whisper.cpp/models");
  return paths;
}

}  // namespace hark::hub
