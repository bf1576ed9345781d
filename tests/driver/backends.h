// The driver tests' backends: the mock device itself, or the same mock served by a wire::DeviceServer (in a thread
// of the test process) and reached through driver::RemoteDevice, so that one parameterized suite checks that the
// remote backend changes nothing the driver can see.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <thread>

#include "firmware/driver/device_server.h"
#include "firmware/driver/remote_device.h"
#include "tests/driver/mock_device.h"

namespace trnsim::test {

enum class Backend { kMock, kRemote };

inline std::string backend_name(const ::testing::TestParamInfo<Backend>& p) {
  return p.param == Backend::kMock ? "Mock" : "Remote";
}

/// A fresh directory for sockets, removed with its contents by the destructor.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/trnsim-test-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    if (d == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = d;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// The remote device with every register write made synchronous (a ping after it), so that a test may look at the
/// mock right after any driver call. Posted writes themselves are tested in remote_device_test.cpp.
class SyncedRemote final : public driver::Device {
 public:
  explicit SyncedRemote(const std::string& path) : remote_(path) {}
  uint32_t read_reg(uint32_t offset) override { return remote_.read_reg(offset); }
  void write_reg(uint32_t offset, uint32_t value) override {
    remote_.write_reg(offset, value);
    remote_.ping();
  }
  void write_mem(uint64_t a, const void* d, std::size_t n) override { remote_.write_mem(a, d, n); }
  void read_mem(uint64_t a, void* d, std::size_t n) override { remote_.read_mem(a, d, n); }
  bool wait_interrupt(uint64_t max_cycles) override { return remote_.wait_interrupt(max_cycles); }

 private:
  driver::RemoteDevice remote_;
};

/// `mock` reached directly, or through a socket (every call synchronous: the mock may be inspected at any time
/// between calls).
class BackendDevice {
 public:
  BackendDevice(MockDevice& mock, Backend backend, uint64_t window_bytes = 1 << 20) : mock_(mock) {
    if (backend == Backend::kMock) return;
    dir_ = std::make_unique<TempDir>();
    wire::DeviceServer::Options o;
    o.window_bytes = window_bytes;
    server_ = std::make_unique<wire::DeviceServer>(mock, dir_->path() + "/dev.sock", o);
    thread_ = std::thread([this] { server_->serve(); });
    remote_ = std::make_unique<SyncedRemote>(server_->socket_path());
    mock_.log.clear();  // the device reset the owner's connection makes is not the test's
  }
  ~BackendDevice() {
    remote_.reset();  // bye
    if (server_) {
      server_->stop();
      thread_.join();
    }
  }
  BackendDevice(const BackendDevice&) = delete;
  BackendDevice& operator=(const BackendDevice&) = delete;

  driver::Device& device() { return remote_ ? static_cast<driver::Device&>(*remote_) : mock_; }
  const std::string& socket_path() const { return server_->socket_path(); }

 private:
  MockDevice& mock_;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<wire::DeviceServer> server_;
  std::thread thread_;
  std::unique_ptr<SyncedRemote> remote_;
};

}  // namespace trnsim::test
