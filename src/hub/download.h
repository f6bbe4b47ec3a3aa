// `hark get`: downloads a checkpoint from a Hugging Face hub (or a mirror) into hark's
// model directory. Each file goes to <file>.part, resumes with Range requests after a
// broken connection (within this run, or in a later one), and is renamed into place
// only once its size and SHA-256 match what the hub publishes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "hub/http.h"
#include "model/checkpoint.h"

namespace hark::hub {

struct DownloadProgress {
  std::string file;         // path inside the repo
  int index = 0;            // 1-based among `count` files to fetch
  int count = 0;
  std::uint64_t done = 0;   // bytes on disk, including what an earlier run left
  std::uint64_t total = 0;  // 0 when unknown
  std::uint64_t resumed_from = 0;
  bool verifying = false;   // all bytes are in; the checksum is being computed
  bool finished = false;
};

struct GetOptions {
  std::string name;          // see parse_get_target
  std::string token;         // "" → $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, then the token file of huggingface-cli
  std::string endpoint;      // "" → $HF_ENDPOINT, else https://huggingface.co
  std::string revision = "main";
  std::string dir;           // "" → $HARK_HOME/models/<org>--<name>
  std::optional<CheckpointFormat> format;
  bool force = false;        // download even when the checkpoint is already on disk
  int max_retries = 4;       // extra attempts per file after a broken connection
  double retry_delay_s = 1.0;  // doubled after each failed attempt
  HttpConfig http;           // timeouts; the token is filled in from the above
  std::function<void(const DownloadProgress&)> on_progress;
  std::function<void(const std::string&)> on_message;
};

struct GetResult {
  std::string path;     // the checkpoint directory, or the file for ggml/URL downloads
  std::string repo;     // "" for a plain URL
  std::string commit;   // what the revision resolved to
  std::vector<std::string> downloaded;  // files fetched now
  std::vector<std::string> reused;      // files already present and verified
  bool already_on_disk = false;         // found by discovery; nothing was fetched
};

GetResult get_model(const GetOptions& options);

// The token `hark get` sends when none is given: $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, then
// the file huggingface-cli login writes ($HF_TOKEN_PATH or $HF_HOME/token).
std::string default_hub_token();
// $HF_ENDPOINT or https://huggingface.co, without a trailing slash.
std::string default_hub_endpoint();

}  // namespace hark::hub
