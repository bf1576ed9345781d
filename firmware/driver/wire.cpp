#include "firmware/driver/wire.h"

#include <fmt/core.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace trnsim::wire {

const char* msg_type_name(uint16_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::kHello:
      return "hello";
    case MsgType::kReadReg:
      return "read_reg";
    case MsgType::kWriteReg:
      return "write_reg";
    case MsgType::kReadMem:
      return "read_mem";
    case MsgType::kWriteMem:
      return "write_mem";
    case MsgType::kWaitIrq:
      return "wait_irq";
    case MsgType::kReset:
      return "reset";
    case MsgType::kBye:
      return "bye";
    case MsgType::kKeepalive:
      return "keepalive";
    case MsgType::kPing:
      return "ping";
  }
  return "unknown";
}

const char* status_name(uint16_t status) {
  switch (static_cast<Status>(status)) {
    case Status::kOk:
      return "ok";
    case Status::kBadMessage:
      return "bad_message";
    case Status::kVersion:
      return "version";
    case Status::kAddress:
      return "address";
    case Status::kDevice:
      return "device";
    case Status::kBusy:
      return "busy";
  }
  return "unknown";
}

namespace {
void put_le(std::vector<uint8_t>& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
uint64_t get_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}
}  // namespace

PayloadWriter& PayloadWriter::u32(uint32_t v) {
  put_le(buf_, v, 4);
  return *this;
}
PayloadWriter& PayloadWriter::u64(uint64_t v) {
  put_le(buf_, v, 8);
  return *this;
}
PayloadWriter& PayloadWriter::bytes(const void* data, std::size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  buf_.insert(buf_.end(), p, p + n);
  return *this;
}

void PayloadReader::need(std::size_t n, const char* field) const {
  if (pos_ + n > f_.payload.size()) {
    throw WireError(fmt::format("{} message: payload of {} bytes ends before field {}", msg_type_name(f_.type),
                                f_.payload.size(), field));
  }
}
uint32_t PayloadReader::u32(const char* field) {
  need(4, field);
  const auto v = static_cast<uint32_t>(get_le(f_.payload.data() + pos_, 4));
  pos_ += 4;
  return v;
}
uint64_t PayloadReader::u64(const char* field) {
  need(8, field);
  const uint64_t v = get_le(f_.payload.data() + pos_, 8);
  pos_ += 8;
  return v;
}
void PayloadReader::done() const {
  if (pos_ != f_.payload.size()) {
    throw WireError(
        fmt::format("{} message: payload of {} bytes, expected {}", msg_type_name(f_.type), f_.payload.size(), pos_));
  }
}

Channel::~Channel() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {
std::vector<uint8_t> serialize(const Frame& f) {
  std::vector<uint8_t> b;
  b.reserve(kHeaderBytes + f.payload.size());
  put_le(b, kMagic, 4);
  put_le(b, f.type, 2);
  put_le(b, f.status, 2);
  put_le(b, f.seq, 4);
  put_le(b, f.payload.size(), 4);
  b.insert(b.end(), f.payload.begin(), f.payload.end());
  return b;
}
}  // namespace

bool Channel::send_bytes(const std::vector<uint8_t>& b, uint16_t type, int pass_fd, int timeout_ms, bool may_skip) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::size_t sent = 0;
  while (sent < b.size()) {
    iovec iov{const_cast<uint8_t*>(b.data()) + sent, b.size() - sent};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (pass_fd >= 0 && sent == 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        throw WireError(
            fmt::format("{}: connection lost while sending {} ({})", peer_, msg_type_name(type), std::strerror(errno)));
      }
      if (sent == 0 && may_skip) return false;  // nothing of it went out: the frame can be left unsent
      // The peer does not read: wait for room, but not for ever.
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      pollfd p{fd_, POLLOUT, 0};
      if (left <= 0 || ::poll(&p, 1, int(left)) == 0) {
        throw WireError(
            fmt::format("{} does not read: gave up sending {} after {} ms", peer_, msg_type_name(type), timeout_ms));
      }
      continue;
    }
    sent += static_cast<std::size_t>(n);
  }
  return true;
}

void Channel::send(const Frame& f, int pass_fd, int timeout_ms) {
  send_bytes(serialize(f), f.type, pass_fd, timeout_ms, false);
}

bool Channel::try_send(const Frame& f) { return send_bytes(serialize(f), f.type, -1, kDefaultTimeoutMs, true); }

