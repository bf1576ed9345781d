#include "firmware/driver/remote_device.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>

#include "firmware/driver/unix_socket.h"

namespace trnsim::driver {

using wire::Frame;
using wire::MsgType;
using wire::WireError;

namespace {
int connect_unix(const std::string& path, int timeout_ms) {
  const sockaddr_un addr = wire::unix_address(path);
  // Non-blocking, so that a server which does not accept (stopped, its backlog full) cannot hold us for ever.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) throw WireError(fmt::format("socket(): {}", std::strerror(errno)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  while (rc != 0 && errno == EAGAIN && std::chrono::steady_clock::now() < deadline) {  // backlog full: retry
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  }
  if (rc != 0 && errno == EAGAIN) {
    ::close(fd);
    throw WireError(
        fmt::format("cannot connect to a trnsim server at {}: it accepts no connection ({} ms; is it "
                    "stopped or overloaded?)",
                    path, timeout_ms));
  }
  if (rc == 0) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (rc != 0) {
    const int e = errno;
    ::close(fd);
    throw WireError(fmt::format("cannot connect to a trnsim server at {}: {}{}", path, std::strerror(e),
                                e == ENOENT || e == ECONNREFUSED ? " (is `trnsim serve --socket` running?)" : ""));
  }
  return fd;
}
}  // namespace

RemoteDevice::RemoteDevice(const std::string& socket_path, wire::Role role, int timeout_ms)
    : path_(socket_path), timeout_ms_(timeout_ms) {
  ch_ = std::make_unique<wire::Channel>(connect_unix(path_, timeout_ms_), "trnsim server at " + path_);
  int fd = -1;
  const Frame ans =
      call(MsgType::kHello, wire::PayloadWriter().u32(wire::kVersion).u32(static_cast<uint32_t>(role)).take(), &fd);
  wire::PayloadReader r(ans);
  const uint32_t version = r.u32("version");
  r.u32("reserved");
  window_bytes_ = r.u64("window_bytes");
  r.done();
  struct stat st {};
  if (version != wire::kVersion || fd < 0 || window_bytes_ == 0 || ::fstat(fd, &st) != 0 ||
      uint64_t(st.st_size) < window_bytes_) {  // a window smaller than announced would fault (SIGBUS) on use
    if (fd >= 0) ::close(fd);
    throw WireError(fmt::format("{}: bad hello answer (version {}, window {} bytes, {})", ch_->peer(), version,
                                window_bytes_, fd < 0 ? "no memfd" : "memfd"));
  }
  void* p = ::mmap(nullptr, window_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    throw WireError(
        fmt::format("{}: cannot map the {}-byte shared window: {}", ch_->peer(), window_bytes_, std::strerror(errno)));
  }
  window_ = static_cast<uint8_t*>(p);
}

RemoteDevice::~RemoteDevice() {
  if (!dead_) {
    try {
      call(MsgType::kBye, {});
    } catch (const std::exception&) {
      // the server is gone already: nothing to say goodbye to
    }
  }
  if (window_ != nullptr) ::munmap(window_, window_bytes_);
}

void RemoteDevice::send(const Frame& req) {
  try {
    ch_->send(req);
  } catch (const WireError&) {
    // The server may have closed the connection after an error answer to an earlier posted write: that answer is
    // the real reason, and it still waits in the receive buffer.
    std::optional<Frame> pending;
    try {
      pending = ch_->recv(100);
    } catch (const WireError&) {
    }
    dead_ = true;
    if (pending && pending->status != 0 && pending->type == static_cast<uint16_t>(MsgType::kWriteReg)) {
      throw posted_write_error(*pending);
    }
    throw;  // the send error stands
  }
}

WireError RemoteDevice::posted_write_error(const Frame& ans) {
  dead_ = true;
  return WireError(fmt::format("{}: an earlier write_reg (#{}) was refused ({}): {}", ch_->peer(), ans.seq,
                               wire::status_name(ans.status), std::string(ans.payload.begin(), ans.payload.end())),
                   static_cast<wire::Status>(ans.status));
}

