#include "cli/batch.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "cli/manifest.h"
#include "hark/error.h"

namespace hark::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

[[noreturn]] void io_error(const std::string& what, const fs::path& path) {
  throw Error(ErrorCode::Io, "[cli] cannot " + what + " " + path.string() + ": " + std::strerror(errno) +
                                 "; check --output-dir (space, permissions)");
}

bool all_exist(const std::vector<fs::path>& paths) {
  std::error_code ec;
  for (const auto& p : paths)
    if (!fs::is_regular_file(p, ec)) return false;
  return true;
}

using Log = std::function<void(const std::string&)>;

// What one input came to: its transcript, or why it failed.
struct InputOutcome {
  Transcript transcript;
  std::string failure;
};

InputOutcome transcribe_one(const std::string& input, const BatchCallbacks& callbacks) {
  InputOutcome out;
  try {
    out.transcript = callbacks.transcribe(input);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Cancelled) throw;
    out.failure = e.what();
  } catch (const std::exception& e) {
    out.failure = e.what();
  }
  return out;
}

// Writes one input's outputs (a write failure throws: it ends the run) and counts it.
// `position` is "[k/N] " in the order inputs finish.
void record(const std::string& input, const InputOutcome& o, const std::string& position, const BatchOptions& options,
            BatchSummary& summary, const Log& log) {
  if (!o.failure.empty()) {
    ++summary.failed;
    log(position + "failed " + input + ": " + o.failure);
    return;
  }
  const auto paths = output_paths(input, options);
  for (size_t f = 0; f < paths.size(); ++f) write_atomically(paths[f], format_transcript(o.transcript, options.formats[f]));
  ++summary.done;
  summary.audio_sec += o.transcript.duration;
  log(position + "done " + input + " (" + fixed(o.transcript.duration, 1) + " s of audio)");
}

std::string position_of(size_t k, size_t n) {
  char position[48];
  std::snprintf(position, sizeof position, "[%zu/%zu] ", k, n);
  return position;
}

// `workers` threads, each taking the next input in list order (one worker: the list's
// order). The first fatal error (a cancel, an output that cannot be written) stops the
// workers from taking more; the inputs already in progress finish, and it is rethrown.
void run_workers(const std::vector<const std::string*>& todo, size_t workers, const BatchOptions& options,
                 const BatchCallbacks& callbacks, BatchSummary& summary, const Log& log) {
  std::mutex mutex;  // summary, log, fatal, finished
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr fatal;
  size_t finished = 0;
  auto worker = [&] {
    while (!stop.load()) {
      const size_t i = next.fetch_add(1);
      if (i >= todo.size()) return;
      try {
        InputOutcome o = transcribe_one(*todo[i], callbacks);
        std::lock_guard lock(mutex);
        record(*todo[i], o, position_of(++finished, todo.size()), options, summary, log);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!fatal) fatal = std::current_exception();
        stop = true;
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (fatal) std::rethrow_exception(fatal);
}

void run_inputs(const std::vector<const std::string*>& todo, const BatchOptions& options,
                const BatchCallbacks& callbacks, BatchSummary& summary, const Log& log) {
  if (todo.empty()) return;
  if (callbacks.prepare) {
    const auto t0 = Clock::now();
    callbacks.prepare();
    summary.load_sec = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  int parallel = std::max(1, options.parallel);
  if (callbacks.max_parallel) parallel = std::min(parallel, std::max(1, callbacks.max_parallel()));
  run_workers(todo, std::min<size_t>(static_cast<size_t>(parallel), todo.size()), options, callbacks, summary, log);
}

}  // namespace

std::string BatchSummary::line() const {
  const double rtfx = wall_sec > 0 ? audio_sec / wall_sec : 0;
  return "summary shard=" + (shard_label.empty() ? std::string("0/1") : shard_label) +
         " files=" + std::to_string(files) + " done=" + std::to_string(done) + " skipped=" + std::to_string(skipped) +
         " failed=" + std::to_string(failed) + " audio_hours=" + fixed(audio_sec / 3600, 3) +
         " wall_sec=" + fixed(wall_sec, 1) + " rtfx=" + fixed(rtfx, 1) + " load_sec=" + fixed(load_sec, 1);
}

void write_atomically(const fs::path& path, const std::string& body) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    errno = ec.value();
    io_error("create the folder for", path);
  }
  // Beside the target, so the rename stays within one file system and is atomic.
  // The process and a counter: workers of one run (--parallel) never share a temporary.
  static std::atomic<unsigned> serial{0};
  const fs::path temp =
      path.string() + ".hark-tmp." + std::to_string(getpid()) + "." + std::to_string(serial.fetch_add(1));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_error("create", temp);
  size_t written = 0;
  while (written < body.size()) {
    ssize_t n = ::write(fd, body.data() + written, body.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      errno = saved;
      io_error("write", temp);
    }
    written += static_cast<size_t>(n);
  }
  // Synced before the rename: after a node crash the name points to the whole text.
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(temp.c_str());
    io_error("sync", temp);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    io_error("rename onto", path);
  }
}

std::vector<fs::path> output_paths(const std::string& input, const BatchOptions& options) {
  const fs::path base = output_base(input, options.output_dir);
  std::vector<fs::path> out;
  for (OutputFormat f : options.formats) out.push_back(base.string() + "." + file_extension(f));
  return out;
}

BatchSummary run_batch(const std::vector<std::string>& inputs, const BatchOptions& options,
                       const BatchCallbacks& callbacks) {
  const auto started = Clock::now();
  BatchSummary summary;
  summary.files = inputs.size();
  summary.shard_label = options.shard_label;
  Log log = [&](const std::string& line) {
    if (callbacks.log) callbacks.log(line);
  };
  auto finish = [&] {
    summary.wall_sec = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
  };

  std::vector<const std::string*> todo;
  for (const auto& input : inputs) {
    if (options.resume && all_exist(output_paths(input, options))) ++summary.skipped;
    else todo.push_back(&input);
  }
  if (options.resume) log("--resume: " + std::to_string(summary.skipped) + " of " + std::to_string(inputs.size()) +
                          " files already done");
  try {
    run_inputs(todo, options, callbacks, summary, log);
  } catch (...) {
    log(finish().line() + " stopped=early");
    throw;
  }
  log(finish().line());
  return summary;
}

}  // namespace hark::cli
