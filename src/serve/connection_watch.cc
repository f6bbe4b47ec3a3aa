#include "serve/connection_watch.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <string>

namespace hark::serve {
namespace {

bool endpoint_is(const sockaddr_storage& addr, const std::string& ip, int port) {
  char text[INET6_ADDRSTRLEN] = {0};
  int actual_port = -1;
  if (addr.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(addr);
    inet_ntop(AF_INET, &a.sin_addr, text, sizeof text);
    actual_port = ntohs(a.sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(addr);
    inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof text);
    actual_port = ntohs(a.sin6_port);
  } else {
    return false;
  }
  return actual_port == port && (ip.empty() || ip == text);
}

bool is_connection_socket(int fd, const httplib::Request& req) {
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  sockaddr_storage local{}, peer{};
  socklen_t local_len = sizeof local, peer_len = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) return false;
  return endpoint_is(local, req.local_addr, req.local_port) && endpoint_is(peer, req.remote_addr, req.remote_port);
}

}  // namespace

ConnectionWatch::ConnectionWatch(const httplib::Request& req) {
  // The (local, peer) address pair names one TCP connection in this process. The socket
  // stays open while its handler runs, so the descriptor cannot be reused under us.
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    if (is_connection_socket(static_cast<int>(fd), req)) {
      fd_ = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
}

bool ConnectionWatch::peer_closed() const {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

}  // namespace hark::serve
