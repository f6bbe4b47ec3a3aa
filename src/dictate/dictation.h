// One dictation take from start to transcript: capture into a Take, stream it to a
// Transcriber on an uploader thread while the terminal shows the level and the text so
// far, then finish. Whatever fails after recording started, the take is written to a
// WAV file and the failure names it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "dictate/capture.h"
#include "dictate/keys.h"
#include "dictate/transcriber.h"
#include "hark/error.h"

namespace hark::dictate {

struct DictationOptions {
  bool keys = false;              // a terminal drives the take (otherwise: start now, stop at end/signal)
  bool partial = true;            // ask for previews of the unfinished text
  double chunk_seconds = 0.5;     // audio per upload
  double max_chunk_seconds = 10;  // at most this much per upload (a file fed as fast as possible)
  double partial_every = 1.0;     // seconds between previews
  double max_seconds = 0;         // stop the take after this much audio (0: no limit)
  bool vad_gate = false;          // no speech in the take → empty transcript, nothing sent to finish
  std::string save_path;          // always keep the take here (--save)
  std::string save_dir;           // where a take that could not be transcribed is written
  HoldTiming timing;
};

struct TakeResult {
  bool started = false;      // false: the user quit before recording
  bool quit = false;         // the user asked to leave (q, Ctrl-C) during or before the take
  bool transcribed = false;
  std::string text;          // the transcript when transcribed
  std::string failure;       // one line when not transcribed
  ErrorCode failure_code = ErrorCode::Internal;
  std::string saved_path;    // the WAV, when one was written
  double seconds = 0;        // audio recorded
};

using SourceFactory = std::function<std::unique_ptr<AudioSource>()>;

// Stop requests from signals (SIGINT, SIGTERM, SIGHUP): the first one sets a flag that
// the take reads (stop recording; while waiting for the transcript: give up and keep
// the take), the one after ends the process as usual.
void install_stop_signals();
bool stop_requested();
void rearm_stop_signals();  // forget a handled signal and catch the next one too
void restore_stop_signals();  // the default handlers again

// Runs one take. Throws only for failures before recording starts (the transcriber's
// prepare() is the caller's); everything after is reported in TakeResult.
TakeResult run_take(Transcriber& transcriber, const SourceFactory& open_source, const DictationOptions& options);

}  // namespace hark::dictate
