#include "cli/batch.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>

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

void run_inputs(const std::vector<const std::string*>& todo, const BatchOptions& options,
                const BatchCallbacks& callbacks, BatchSummary& summary, const Log& log) {
  bool prepared = false;
  for (size_t i = 0; i < todo.size(); ++i) {
    const std::string& input = *todo[i];
    char position[48];
    std::snprintf(position, sizeof position, "[%zu/%zu] ", i + 1, todo.size());
    if (!prepared && callbacks.prepare) callbacks.prepare();
    prepared = true;
    Transcript t;
    std::string failure;
    try {
      t = callbacks.transcribe(input);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::Cancelled) throw;
      failure = e.what();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      ++summary.failed;
      log(std::string(position) + "failed " + input + ": " + failure);
      continue;
    }
    const auto paths = output_paths(input, options);
    for (size_t f = 0; f < paths.size(); ++f) write_atomically(paths[f], format_transcript(t, options.formats[f]));
    ++summary.done;
    summary.audio_sec += t.duration;
    log(std::string(position) + "done " + input + " (" + fixed(t.duration, 1) + " s of audio)");
  }
}

}  // namespace

std::string BatchSummary::line() const {
  const double rtfx = wall_sec > 0 ? audio_sec / wall_sec : 0;
  return "summary shard=" + (shard_label.empty() ? std::string("0/1") : shard_label) +
         " files=" + std::to_string(files) + " done=" + std::to_string(done) + " skipped=" + std::to_string(skipped) +
         " failed=" + std::to_string(failed) + " audio_hours=" + fixed(audio_sec / 3600, 3) +
         " wall_sec=" + fixed(wall_sec, 1) + " rtfx=" + fixed(rtfx, 1);
}

void write_atomically(const fs::path& path, const std::string& body) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    errno = ec.value();
    io_error("create the folder for", path);
  }
  // Beside the target, so the rename stays within one file system and is atomic.
  const fs::path temp = path.string() + ".hark-tmp." + std::to_string(getpid());
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
