// What `hark get NAME` fetches: NAME turned into a repo (or URL) and, from the repo's
// file list, only the files the loader reads. Network-free, so it is tested directly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/checkpoint.h"

namespace hark::hub {

struct GetTarget {
  std::string repo;      // "openai/whisper-tiny"; "" for a plain URL
  std::string revision;  // from the URL when it names one, else the caller's
  std::string file;      // one file of the repo ("ggml-tiny.bin"), "" to choose the checkpoint files
  std::string url;       // a plain URL outside the hub's layout
  std::string endpoint;  // the hub a URL named ("https://huggingface.co"), else ""
};

// NAME: a short name ("turbo", "mlx:small.en", "ggml-base.en"), a repo id ("org/name"),
// a file in a repo ("org/name/ggml-x.bin") or a URL (hub page, hub resolve URL, or any
// other URL of a single file). Throws InvalidArgument for anything else.
GetTarget parse_get_target(const std::string& name, std::optional<CheckpointFormat> format,
                           const std::string& revision);

struct RemoteFile {
  std::string name;         // path inside the repo
  std::uint64_t size = 0;   // 0 when unknown
  std::string sha256;       // LFS files: what the hub publishes
  std::string git_sha1;     // small files: git's blob id
};

struct RepoListing {
  std::string commit;       // the revision resolved to a commit ("sha")
  std::vector<RemoteFile> files;
};

// Parses the JSON of /api/models/<repo>/revision/<rev>?blobs=true.
RepoListing parse_repo_listing(const nlohmann::json& info);

// The files to fetch, in download order: weights first and config.json last, so a folder
// only looks like a checkpoint once everything else is in place. Throws NotFound or
// UnsupportedFormat (naming what the repo has instead) when nothing usable is there.
std::vector<RemoteFile> choose_files(const RepoListing& listing, const std::string& wanted_file,
                                     const std::string& repo);

// True for a path inside the repo that is safe to create under the target folder.
bool is_safe_relative_path(const std::string& name);

}  // namespace hark::hub
