// The file loop of `hark transcribe --manifest`: resumable, failure-tolerant, one
// atomically written output per input and format, and a summary line at the end.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "hark/result.h"
#include "output/writers.h"

namespace hark::cli {

// Exit status of a batch in which some files failed (the others were written).
inline constexpr int kExitSomeFilesFailed = 6;

struct BatchOptions {
  std::filesystem::path output_dir;
  std::vector<OutputFormat> formats = {OutputFormat::Txt};
  bool resume = false;       // skip inputs whose every output already exists
  std::string shard_label;   // "K/N" for the log and the summary
  // Inputs transcribed at once, each on a thread of its own (an engine opened with
  // max_batch > 1 batches their model work); 1: one after the other, in list order.
  int parallel = 1;
};

struct BatchCallbacks {
  // Runs once, before the first input that needs transcribing (loads the model); what it
  // throws ends the batch. A fully resumed shard never calls it.
  std::function<void()> prepare;
  // Decodes and transcribes one input; what it throws marks that input failed.
  std::function<Transcript(const std::string& path)> transcribe;
  // After prepare(): how many transcribe() calls may run at once (null: any); caps
  // BatchOptions::parallel, e.g. to 1 for an engine that runs one job at a time.
  std::function<int()> max_parallel;
  std::function<void(const std::string& line)> log;  // one line, no newline
};

struct BatchSummary {
  size_t files = 0, done = 0, skipped = 0, failed = 0;
  double audio_sec = 0;  // of the files transcribed in this run
  double wall_sec = 0;   // the whole loop, model load included
  double load_sec = 0;   // of which prepare() (the model load)
  std::string shard_label;
  // "summary shard=K/N files=… done=… skipped=… failed=… audio_hours=… wall_sec=… rtfx=…
  // load_sec=…" (rtfx: audio over the whole wall, load included)
  std::string line() const;
};

// Writes `body` to a temporary file beside `path`, syncs it, and renames it over `path`:
// readers and --resume see either nothing or the whole file. Throws Io.
void write_atomically(const std::filesystem::path& path, const std::string& body);

// The output files of one input, one per format.
std::vector<std::filesystem::path> output_paths(const std::string& input, const BatchOptions& options);

// Transcribes `inputs` in order (options.parallel at a time: each is logged when it
// finishes). Failed inputs are logged and counted, never fatal; an output that cannot be
// written, a failed prepare() or a cancel (Ctrl-C) ends the run (with parallel workers,
// once the inputs already in progress have finished).
BatchSummary run_batch(const std::vector<std::string>& inputs, const BatchOptions& options,
                       const BatchCallbacks& callbacks);

}  // namespace hark::cli
