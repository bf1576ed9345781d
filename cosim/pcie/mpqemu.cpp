// QEMU's multi-process protocol, the remote device's side (mpqemu.h).
#include "cosim/pcie/mpqemu.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace trnsim::pcie::mpqemu {
namespace {

template <typename T>
T get(const std::vector<uint8_t>& d, std::size_t at) {
  T v;
  std::memcpy(&v, d.data() + at, sizeof(T));
  return v;
}
template <typename T>
void put(std::vector<uint8_t>* d, std::size_t at, T v) {
  std::memcpy(d->data() + at, &v, sizeof(T));
}

void need(const Message& m, std::size_t bytes, int fds) {
  if (m.data.size() != bytes) {
    throw ProtocolError(fmt::format("{}: {} bytes of data, the message has {}", cmd_name(m.cmd), m.data.size(), bytes));
  }
  if (fds >= 0 && int(m.fds.size()) != fds) {
    throw ProtocolError(fmt::format("{}: {} file descriptors, the message carries {}", cmd_name(m.cmd), m.fds.size(),
                                    fds));
  }
}

/// Waits until `sock` is readable (or writable); false when `ms` passed.
bool wait_for(int sock, short events, int ms) {
  pollfd p{sock, events, 0};
  for (;;) {
    const int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    return r > 0;
  }
}

/// Reads exactly `n` bytes (the fds attached to them go to `fds`); returns the bytes read before a clean EOF.
std::size_t read_exact(int sock, uint8_t* buf, std::size_t n, std::vector<Fd>* fds, int ms, const char* what) {
  std::size_t got = 0;
  while (got < n) {
    iovec iov{buf + got, n - got};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t k = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        throw ProtocolError(fmt::format("connection lost reading {} ({})", what, std::strerror(errno)));
      }
      if (!wait_for(sock, POLLIN, ms)) throw ProtocolError(fmt::format("{} cut short: nothing for {} ms", what, ms));
      continue;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds->emplace_back(fd);
      }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0) throw ProtocolError(fmt::format("{}: more than {} fds", what, kMaxFds));
    if (k == 0) return got;
    got += std::size_t(k);
  }
  return got;
}

}  // namespace