Frame RemoteDevice::call(MsgType type, std::vector<uint8_t> payload, int* received_fd) {
  if (dead_) throw WireError(fmt::format("{}: the connection was closed after an earlier error", ch_->peer()));
  Frame req;
  req.type = static_cast<uint16_t>(type);
  req.seq = ++seq_;
  req.payload = std::move(payload);
  try {
    send(req);
    for (;;) {
      Frame ans = ch_->recv(timeout_ms_, received_fd, type != MsgType::kWaitIrq);
      if (ans.type == static_cast<uint16_t>(MsgType::kKeepalive) && ans.seq == req.seq) continue;
      if (ans.status != 0 && ans.seq < req.seq && ans.type == static_cast<uint16_t>(MsgType::kWriteReg)) {
        throw posted_write_error(ans);  // the server closed the connection after saying so
      }
      if (ans.seq != req.seq || ans.type != req.type) {
        throw WireError(fmt::format("{}: answer {} #{} to request {} #{}", ch_->peer(), wire::msg_type_name(ans.type),
                                    ans.seq, wire::msg_type_name(req.type), req.seq));
      }
      if (ans.status != 0) {
        const std::string text(ans.payload.begin(), ans.payload.end());
        dead_ = true;
        if (ans.status == static_cast<uint16_t>(wire::Status::kAddress)) throw std::out_of_range(text);
        throw WireError(fmt::format("{}: {} refused ({}): {}", ch_->peer(), wire::msg_type_name(req.type),
                                    wire::status_name(ans.status), text),
                        static_cast<wire::Status>(ans.status));
      }
      return ans;
    }
  } catch (const WireError&) {
    dead_ = true;
    throw;
  }
}

uint32_t RemoteDevice::read_reg(uint32_t offset) {
  const Frame ans = call(MsgType::kReadReg, wire::PayloadWriter().u32(offset).take());
  wire::PayloadReader r(ans);
  const uint32_t v = r.u32("value");
  r.done();
  return v;
}

void RemoteDevice::write_reg(uint32_t offset, uint32_t value) {
  // Posted: no answer to wait for (a failure comes back as the answer to the next request).
  if (dead_) throw WireError(fmt::format("{}: the connection was closed after an earlier error", ch_->peer()));
  wire::Frame req;
  req.type = static_cast<uint16_t>(MsgType::kWriteReg);
  req.seq = ++seq_;
  req.payload = wire::PayloadWriter().u32(offset).u32(value).take();
  send(req);
}

void RemoteDevice::write_mem(uint64_t device_addr, const void* data, std::size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  std::size_t done = 0;
  do {  // one request even for 0 bytes: the server checks the address as the device would
    const std::size_t n = std::min<std::size_t>(bytes - done, window_bytes_);
    if (n > 0) std::memcpy(window_, p + done, n);
    call(MsgType::kWriteMem, wire::PayloadWriter().u64(device_addr + done).u64(n).u64(0).take());
    done += n;
  } while (done < bytes);
}

void RemoteDevice::read_mem(uint64_t device_addr, void* data, std::size_t bytes) {
  auto* p = static_cast<uint8_t*>(data);
  std::size_t done = 0;
  do {
    const std::size_t n = std::min<std::size_t>(bytes - done, window_bytes_);
    call(MsgType::kReadMem, wire::PayloadWriter().u64(device_addr + done).u64(n).u64(0).take());
    if (n > 0) std::memcpy(p + done, window_, n);
    done += n;
  } while (done < bytes);
}

bool RemoteDevice::wait_interrupt(uint64_t max_cycles) {
  const Frame ans = call(MsgType::kWaitIrq, wire::PayloadWriter().u64(max_cycles).take());
  wire::PayloadReader r(ans);
  const uint32_t irq = r.u32("irq");
  r.done();
  return irq != 0;
}

void RemoteDevice::reset() { call(MsgType::kReset, {}); }

void RemoteDevice::ping() { call(MsgType::kPing, {}); }

}  // namespace trnsim::driver
