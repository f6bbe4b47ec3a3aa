// Streaming digests for verifying downloads: SHA-256 (what the hub publishes for LFS
// files) and the git blob SHA-1 (the only hash the hub gives for small, non-LFS files).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace hark::hub {

enum class HashKind { Sha256, GitBlobSha1 };

class Hasher {
 public:
  // For GitBlobSha1 the blob size must be known up front: git hashes "blob <size>\0" first.
  explicit Hasher(HashKind kind, std::uint64_t git_blob_size = 0);
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;

  void update(const void* data, size_t size);
  std::string hex_digest();  // lower-case hex; the hasher cannot be updated afterwards

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Digest of a whole file, read in large blocks. Throws Io when it cannot be read.
std::string hash_file(const std::string& path, HashKind kind);
std::string sha256_hex(const std::string& bytes);

}  // namespace hark::hub
