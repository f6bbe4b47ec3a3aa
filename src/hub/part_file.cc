#include "hub/part_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "hark/error.h"

namespace hark::hub {

std::string io_error_text(int error) {
  switch (error) {
    case ENOSPC:
    case EDQUOT: return "the disk is full: free some space, or pass --dir (or set HARK_HOME) to another disk";
    case EFBIG: return "the file exceeds the file system's (or the process's) size limit";
    case EROFS: return "the file system is read-only: pass --dir DIR or set HARK_HOME to a writable place";
    case EACCES:
    case EPERM: return "permission denied: pass --dir DIR or set HARK_HOME to a writable place";
    case ENOTDIR: return "a component of the path is a file, not a folder: pass --dir DIR or set HARK_HOME";
    default: return std::strerror(error);
  }
}

PartFile::PartFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(ErrorCode::Io, "[get] cannot create '" + path + "': " + io_error_text(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd_);
    fd_ = -1;
    throw Error(ErrorCode::Conflict, "[get] another `hark get` is already downloading '" + path + "'; wait for it to finish");
  }
  off_t end = ::lseek(fd_, 0, SEEK_END);
  size_ = end > 0 ? static_cast<std::uint64_t>(end) : 0;
}

PartFile::~PartFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool PartFile::append(const char* data, size_t size) {
  while (size > 0) {
    ssize_t wrote = ::write(fd_, data, size);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      write_errno_ = wrote < 0 ? errno : ENOSPC;
      return false;
    }
    data += wrote, size -= static_cast<size_t>(wrote), size_ += static_cast<std::uint64_t>(wrote);
  }
  return true;
}

void PartFile::truncate() {
  if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) != 0)
    throw Error(ErrorCode::Io, "[get] cannot truncate '" + path_ + "': " + io_error_text(errno));
  size_ = 0;
}

void PartFile::close() {
  if (fd_ < 0) return;
  // fsync before the rename that publishes the file, so a crash cannot leave a complete
  // name over incomplete data.
  int sync_result = ::fsync(fd_);
  int sync_errno = errno;
  int close_result = ::close(fd_);
  fd_ = -1;
  if (sync_result != 0 || close_result != 0)
    throw Error(ErrorCode::Io, "[get] cannot write '" + path_ + "': " + io_error_text(sync_result ? sync_errno : errno));
}

}  // namespace hark::hub
