#include "hark/error.h"

namespace hark {

const char* to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid_argument";
    case ErrorCode::InvalidAudio: return "invalid_audio";
    case ErrorCode::AudioTooShort: return "audio_too_short";
    case ErrorCode::TooLarge: return "too_large";
    case ErrorCode::UnsupportedFormat: return "unsupported_format";
    case ErrorCode::NotFound: return "not_found";
    case ErrorCode::Io: return "io_error";
    case ErrorCode::ModelFormat: return "model_format";
    case ErrorCode::Unavailable: return "unavailable";
    case ErrorCode::Cancelled: return "cancelled";
    case ErrorCode::OutOfMemory: return "out_of_memory";
    case ErrorCode::Network: return "network_error";
    case ErrorCode::Checksum: return "checksum_mismatch";
    case ErrorCode::Conflict: return "conflict";
    case ErrorCode::Internal: return "internal_error";
  }
  return "unknown";
}

}  // namespace hark
