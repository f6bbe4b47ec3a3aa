#include "hub/hash.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include <openssl/evp.h>

#include "hark/error.h"

namespace hark::hub {

struct Hasher::State {
  EVP_MD_CTX* ctx = nullptr;
  bool finished = false;
};

Hasher::Hasher(HashKind kind, std::uint64_t git_blob_size) : state_(std::make_unique<State>()) {
  state_->ctx = EVP_MD_CTX_new();
  const EVP_MD* md = kind == HashKind::Sha256 ? EVP_sha256() : EVP_sha1();
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx, md, nullptr) != 1)
    throw Error(ErrorCode::Internal, "[hub] cannot initialise the OpenSSL digest");
  if (kind == HashKind::GitBlobSha1) {
    std::string prefix = "blob " + std::to_string(git_blob_size);
    update(prefix.data(), prefix.size() + 1);  // includes the terminating NUL, as git does
  }
}

Hasher::~Hasher() { EVP_MD_CTX_free(state_->ctx); }

void Hasher::update(const void* data, size_t size) {
  if (state_->finished) throw Error(ErrorCode::Internal, "[hub] digest updated after it was finished");
  EVP_DigestUpdate(state_->ctx, data, size);
}

std::string Hasher::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(state_->ctx, digest, &length);
  state_->finished = true;
  static const char* kHex = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

// Reads with stdio in 1 MiB blocks: hashing, not I/O, is the limit (OpenSSL uses SHA-NI
// where the CPU has it).
std::string hash_file(const std::string& path, HashKind kind) {
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  FILE* f = ec ? nullptr : std::fopen(path.c_str(), "rb");
  if (!f) throw Error(ErrorCode::Io, "[hub] cannot read '" + path + "' to verify it: " + std::strerror(errno));
  Hasher hasher(kind, size);
  std::vector<char> block(1 << 20);
  size_t got = 0;
  while ((got = std::fread(block.data(), 1, block.size(), f)) > 0) hasher.update(block.data(), got);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw Error(ErrorCode::Io, "[hub] read error while verifying '" + path + "'");
  return hasher.hex_digest();
}

std::string sha256_hex(const std::string& bytes) {
  Hasher hasher(HashKind::Sha256);
  hasher.update(bytes.data(), bytes.size());
  return hasher.hex_digest();
}

}  // namespace hark::hub
