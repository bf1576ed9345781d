// driver::RemoteDevice: the device interface (device.h) over the wire protocol (wire.h, docs/driver.md "Wire
// protocol") to a device served by another process (`trnsim serve --socket PATH`).
//
// Registers, waits and resets are one request and one answer each; memory goes through the shared window the
// server passes at HELLO (a memfd, mapped here), in chunks of the window's size, so a large write costs memcpys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "firmware/driver/device.h"
#include "firmware/driver/wire.h"

namespace trnsim::driver {

class RemoteDevice final : public Device {
 public:
  /// Connects to the server listening on `socket_path` and says HELLO as `role`. An owner's connection resets the
  /// device (docs/driver.md). Throws wire::WireError naming the socket: nothing listens there, the server is busy
  /// with another owner, speaks another protocol version, or stays silent for `timeout_ms`.
  explicit RemoteDevice(const std::string& socket_path, wire::Role role = wire::Role::kOwner,
                        int timeout_ms = wire::kDefaultTimeoutMs);
  /// Says BYE (errors ignored) and unmaps the window.
  ~RemoteDevice() override;
  RemoteDevice(const RemoteDevice&) = delete;
  RemoteDevice& operator=(const RemoteDevice&) = delete;

  uint32_t read_reg(uint32_t offset) override;
  void write_reg(uint32_t offset, uint32_t value) override;
  /// std::out_of_range when the server answers that the range is not mapped (the connection is then closed).
  void write_mem(uint64_t device_addr, const void* data, std::size_t bytes) override;
  void read_mem(uint64_t device_addr, void* data, std::size_t bytes) override;
  bool wait_interrupt(uint64_t max_cycles) override;

  /// Asks the server to reset the device (soft reset, performance counters cleared, queues unloaded).
  void reset();
  /// One protocol round trip that touches no device; returns when every earlier (posted) write was applied.
  void ping();
  /// Bytes of the shared window (the largest chunk of one memory request).
  uint64_t window_bytes() const { return window_bytes_; }
  const std::string& socket_path() const { return path_; }

 private:
  /// Sends a request and returns its answer's payload; throws for an error answer (std::out_of_range for kAddress,
  /// wire::WireError otherwise) and marks the connection dead.
  wire::Frame call(wire::MsgType type, std::vector<uint8_t> payload, int* received_fd = nullptr);
  /// Sends `req`; when the connection is gone, throws the error answer of a failed posted write if one is waiting.
  void send(const wire::Frame& req);
  /// The error of a failed posted write (its error answer `ans`); marks the connection dead.
  wire::WireError posted_write_error(const wire::Frame& ans);

  std::string path_;
  int timeout_ms_;
  std::unique_ptr<wire::Channel> ch_;
  uint32_t seq_ = 0;
  bool dead_ = false;
  uint8_t* window_ = nullptr;
  uint64_t window_bytes_ = 0;
};

}  // namespace trnsim::driver
