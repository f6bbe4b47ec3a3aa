#include "hub/discovery.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace hark::hub {
namespace fs = std::filesystem;
namespace {

// Collects results, skipping a checkpoint already found through another path.
class Collector {
 public:
  explicit Collector(std::vector<ModelInfo>& out) : out_(out) {}

  void add(const fs::path& path, const std::string& name, const std::string& source) {
    std::error_code ec;
    auto canonical = fs::weakly_canonical(path, ec);
    std::string key = ec ? fs::absolute(path).string() : canonical.string();
    if (seen_.count(key)) return;
    auto info = inspect_checkpoint(path.string());
    if (!info) return;
    seen_.insert(key);
    info->name = name;
    info->source = source;
    info->path = fs::absolute(path).lexically_normal().string();
    out_.push_back(std::move(*info));
  }

  // ggml files sitting in `dir` (whisper.cpp names them ggml-<size>.bin).
  void add_ggml_files(const fs::path& dir, const std::string& source, bool require_ggml_prefix) {
    for (const auto& file : sorted_entries(dir)) {
      std::string name = file.filename().string();
      if (!name.ends_with(".bin") || name.rfind("for-tests-", 0) == 0) continue;
      if (require_ggml_prefix && name.rfind("ggml-", 0) != 0) continue;
      std::error_code ec;
      if (fs::is_regular_file(file, ec)) add(file, name.substr(0, name.size() - 4), source);
    }
  }

  static std::vector<fs::path> sorted_entries(const fs::path& dir) {
    std::vector<fs::path> entries;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(it->path());
    std::sort(entries.begin(), entries.end());
    return entries;
  }

 private:
  std::vector<ModelInfo>& out_;
  std::set<std::string> seen_;
};

void scan_hark_models(const std::string& root, Collector& collect) {
  for (const auto& entry : Collector::sorted_entries(root)) {
    std::string name = entry.filename().string();
    if (name.empty() || name[0] == '.') continue;  // staging folders and the like
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      std::string repo = repo_id_from_dir_name(name);
      collect.add(entry, repo.empty() ? name : repo, "hark");
      collect.add_ggml_files(entry, "hark", false);
    } else if (name.ends_with(".bin")) {
      collect.add(entry, name.substr(0, name.size() - 4), "hark");
    }
  }
}

// huggingface_hub's layout: models--org--name/{blobs,refs,snapshots/<commit>/<file> -> blob}.
// Blobs still downloading are named *.incomplete and not yet linked from a snapshot.
void scan_hf_cache(const std::string& root, Collector& collect) {
  for (const auto& entry : Collector::sorted_entries(root)) {
    std::string name = entry.filename().string();
    if (name.rfind("models--", 0) != 0) continue;
    std::string snapshot = hf_cache_snapshot(entry.string());
    if (snapshot.empty()) continue;
    collect.add(snapshot, repo_id_from_dir_name(name.substr(8)), "hf-cache");
    collect.add_ggml_files(snapshot, "hf-cache", false);
  }
}

bool is_commit_hash(const std::string& s) {
  return s.size() == 40 && std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::string hf_cache_folder_name(const std::string& repo_id) { return "models--" + repo_dir_name(repo_id); }

std::string hf_cache_snapshot(const std::string& repo_folder, const std::string& revision) {
  fs::path snapshots = fs::path(repo_folder) / "snapshots";
  std::error_code ec;
  std::ifstream ref(fs::path(repo_folder) / "refs" / revision);
  std::string commit;
  if (ref && std::getline(ref, commit) && fs::is_directory(snapshots / commit, ec)) return (snapshots / commit).string();
  if (is_commit_hash(revision) && fs::is_directory(snapshots / revision, ec)) return (snapshots / revision).string();
  // No usable ref (a cache filled with an explicit revision): take the newest snapshot.
  fs::path newest;
  fs::file_time_type newest_time{};
  for (const auto& entry : Collector::sorted_entries(snapshots)) {
    auto time = fs::last_write_time(entry, ec);
    if (!ec && fs::is_directory(entry, ec) && (newest.empty() || time > newest_time)) newest = entry, newest_time = time;
  }
  return newest.string();
}

std::vector<ModelInfo> discover_models(const SearchPaths& paths) {
  std::vector<ModelInfo> found;
  Collector collect(found);
  if (!paths.hark_models.empty()) scan_hark_models(paths.hark_models, collect);
  for (const auto& cache : paths.hf_caches) scan_hf_cache(cache, collect);
  for (const auto& dir : paths.whisper_cpp) collect.add_ggml_files(dir, "whisper.cpp", true);
  return found;
}

}  // namespace hark::hub
