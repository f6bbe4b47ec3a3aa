// hark bench --server URL (src/cli/cmd_bench.cc): a load generator. N clients replay the clips of a folder
// against a running server (POST /v1/audio/transcriptions, multipart, as OpenAI's SDKs
// send it) and the run reports throughput (audio seconds per second: the server's
// real-time factor under load), latency percentiles, errors, and the GPU memory in use
// when nvidia-smi is there.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hark::cli {

struct ServerBenchArgs {
  std::string url;            // http://host:port
  std::string clips;          // a folder of audio files (or one file)
  int concurrency = 8;        // clients sending at once
  int requests = 0;           // measured requests (0: one pass over the clips per client)
  int warmup = 0;             // requests sent first and not counted
  std::vector<std::string> fields;  // extra form fields, name=value
  std::string api_key;
  double timeout_sec = 600;
  std::string json;           // write the report here too
};

// Latency percentile (nearest rank) of `ms`, p in [0, 100].
double percentile(std::vector<double> ms, double p);

nlohmann::json run_server_bench(const ServerBenchArgs& args);

}  // namespace hark::cli
