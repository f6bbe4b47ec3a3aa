// hark bench --server URL (src/cli/cmd_bench.cc): a load generator. N clients replay the clips of a folder
// against a running server (POST /v1/audio/transcriptions, multipart, as OpenAI's SDKs
// send it) and the run reports throughput (audio seconds per second: the server's
// real-time factor under load), latency percentiles, errors, and the GPU memory in use
// when nvidia-smi is there.
//
// Two kinds of load. Closed (the default): each client sends its next request as soon as
// its last one is answered, so the server is always saturated and latency is whatever the
// queue makes it. Open (`rate` > 0): requests arrive at that mean rate whatever the server
// does (Poisson arrivals, seeded), as users do; at most `concurrency` are in flight, and a
// request's latency is counted from its scheduled arrival, so time spent waiting for a free
// client is latency too (no "coordinated omission": a slow server cannot slow the clock).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hark::cli {

struct ServerBenchArgs {
  std::string url;            // http://host:port
  std::string clips;          // a folder of audio files (or one file)
  int concurrency = 8;        // clients sending at once
  int requests = 0;           // measured requests (0: one pass over the clips per client)
  int warmup = 0;             // requests sent first and not counted (closed loop)
  double rate = 0;            // open loop: mean arrivals per second (0: closed loop)
  uint64_t seed = 1;          // the open loop's arrival times
  std::vector<std::string> fields;  // extra form fields, name=value
  std::string api_key;
  double timeout_sec = 600;
  std::string json;           // write the report here too
};

// Latency percentile (nearest rank) of `ms`, p in [0, 100].
double percentile(std::vector<double> ms, double p);

// Arrival times in seconds from the start for `count` requests at `rate` per second
// (exponential gaps, the first at 0): the open loop's schedule.
std::vector<double> poisson_arrivals(int count, double rate, uint64_t seed);

nlohmann::json run_server_bench(const ServerBenchArgs& args);

}  // namespace hark::cli
