// wire::DeviceServer: serves driver::Devices (any backend: the SystemC model, the mock) over the wire protocol
// (wire.h, docs/driver.md "Wire protocol"), each on its own UNIX-domain socket (an endpoint: one chip of a
// multi-chip system each); `trnsim serve` is a thin shell around it.
//
// One thread. Each endpoint accepts any number of connections: at most one owner (the driver; its HELLO resets
// that device) and any number of attach clients (debug reads and writes beside the owner). Owners' WAIT_IRQs are
// pending waits: while any is pending the server runs the devices in slices of a few tens of milliseconds of host
// time (one waiting device's wait_interrupt; on a multi-chip system that runs every chip); after each slice it
// answers the waits whose interrupt line is high or whose cycle budget is spent, answers every other request
// (a slice runs only once every request that has arrived is answered, so simulated time stands still meanwhile),
// refuses would-be owners (BUSY), sends each waiting owner a KEEPALIVE at least every wire::kKeepaliveMs, and
// notices an owner that died. With one waiting owner its budget is exact; when several wait at once, the others'
// budgets are counted in whole slices (a slice may end early when the slice's own device interrupts), so their
// timeouts may come up to one slice early. Every error answer closes its connection; the server itself never stops
// for a client's fault.
#pragma once

#include <poll.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "firmware/driver/device.h"
#include "firmware/driver/unix_socket.h"
#include "firmware/driver/wire.h"

namespace trnsim::wire {

class DeviceServer {
 public:
  struct Options {
    uint64_t window_bytes = kDefaultWindowBytes;  ///< each owner's shared window (attach clients get 1 MiB)
    /// serve() returns when an owner disconnects and no endpoint has an owner left.
    bool once = false;
    /// Not empty: the device has an owner outside this server (e.g. "a QEMU guest"): every would-be owner is
    /// refused (BUSY, naming it); attach clients are served.
    std::string owned_by;
    /// One line per connection event ("client 1 (owner) connected", "client 1 closed: ..."); empty: silent.
    std::function<void(const std::string&)> log;
    /// A client's hello must come within this of connecting, and a frame once begun must be finished within this:
    /// else the connection is closed ("no hello within 10 s", "a frame begun and not finished for 10 s").
    int idle_ms = 10000;
    /// An answer the client does not read within this (its socket buffer full) closes the connection.
    int send_timeout_ms = 2000;
  };

  /// One device on one socket.
  struct Endpoint {
    driver::Device* device = nullptr;  ///< not owned; outlives the server
    std::string path;
  };

  /// Binds and listens on every endpoint's path. A stale socket file (nothing answers on it) is replaced; a path
  /// where a server answers, or any other file, is refused: WireError naming the path (nothing stays bound).
  DeviceServer(std::vector<Endpoint> endpoints, Options options);
  /// One device on `socket_path`.
  DeviceServer(driver::Device& device, std::string socket_path, Options options);
  /// Closes every connection and removes the socket files.
  ~DeviceServer();
  DeviceServer(const DeviceServer&) = delete;
  DeviceServer& operator=(const DeviceServer&) = delete;

  /// Serves until stop() is called (or, with Options::once, until the first owner leaves).
  void serve();
  /// Makes serve() return soon; safe from a signal handler and from another thread.
  void stop();
  const std::string& socket_path(std::size_t endpoint = 0) const { return eps_.at(endpoint).path; }

 private:
  struct Conn;
  void listen_on(const Endpoint& e);
  void close_listeners();
  bool any_owner() const;
  void accept_one(std::size_t endpoint);
  /// Reads what `c` sent and answers a request if one is complete; returns false when the connection is closed.
  bool handle(Conn& c);
  /// `c`'s turn: up to kBurst requests (the owner's follow-ups awaited by spinning briefly).
  bool turn(Conn& c);
  /// Closes connections that left a hello or a frame half done for too long.
  void expire_idle();
  bool any_buffered() const;
  std::vector<Conn*> ready(const std::vector<pollfd>& fds, std::size_t first);
  bool answer(Conn& c, const Frame& req);
  /// Starts `c`'s WAIT_IRQ: answered at once when the line is high or the budget 0, else pending.
  void wait_irq(Conn& c, const Frame& req);
  /// The owner of a pending wait spoke: it died (EOF) or broke the protocol (a request during its own wait).
  void check_waiting(Conn& c);
  /// Runs one slice for the pending waits and answers the ones that ended.
  void run_slice();
  /// A keepalive to `c` (waiting) if its last one is kKeepaliveMs old: the socket's error text if the send failed.
  static std::optional<std::string> keepalive(Conn& c);
  /// The keepalive thread's loop (beat_): while a slice runs (beat_armed_) it sends the waiting clients theirs on the
  /// clock, as a slice's host time is not known beforehand; the serve loop is inside the simulation then and touches
  /// no connection. Sockets that failed go to beat_lost_, closed by run_slice after the slice.
  void beat_loop();
  void answer_wait(Conn& c, bool irq);
  void close_conn(Conn& c, const std::string& why);
  void say(const std::string& line) const;
  driver::Device& device_of(const Conn& c) const;

  std::vector<Endpoint> eps_;
  Options options_;
  std::vector<ListeningSocket> listeners_;  ///< per endpoint
  int wake_[2] = {-1, -1};  ///< self-pipe: stop() writes, serve()'s poll wakes
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Conn>> conns_;
  uint32_t next_id_ = 1;
  bool owner_left_ = false;
  uint64_t slice_cycles_ = 1024;  ///< WAIT_IRQ slice, adapted to take 20-80 ms of host time
  int deferred_slices_ = 0;       ///< serve-loop rounds since the last slice that had requests to answer
  std::mutex beat_m_;             ///< guards beat_armed_, beat_stop_, beat_lost_ and the sends of beat_loop
  std::condition_variable beat_cv_;
  bool beat_armed_ = false;
  bool beat_stop_ = false;
  std::vector<std::pair<Conn*, std::string>> beat_lost_;
  std::thread beat_;  ///< started by the first slice, joined by the destructor
};

}  // namespace trnsim::wire
