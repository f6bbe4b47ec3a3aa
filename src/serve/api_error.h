// HTTP-facing errors. Library code throws hark::Error; the server converts it to a
// status plus OpenAI's {error:{message,type,code}} body here and nowhere else.
#pragma once

#include <stdexcept>
#include <string>

#include "hark/error.h"

namespace hark::serve {

// An error that already knows its HTTP status (401, 415, 429 ... have no ErrorCode).
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, std::string code, const std::string& message)
      : std::runtime_error(message), status_(status), type_(std::move(type)), code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_, code_;
};

// 499 is nginx's "client closed request": logged when a client goes away mid-job.
inline constexpr int kStatusClientClosed = 499;

ApiError to_api_error(const hark::Error& error);
// Any exception → ApiError (unknown exceptions become 500 server_error).
ApiError to_api_error(std::exception_ptr error);
// The JSON body {"error":{"message","type","code"}}.
std::string error_body(const ApiError& error);

ApiError bad_request(const std::string& message, const std::string& code = "invalid_value");

}  // namespace hark::serve
