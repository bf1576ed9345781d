// A listening UNIX-domain stream socket that owns its socket file: the one way trnsim's servers (DeviceServer,
// pcie::QemuServer) take a path.
#pragma once

#include <sys/un.h>

#include <string>

namespace trnsim::wire {

/// The address of UNIX-domain socket `path`; WireError for an empty path or one longer than a sockaddr_un holds
/// (the message names the path and the limit).
sockaddr_un unix_address(const std::string& path);

class ListeningSocket {
 public:
  /// Binds and listens on `path`. A stale socket file there (nothing answers on it) is replaced; a path where a
  /// server answers, any other kind of file, or a path longer than a sockaddr_un holds is refused: WireError naming
  /// the path.
  explicit ListeningSocket(std::string path);
  /// Closes the socket and removes the file if it is still ours (another server may have taken the path since).
  ~ListeningSocket();
  ListeningSocket(const ListeningSocket&) = delete;
  ListeningSocket& operator=(const ListeningSocket&) = delete;
  ListeningSocket(ListeningSocket&& other) noexcept;
  ListeningSocket& operator=(ListeningSocket&&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  /// Accepts one connection (close-on-exec); -1 if none is waiting or accept failed.
  int accept() const;

 private:
  std::string path_;
  int fd_ = -1;
  unsigned long dev_ = 0, ino_ = 0;  ///< our socket file
};

}  // namespace trnsim::wire
