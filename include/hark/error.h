// hark's one error type. Library code throws hark::Error; the CLI turns it into an
// exit code and the server into an HTTP status, only at those edges.
#pragma once

#include <stdexcept>
#include <string>

namespace hark {

enum class ErrorCode {
  InvalidArgument,    // a bad option or request field
  InvalidAudio,       // undecodable, empty, truncated or absurd audio
  AudioTooShort,      // shorter than the 0.1 s minimum
  TooLarge,           // over a configured size or duration limit
  UnsupportedFormat,  // a container/codec/model format hark does not read
  NotFound,           // a file, model, tensor or session that does not exist
  Io,                 // the operating system refused a read or write
  ModelFormat,        // a checkpoint that is malformed or mis-shaped
  Unavailable,        // a device, backend or model that cannot be used now
  Cancelled,          // the caller gave up (client disconnected, Ctrl-C)
  OutOfMemory,        // an allocation failed (host or device)
  Network,            // a download failed
  Checksum,           // downloaded data did not match its published hash
  Conflict,           // the object is in the wrong state (finished session, ...)
  Internal,           // a bug: please report it
};

const char* to_string(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace hark
