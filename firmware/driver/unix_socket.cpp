// A listening UNIX-domain socket that owns its file (unix_socket.h).
#include "firmware/driver/unix_socket.h"

#include <fmt/core.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "firmware/driver/wire.h"

namespace trnsim::wire {
namespace {

/// True when a server accepts connections at `a`.
bool someone_listens(const sockaddr_un& a) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un a{};
  if (path.empty() || path.size() >= sizeof(a.sun_path)) {
    throw WireError(fmt::format("socket path '{}': must be 1 to {} bytes", path, sizeof(a.sun_path) - 1));
  }
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

ListeningSocket::ListeningSocket(std::string path) : path_(std::move(path)) {
  const sockaddr_un a = unix_address(path_);
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      throw WireError(
          fmt::format("socket path {}: a file that is not a socket is there; remove it or pick another", path_));
    }
    if (someone_listens(a)) throw WireError(fmt::format("socket path {}: a server is listening there already", path_));
    ::unlink(path_.c_str());  // stale: its server died
  }
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) throw WireError(fmt::format("socket(): {}", std::strerror(errno)));
  if (::bind(fd_, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) != 0 || ::listen(fd_, 8) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw WireError(fmt::format("socket path {}: cannot listen: {}", path_, std::strerror(err)));
  }
  struct stat mine {};
  if (::stat(path_.c_str(), &mine) == 0) {
    dev_ = mine.st_dev;
    ino_ = mine.st_ino;
  }
}

ListeningSocket::ListeningSocket(ListeningSocket&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), dev_(other.dev_), ino_(other.ino_) {}

ListeningSocket::~ListeningSocket() {
  if (fd_ < 0) return;
  ::close(fd_);
  struct stat now {};
  if (::stat(path_.c_str(), &now) == 0 && now.st_dev == dev_ && now.st_ino == ino_) ::unlink(path_.c_str());
}

int ListeningSocket::accept() const { return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC); }

}  // namespace trnsim::wire
