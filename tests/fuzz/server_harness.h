// The server fuzz targets' harness (fuzz_wire.cpp, fuzz_mpqemu.cpp): one device model and one server, serving in a
// thread of their own for the whole fuzzing run, as `trnsim serve` does; each input is one client connection.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "cosim/device/sim_device.h"
#include "firmware/driver/unix_socket.h"
#include "tests/fuzz/fuzz_support.h"

namespace trnsim::fuzz {

/// `Server` is DeviceServer or pcie::QemuServer (a constructor (Device&, path, Options), serve(), stop()).
template <class Server>
class ServerHarness {
 public:
  explicit ServerHarness(const std::string& name)
      : device_(model::chip_config("tiny"), cosim::SimDeviceOptions{}),
        server_(device_, "/tmp/trnsim-fuzz-" + name + "-" + std::to_string(getpid()) + ".sock", {}),
        thread_([this] { server_.serve(); }) {}
  ~ServerHarness() {
    server_.stop();
    thread_.join();
  }
  ServerHarness(const ServerHarness&) = delete;
  ServerHarness& operator=(const ServerHarness&) = delete;

  cosim::SimDevice& device() { return device_; }
  Server& server() { return server_; }

  /// A new client connection (close-on-exec); fails the run if the server does not accept it.
  int connect() const {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un a = wire::unix_address(server_.socket_path());
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      fail("cannot connect to the server at {}", server_.socket_path());
    }
    return fd;
  }

 private:
  cosim::SimDevice device_;
  Server server_;
  std::thread thread_;
};

/// The server's side must end within this after the client stopped sending: it answers what was complete and
/// closes the connection at the end of the stream (docs/driver.md "Wire protocol"; mpqemu: the same).
inline constexpr int kCloseBoundMs = 10000;

/// Sends `bytes` on `fd`, reading (and dropping) what the server answers meanwhile, then shuts the sending side and
/// reads until the server closes. Fails the run when the server neither reads nor closes within kCloseBoundMs.
inline void converse(int fd, const uint8_t* bytes, size_t size) {
  using Clock = std::chrono::steady_clock;
  size_t sent = 0;
  bool write_open = true;
  auto deadline = Clock::now() + std::chrono::milliseconds(kCloseBoundMs);
  char sink[4096];
  for (;;) {
    if (write_open && sent == size) {
      ::shutdown(fd, SHUT_WR);
      write_open = false;
      deadline = Clock::now() + std::chrono::milliseconds(kCloseBoundMs);
    }
    pollfd p{fd, short(POLLIN | (write_open ? POLLOUT : 0)), 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) fail("server: the connection is still open {} ms after the client {}", kCloseBoundMs,
                        write_open ? "began to send" : "stopped sending");
    if (::poll(&p, 1, int(left)) <= 0) continue;
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
      const ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;  // closed by the server
    }
    if (write_open && (p.revents & POLLOUT)) {
      const ssize_t n = ::send(fd, bytes + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        sent += size_t(n);
      } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
        write_open = false;  // the server closed first (an error answer): read what it said
        deadline = Clock::now() + std::chrono::milliseconds(kCloseBoundMs);
      }
    }
  }
}

}  // namespace trnsim::fuzz