const char* cmd_name(int32_t cmd) {
  switch (Cmd(cmd)) {
    case Cmd::kSyncSysmem: return "sync_sysmem";
    case Cmd::kRet: return "ret";
    case Cmd::kPciCfgWrite: return "pci_cfgwrite";
    case Cmd::kPciCfgRead: return "pci_cfgread";
    case Cmd::kBarWrite: return "bar_write";
    case Cmd::kBarRead: return "bar_read";
    case Cmd::kSetIrqfd: return "set_irqfd";
    case Cmd::kDeviceReset: return "device_reset";
  }
  return "unknown";
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

void check(const Message& m) {
  switch (Cmd(m.cmd)) {
    case Cmd::kSyncSysmem:
      need(m, kSyncSysmemBytes, -1);
      if (m.fds.empty()) throw ProtocolError("sync_sysmem: no file descriptor (a region each)");
      return;
    case Cmd::kPciCfgWrite:
    case Cmd::kPciCfgRead: need(m, kPciConfBytes, 0); return;
    case Cmd::kBarWrite:
    case Cmd::kBarRead: need(m, kBarAccessBytes, 0); return;
    case Cmd::kSetIrqfd: need(m, 0, 2); return;
    case Cmd::kDeviceReset: need(m, 0, 0); return;
    case Cmd::kRet: need(m, 8, 0); return;
  }
  throw ProtocolError(fmt::format("unknown command {} (known: 0 .. 7)", m.cmd));
}

SyncSysmem sync_sysmem(const Message& m) {
  check(m);
  SyncSysmem s;
  for (std::size_t i = 0; i < m.fds.size(); ++i) {
    s.regions.push_back({get<uint64_t>(m.data, 8 * i), get<uint64_t>(m.data, 64 + 8 * i),
                         get<int64_t>(m.data, 128 + 8 * i)});
  }
  return s;
}

PciConf pci_conf(const Message& m) {
  check(m);
  return {get<uint32_t>(m.data, 0), get<uint32_t>(m.data, 4), get<int32_t>(m.data, 8)};
}

BarAccess bar_access(const Message& m) {
  check(m);
  return {get<uint64_t>(m.data, 0), get<uint64_t>(m.data, 8), get<uint32_t>(m.data, 16), m.data[20] != 0};
}

std::vector<uint8_t> encode(const SyncSysmem& s) {
  std::vector<uint8_t> d(kSyncSysmemBytes, 0);
  for (std::size_t i = 0; i < s.regions.size() && i < std::size_t(kMaxFds); ++i) {
    put(&d, 8 * i, s.regions[i].gpa);
    put(&d, 64 + 8 * i, s.regions[i].size);
    put(&d, 128 + 8 * i, s.regions[i].offset);
  }
  return d;
}

std::vector<uint8_t> encode(const PciConf& c) {
  std::vector<uint8_t> d(kPciConfBytes, 0);
  put(&d, 0, c.addr);
  put(&d, 4, c.val);
  put(&d, 8, c.len);
  return d;
}

std::vector<uint8_t> encode(const BarAccess& b) {
  std::vector<uint8_t> d(kBarAccessBytes, 0);
  put(&d, 0, b.addr);
  put(&d, 8, b.val);
  put(&d, 16, b.size);
  d[20] = b.memory ? 1 : 0;
  return d;
}

bool receive(int sock, Message* m, int rest_ms) {
  m->fds.clear();
  uint8_t h[kHeaderBytes];
  const std::size_t got = read_exact(sock, h, kHeaderBytes, &m->fds, rest_ms, "a message header");
  if (got == 0) return false;
  if (got < kHeaderBytes) throw ProtocolError(fmt::format("a message header cut short ({} of 16 bytes)", got));
  std::memcpy(&m->cmd, h, 4);
  uint64_t size = 0;
  std::memcpy(&size, h + 8, 8);
  if (size > kMaxDataBytes) {
    throw ProtocolError(fmt::format("{}: {} bytes of data (at most {})", cmd_name(m->cmd), size, kMaxDataBytes));
  }
  m->data.assign(size, 0);
  if (size > 0) {
    std::vector<Fd> extra;
    if (read_exact(sock, m->data.data(), size, &extra, rest_ms, cmd_name(m->cmd)) < size) {
      throw ProtocolError(fmt::format("{}: the connection closed inside its data", cmd_name(m->cmd)));
    }
    if (!extra.empty()) throw ProtocolError(fmt::format("{}: file descriptors after the header", cmd_name(m->cmd)));
  }
  return true;
}

void send(int sock, int32_t cmd, const std::vector<uint8_t>& data, const std::vector<int>& fds, int timeout_ms) {
  if (fds.size() > std::size_t(kMaxFds)) throw ProtocolError("more than 8 fds in one message");
  uint8_t h[kHeaderBytes] = {};
  std::memcpy(h, &cmd, 4);
  const uint64_t size = data.size();
  std::memcpy(h + 8, &size, 8);
  std::vector<uint8_t> bytes(h, h + kHeaderBytes);
  bytes.insert(bytes.end(), data.begin(), data.end());
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    iovec iov{bytes.data() + sent, bytes.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    if (sent == 0 && !fds.empty()) {
      msg.msg_control = control;
      msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    const ssize_t n = ::sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        throw ProtocolError(fmt::format("connection lost sending {} ({})", cmd_name(cmd), std::strerror(errno)));
      }
      if (!wait_for(sock, POLLOUT, timeout_ms)) {
        throw ProtocolError(fmt::format("the peer does not read: gave up sending {} after {} ms", cmd_name(cmd),
                                        timeout_ms));
      }
      continue;
    }
    sent += std::size_t(n);
  }
}

void send_ret(int sock, uint64_t value, int timeout_ms) {
  std::vector<uint8_t> d(8);
  std::memcpy(d.data(), &value, 8);
  send(sock, int32_t(Cmd::kRet), d, {}, timeout_ms);
}

}  // namespace trnsim::pcie::mpqemu