std::optional<Frame> Channel::parse_buffered() {
  if (inbuf_.size() < kHeaderBytes) return std::nullopt;
  const auto magic = static_cast<uint32_t>(get_le(inbuf_.data(), 4));
  const auto type = static_cast<uint16_t>(get_le(inbuf_.data() + 4, 2));
  const auto length = static_cast<uint32_t>(get_le(inbuf_.data() + 12, 4));
  if (magic != kMagic) {
    throw WireError(
        fmt::format("{}: not a trnsim wire frame (magic 0x{:08X}, expected 0x{:08X})", peer_, magic, kMagic));
  }
  if (length > kMaxPayload) {
    throw WireError(fmt::format("{}: {} message with a payload of {} bytes (at most {})", peer_, msg_type_name(type),
                                length, kMaxPayload));
  }
  if (inbuf_.size() < kHeaderBytes + length) return std::nullopt;
  Frame f;
  f.type = type;
  f.status = static_cast<uint16_t>(get_le(inbuf_.data() + 6, 2));
  f.seq = static_cast<uint32_t>(get_le(inbuf_.data() + 8, 4));
  f.payload.assign(inbuf_.begin() + kHeaderBytes, inbuf_.begin() + kHeaderBytes + length);
  inbuf_.erase(inbuf_.begin(), inbuf_.begin() + kHeaderBytes + length);
  return f;
}

bool Channel::has_frame() const {
  return inbuf_.size() >= kHeaderBytes &&
         inbuf_.size() >= kHeaderBytes + std::min<uint64_t>(get_le(inbuf_.data() + 12, 4), kMaxPayload + 1);
}

std::optional<Frame> Channel::try_recv() {
  if (auto f = parse_buffered()) return f;  // a client may send several requests at once
  uint8_t buf[8192];
  while (inbuf_.size() < kHeaderBytes + kMaxPayload) {  // at most one whole frame at a time
    const ssize_t k = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      throw WireError(fmt::format("{}: connection lost ({})", peer_, std::strerror(errno)));
    }
    if (k == 0) throw WireError(fmt::format("{} closed the connection", peer_));
    inbuf_.insert(inbuf_.end(), buf, buf + k);
    if (has_frame()) break;  // one request is here: answer it before reading on (one recv per request)
  }
  return parse_buffered();
}

bool Channel::spin_until_readable(int us) const {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  do {
    if (readable()) return true;
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

bool Channel::readable() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

void Channel::read_exact(void* data, std::size_t n, int timeout_ms, int* received_fd, bool spin) {
  auto* p = static_cast<uint8_t*>(data);
  std::size_t got = 0;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  while (got < n) {
    iovec iov{p + got, n - got};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    // Try first, poll only when nothing is there: a register round trip then costs no poll at all.
    const ssize_t k = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        throw WireError(fmt::format("{}: connection lost ({})", peer_, std::strerror(errno)));
      }
      // Nothing yet: spin briefly first (an answer to a register access usually comes within microseconds, and a
      // blocking poll costs a sleep and a wake-up, tens of microseconds on a virtual machine), then block.
      if (spin && spin_until_readable()) continue;
      int wait_ms = -1;
      if (timeout_ms >= 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
        wait_ms = left < 0 ? 0 : static_cast<int>(left);
      }
      pollfd pfd{fd_, POLLIN, 0};
      const int r = ::poll(&pfd, 1, wait_ms);
      if (r < 0 && errno != EINTR) throw WireError(fmt::format("{}: poll failed ({})", peer_, std::strerror(errno)));
      if (r == 0) throw WireError(fmt::format("{}: no answer for {} ms (is it stopped or hung?)", peer_, timeout_ms));
      continue;
    }
    if (k == 0) throw WireError(fmt::format("{} closed the connection", peer_));
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        int fd = -1;
        std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (received_fd != nullptr && *received_fd < 0) {
          *received_fd = fd;
        } else {
          ::close(fd);  // not expected here: never leak it
        }
      }
    }
    got += static_cast<std::size_t>(k);
  }
}

Frame Channel::recv(int timeout_ms, int* received_fd, bool spin) {
  if (received_fd != nullptr) *received_fd = -1;
  uint8_t h[kHeaderBytes];
  // The header may take as long as the peer likes (or timeout_ms); the payload must follow promptly.
  read_exact(h, kHeaderBytes, timeout_ms, received_fd, spin);
  const int rest_ms = timeout_ms < 0 ? kDefaultTimeoutMs : timeout_ms;
  const auto magic = static_cast<uint32_t>(get_le(h, 4));
  Frame f;
  f.type = static_cast<uint16_t>(get_le(h + 4, 2));
  f.status = static_cast<uint16_t>(get_le(h + 6, 2));
  f.seq = static_cast<uint32_t>(get_le(h + 8, 4));
  const auto length = static_cast<uint32_t>(get_le(h + 12, 4));
  if (magic != kMagic) {
    throw WireError(
        fmt::format("{}: not a trnsim wire frame (magic 0x{:08X}, expected 0x{:08X})", peer_, magic, kMagic));
  }
  if (length > kMaxPayload) {
    throw WireError(fmt::format("{}: {} message with a payload of {} bytes (at most {})", peer_, msg_type_name(f.type),
                                length, kMaxPayload));
  }
  f.payload.resize(length);
  if (length > 0) read_exact(f.payload.data(), length, rest_ms, received_fd, true);
  return f;
}

Frame error_frame(const Frame& req, Status status, const std::string& text) {
  Frame f;
  f.type = req.type;
  f.status = static_cast<uint16_t>(status);
  f.seq = req.seq;
  const std::string cut = text.substr(0, kMaxPayload);
  f.payload.assign(cut.begin(), cut.end());
  return f;
}

}  // namespace trnsim::wire
