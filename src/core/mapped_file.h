// A read-only memory map of a whole file. Checkpoint tensors are views into it, so the
// weights are paged in on first touch and shared between processes.
#pragma once

#include <memory>
#include <string>

namespace hark {

class MappedFile {
 public:
  // Throws hark::Error (NotFound / Io) with the path in the message.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const { return data_; }
  // Drops the whole pages inside [begin, begin + bytes) from this process's resident set
  // (bytes the loader copied elsewhere and never reads again; they fault back in from
  // the file if read).
  void release(const unsigned char* begin, size_t bytes) const;
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace hark
