#include "serve/api_error.h"

#include <nlohmann/json.hpp>

namespace hark::serve {

ApiError to_api_error(const hark::Error& error) {
  const std::string msg = error.what();
  switch (error.code()) {
    case ErrorCode::InvalidArgument: return ApiError(400, "invalid_request_error", "invalid_value", msg);
    case ErrorCode::InvalidAudio: return ApiError(400, "invalid_request_error", "invalid_audio", msg);
    case ErrorCode::AudioTooShort: return ApiError(400, "invalid_request_error", "audio_too_short", msg);
    // An audio container FFmpeg cannot read is undecodable input (400); 415 is reserved
    // for request content types, which the routes reject themselves.
    case ErrorCode::UnsupportedFormat: return ApiError(400, "invalid_request_error", "unsupported_audio", msg);
    case ErrorCode::TooLarge: return ApiError(413, "invalid_request_error", "request_too_large", msg);
    case ErrorCode::NotFound: return ApiError(404, "invalid_request_error", "not_found", msg);
    case ErrorCode::Conflict: return ApiError(409, "invalid_request_error", "conflict", msg);
    case ErrorCode::Cancelled: return ApiError(kStatusClientClosed, "invalid_request_error", "client_closed_request", msg);
    case ErrorCode::Unavailable:
    case ErrorCode::ModelFormat: return ApiError(503, "model_unavailable", "model_unavailable", msg);
    case ErrorCode::OutOfMemory: return ApiError(503, "server_error", "out_of_memory", msg);
    default: return ApiError(500, "server_error", to_string(error.code()), msg);
  }
}

ApiError to_api_error(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ApiError& e) {
    return e;
  } catch (const hark::Error& e) {
    return to_api_error(e);
  } catch (const std::bad_alloc&) {
    return ApiError(503, "server_error", "out_of_memory", "[serve] out of memory; retry with a shorter clip");
  } catch (const std::exception& e) {
    return ApiError(500, "server_error", "internal_error", std::string("[serve] internal error: ") + e.what());
  } catch (...) {
    return ApiError(500, "server_error", "internal_error", "[serve] unknown internal error");
  }
}

std::string error_body(const ApiError& error) {
  nlohmann::json body = {{"error", {{"message", error.what()}, {"type", error.type()}, {"code", error.code()}}}};
  // Messages may quote client bytes; replace invalid UTF-8 instead of throwing.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError bad_request(const std::string& message, const std::string& code) {
  return ApiError(400, "invalid_request_error", code, message);
}

}  // namespace hark::serve
