// The `<file>.part` a download is written into: opened for appending where an earlier
// attempt stopped, locked so two `hark get` runs cannot interleave bytes, and reporting
// the exact errno of a failed write (disk full, size limit) instead of a bare failure.
#pragma once

#include <cstdint>
#include <string>

namespace hark::hub {

class PartFile {
 public:
  // Throws Io (with the reason) or Conflict (another process holds the lock).
  explicit PartFile(const std::string& path);
  ~PartFile();
  PartFile(const PartFile&) = delete;
  PartFile& operator=(const PartFile&) = delete;

  std::uint64_t size() const { return size_; }
  bool append(const char* data, size_t size);  // false on a failed write; see write_errno
  void truncate();                             // start over from byte 0
  int write_errno() const { return write_errno_; }
  void close();                                // flushes to disk; throws Io on failure

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
  int write_errno_ = 0;
};

// Explains an errno from creating or writing a file, with what to do about it.
std::string io_error_text(int error);

}  // namespace hark::hub
