// wire::DeviceServer: serves one driver::Device (any backend: the SystemC model, the mock) over the wire protocol
// (wire.h, docs/driver.md "Wire protocol") on a UNIX-domain socket; `trnsim serve` is a thin shell around it.
//
// One thread. It accepts any number of connections: at most one owner (the driver; its HELLO resets the device) and
// any number of attach clients (debug reads and writes beside the owner). A WAIT_IRQ runs the device in slices of a
// few tens of milliseconds of host time; between slices the server answers attach clients, refuses would-be owners
// (BUSY), sends the owner a KEEPALIVE at least every wire::kKeepaliveMs, and notices an owner that died. Every
// error answer closes its connection; the server itself never stops for a client's fault.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "firmware/driver/device.h"
#include "firmware/driver/wire.h"

namespace trnsim::wire {

class DeviceServer {
 public:
  struct Options {
    uint64_t window_bytes = kDefaultWindowBytes;  ///< each owner's shared window (attach clients get 1 MiB)
    bool once = false;                            ///< serve() returns when the first owner disconnects
    /// One line per connection event ("client 1 (owner) connected", "client 1 closed: ..."); empty: silent.
    std::function<void(const std::string&)> log;
  };

  /// Binds and listens on `socket_path`. A stale socket file (nothing answers on it) is replaced; a path where a
  /// server answers, or any other file, is refused: WireError naming the path.
  DeviceServer(driver::Device& device, std::string socket_path, Options options);
  /// Closes every connection and removes the socket file.
  ~DeviceServer();
  DeviceServer(const DeviceServer&) = delete;
  DeviceServer& operator=(const DeviceServer&) = delete;

  /// Serves until stop() is called (or, with Options::once, until the first owner leaves).
  void serve();
  /// Makes serve() return soon; safe from a signal handler and from another thread.
  void stop();
  const std::string& socket_path() const { return path_; }

 private:
  struct Conn;
  void accept_one();
  /// Reads what `c` sent and answers a request if one is complete; returns false when the connection is closed.
  bool handle(Conn& c);
  /// `c`'s turn: up to kBurst requests (the owner's follow-ups awaited by spinning briefly).
  bool turn(Conn& c);
  /// Closes connections that left a hello or a frame half done for too long.
  void expire_idle();
  bool any_buffered() const;
  std::vector<Conn*> ready(const std::vector<pollfd>& fds, std::size_t first);
  bool answer(Conn& c, const Frame& req);
  void wait_irq(Conn& c, const Frame& req);
  void service_others(const Conn& busy_owner);
  void close_conn(Conn& c, const std::string& why);
  void reset_device();
  void say(const std::string& line) const;

  driver::Device& device_;
  std::string path_;
  Options options_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};  ///< self-pipe: stop() writes, serve()'s poll wakes
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Conn>> conns_;
  uint32_t next_id_ = 1;
  bool owner_left_ = false;
  uint64_t slice_cycles_ = 1024;                   ///< WAIT_IRQ slice, adapted to take 20-80 ms of host time
  unsigned long socket_dev_ = 0, socket_ino_ = 0;  ///< our socket file, so that we remove only it
};

}  // namespace trnsim::wire
