// Notices when the client of a waiting request has gone away, so its job is cancelled.
// cpp-httplib 0.11 gives handlers no socket and no is_connection_closed(), so the
// watch finds this connection's socket by its address pair and polls it for a hang-up.
#pragma once

#include <httplib.h>

namespace hark::serve {

class ConnectionWatch {
 public:
  explicit ConnectionWatch(const httplib::Request& req);
  // True once the peer has closed or reset the connection. Never blocks.
  bool peer_closed() const;
  bool found() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace hark::serve
