#include "cli/bench_server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include <httplib.h>

#include "audio/audio.h"
#include "hark/error.h"

namespace hark::cli {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Clip {
  std::string name;
  std::string bytes;
  double seconds = 0;
};

std::vector<Clip> load_clips(const std::string& where) {
  std::vector<fs::path> paths;
  if (fs::is_directory(where)) {
    for (const auto& e : fs::directory_iterator(where))
      if (e.is_regular_file()) paths.push_back(e.path());
  } else if (fs::is_regular_file(where)) {
    paths.push_back(where);
  } else {
    throw Error(ErrorCode::NotFound, "[bench] --clips " + where + " is neither a folder nor a file");
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Clip> clips;
  for (const auto& p : paths) {
    Clip c;
    try {
      c.seconds = decode_audio_file(p.string()).size() / 16000.0;  // what the server will hear
    } catch (const Error&) {
      continue;  // not audio (a README, a list): skipped
    }
    std::ifstream f(p, std::ios::binary);
    c.bytes.assign(std::istreambuf_iterator<char>(f), {});
    c.name = p.filename().string();
    clips.push_back(std::move(c));
  }
  if (clips.empty()) throw Error(ErrorCode::NotFound, "[bench] no audio files in " + where);
  return clips;
}

// Peak GPU memory in use while the run lasts, from nvidia-smi (a server on this machine).
class GpuMemoryWatch {
 public:
  GpuMemoryWatch() {
    thread_ = std::thread([this] {
      while (!stop_) {
        if (FILE* p = popen("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null", "r")) {
          double total = 0, v = 0;
          bool any = false;
          while (std::fscanf(p, "%lf", &v) == 1) total += v, any = true;
          if (pclose(p) == 0 && any) peak_mib_ = std::max(peak_mib_.load(), total);
        }
        for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }
  ~GpuMemoryWatch() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  double peak_mib() const { return peak_mib_; }  // 0: no GPU seen

 private:
  std::atomic<bool> stop_{false};
  std::atomic<double> peak_mib_{0};
  std::thread thread_;
};

struct Outcome {
  size_t clip = 0;  // index into the clips
  double ms = 0, audio_seconds = 0;
  double start_delay_ms = 0;  // sent this long after its scheduled arrival (open loop)
  int status = 0;  // HTTP status, or −1 when no response came
  std::string error;
};

// `since`: when the request's latency starts (its scheduled arrival in an open loop).
Outcome send_one(httplib::Client& client, const Clip& clip, const ServerBenchArgs& args, Clock::time_point since) {
  httplib::MultipartFormDataItems items = {{"file", clip.bytes, clip.name, "application/octet-stream"},
                                           {"model", "whisper-1", "", ""}};
  for (const std::string& f : args.fields) {
    const size_t eq = f.find('=');
    items.push_back({f.substr(0, eq), eq == std::string::npos ? "" : f.substr(eq + 1), "", ""});
  }
  Outcome o;
  o.start_delay_ms = std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  auto r = client.Post("/v1/audio/transcriptions", items);
  o.ms = std::chrono::duration<double, std::milli>(Clock::now() - since).count();
  if (!r) {
    o.status = -1;
    o.error = httplib::to_string(r.error());
  } else {
    o.status = r->status;
    if (r->status != 200) o.error = r->body.substr(0, 200);
  }
  o.audio_seconds = o.status == 200 ? clip.seconds : 0;
  return o;
}

}  // namespace

std::vector<double> poisson_arrivals(int count, double rate, uint64_t seed) {
  std::vector<double> at;
  if (count <= 0 || !(rate > 0)) return at;
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(rate);
  double t = 0;
  for (int i = 0; i < count; ++i) {
    at.push_back(t);
    t += gap(rng);
  }
  return at;
}

double percentile(std::vector<double> ms, double p) {
  if (ms.empty()) return 0;
  std::sort(ms.begin(), ms.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * ms.size()));
  return ms[std::clamp<size_t>(rank, 1, ms.size()) - 1];
}

namespace {

nlohmann::json latency_summary(const std::vector<double>& ms) {
  return {{"min", percentile(ms, 0)},
          {"p50", percentile(ms, 50)},
          {"p95", percentile(ms, 95)},
          {"p99", percentile(ms, 99)},
          {"max", percentile(ms, 100)},
          {"mean", ms.empty() ? 0 : std::accumulate(ms.begin(), ms.end(), 0.0) / ms.size()}};
}

// Latency per clip, shortest clip first: which lengths make the tail (a clip longer than
// one 30 s window waits for the encoder and the steps once per window).
nlohmann::json latency_by_clip(const std::vector<Clip>& clips, const std::vector<Outcome>& outcomes) {
  std::vector<std::vector<double>> ms(clips.size());
  for (const Outcome& o : outcomes) ms[o.clip].push_back(o.ms);
  std::vector<size_t> order(clips.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return clips[a].seconds < clips[b].seconds; });
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i : order) {
    if (ms[i].empty()) continue;
    nlohmann::json row = latency_summary(ms[i]);
    row["clip"] = clips[i].name;
    row["seconds"] = clips[i].seconds;
    row["requests"] = ms[i].size();
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

nlohmann::json run_server_bench(const ServerBenchArgs& args) {
  if (args.concurrency < 1) throw Error(ErrorCode::InvalidArgument, "[bench] --concurrency must be at least 1");
  if (args.rate < 0 || !std::isfinite(args.rate))
    throw Error(ErrorCode::InvalidArgument, "[bench] --rate must be a number of requests per second above 0 "
                                            "(or 0 for the closed loop)");
  const std::vector<Clip> clips = load_clips(args.clips);
  const int total = args.requests > 0 ? args.requests : static_cast<int>(clips.size()) * args.concurrency;
  httplib::Client probe(args.url);
  if (!args.api_key.empty()) probe.set_bearer_token_auth(args.api_key.c_str());
  auto health = probe.Get("/health");
  if (!health || health->status != 200)
    throw Error(ErrorCode::Unavailable, "[bench] no healthy server at " + args.url + " (GET /health failed)");

  // `concurrency` client threads, each with a connection of its own, running `body` to its end.
  auto run_clients = [&](const std::function<void(httplib::Client&)>& body) {
    std::vector<std::thread> clients;
    for (int c = 0; c < args.concurrency; ++c)
      clients.emplace_back([&] {
        httplib::Client client(args.url);
        client.set_read_timeout(static_cast<time_t>(args.timeout_sec), 0);
        client.set_write_timeout(static_cast<time_t>(args.timeout_sec), 0);
        if (!args.api_key.empty()) client.set_bearer_token_auth(args.api_key.c_str());
        body(client);
      });
    for (auto& t : clients) t.join();
  };
  std::mutex mutex;  // guards what the clients record

  // The open loop: a closed warm-up first (it loads the model), then `total` requests, request i
  // sent at `arrivals[i]` seconds from the start, or as soon as a client is free after it.
  //
  // The closed loop: one unbroken stream of requests. The warm-up's, then the measured
  // ones, then more of the same, not counted, until every measured one is answered. Without
  // that, the measured requests would start as one burst of `concurrency` requests after
  // the warm-up's last answer, and the last ones would finish with fewer and fewer clients
  // beside them: a burst queues every client at once, and a thinning end gives the
  // last requests a lighter server. Neither happens to a server whose clients keep sending.
  // The run is timed from the first measured request's send to the last measured answer.
  // Its throughput comes from the measured requests alone, by Little's law: a client is never
  // idle, so N clients spend the sum of the measured latencies over N of wall time on them,
  // whatever else the server serves meanwhile. Dividing their audio by the timed span
  // instead leaves out the unmeasured work the span holds at both ends (9–13 % of a run of
  // 64 requests from 8 clients); counting every answer within the span (`span_rtfx`, a
  // check) counts the warm-up's requests whole, though they all started at once and are
  // partly done when the span begins.
  std::vector<Outcome> outcomes;
  Clock::time_point started{}, finished{};
  int unmeasured_after = 0;
  struct Answer {
    Clock::time_point at;
    double audio_seconds;
  };
  std::vector<Answer> answers;  // the closed loop: every request's, measured or not
  GpuMemoryWatch gpu;
  if (args.rate > 0) {
    const std::vector<double> arrivals = poisson_arrivals(total, args.rate, args.seed);
    // `count` requests; with `open`, request i sent at arrivals[i] from the start, or as soon
    // as a client is free after it.
    auto run = [&](int count, bool open, std::vector<Outcome>* record) {
      std::atomic<int> next{0};
      const auto begin = Clock::now();
      run_clients([&](httplib::Client& client) {
        for (int i = next++; i < count; i = next++) {
          auto due = Clock::now();
          if (open) {
            due = begin + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(arrivals[static_cast<size_t>(i)]));
            std::this_thread::sleep_until(due);
          }
          const size_t clip = static_cast<size_t>(i) % clips.size();
          Outcome o = send_one(client, clips[clip], args, due);
          o.clip = clip;
          std::lock_guard lock(mutex);
          if (record) record->push_back(std::move(o));
        }
      });
      return begin;
    };
    run(args.warmup, false, nullptr);
    started = run(total, true, &outcomes);
    finished = Clock::now();
  } else {
    std::atomic<int> next{0};
    std::atomic<int> answered{0};  // measured requests answered so far
    run_clients([&](httplib::Client& client) {
      while (answered < total) {
        const int i = next++;
        const size_t clip = static_cast<size_t>(i) % clips.size();
        const auto sent = Clock::now();
        Outcome o = send_one(client, clips[clip], args, sent);
        const auto done = Clock::now();
        o.clip = clip;
        std::lock_guard lock(mutex);
        answers.push_back({done, o.audio_seconds});
        if (i < args.warmup) continue;
        if (i >= args.warmup + total) {
          ++unmeasured_after;
          continue;
        }
        if (outcomes.empty() || sent < started) started = sent;
        if (done > finished) finished = done;
        outcomes.push_back(std::move(o));
        ++answered;
      }
    });
  }
  gpu.stop();
  const double wall = outcomes.empty() ? 0 : std::chrono::duration<double>(finished - started).count();
  // Throughput: the open loop's measured requests are all it sends in its span; the closed
  // loop's come from its clients' time (above).
  double busy_seconds = wall;  // the time the throughput is over
  size_t in_span = 0;
  double in_span_audio = 0;
  if (args.rate <= 0) {
    double latency_sum = 0;
    for (const Outcome& o : outcomes) latency_sum += o.ms / 1000.0;
    busy_seconds = latency_sum / args.concurrency;
    for (const Answer& a : answers)
      if (a.at >= started && a.at <= finished) ++in_span, in_span_audio += a.audio_seconds;
  }

  std::vector<double> ms;
  double audio = 0;
  std::map<std::string, int> errors;
  for (const Outcome& o : outcomes) {
    ms.push_back(o.ms);
    audio += o.audio_seconds;
    if (o.status != 200) ++errors[std::to_string(o.status) + " " + o.error.substr(0, 80)];
  }
  nlohmann::json out = {
      {"url", args.url},
      {"concurrency", args.concurrency},
      {"clips", clips.size()},
      {"requests", outcomes.size()},
      {"errors", static_cast<int>(outcomes.size()) - static_cast<int>(std::count_if(outcomes.begin(), outcomes.end(),
                                                                                    [](auto& o) { return o.status == 200; }))},
      {"wall_seconds", wall},
      {"audio_seconds", audio},
      {"rtfx", busy_seconds > 0 ? audio / busy_seconds : 0},
      {"requests_per_second", busy_seconds > 0 ? outcomes.size() / busy_seconds : 0},
      {"latency_ms", latency_summary(ms)},
      {"latency_ms_by_clip", latency_by_clip(clips, outcomes)},
      {"error_kinds", errors}};
  if (args.rate <= 0) {
    // Requests sent around the measured ones and not counted (the closed loop's steady load).
    out["warmup"] = args.warmup;
    out["unmeasured_after"] = unmeasured_after;
    // The check: every answer within the timed span, over it.
    out["answered_in_span"] = in_span;
    out["span_rtfx"] = wall > 0 ? in_span_audio / wall : 0;
  }
  if (args.rate > 0) {
    // What was offered, against what was served (rtfx above): equal while the server keeps
    // up. A request sent more than 10 ms late found every client busy: the load outgrew
    // the concurrency, and its wait is in its latency.
    double scheduled_audio = 0;
    for (int i = 0; i < total; ++i) scheduled_audio += clips[static_cast<size_t>(i) % clips.size()].seconds;
    std::vector<double> delays;
    for (const Outcome& o : outcomes) delays.push_back(o.start_delay_ms);
    out["open_loop"] = {
        {"rate", args.rate},
        {"seed", args.seed},
        {"offered_audio_per_second", total > 0 ? args.rate * scheduled_audio / total : 0},  // mean clip × rate
        {"sent_late", std::count_if(delays.begin(), delays.end(), [](double d) { return d > 10; })},
        {"start_delay_ms", {{"p99", percentile(delays, 99)}, {"max", percentile(delays, 100)}}}};
  }
  if (gpu.peak_mib() > 0) out["gpu_memory_peak_mib"] = gpu.peak_mib();
  return out;
}

}  // namespace hark::cli
