// The trnsim device wire protocol, version 1: how `trnsim serve` (DeviceServer) and driver::RemoteDevice talk over a
// UNIX-domain stream socket. The full description, with every message's layout, is docs/driver.md "Wire protocol".
//
// Framing: every message is a 16-byte header followed by `length` payload bytes, all integers little-endian:
//   u32 magic (kMagic, the bytes "TRNW")  u16 type (MsgType)  u16 status (Status; 0 in requests)
//   u32 seq (the request's number, echoed in its answer)  u32 length (payload bytes, <= kMaxPayload)
// Bulk memory does not travel in frames: HELLO's answer passes a memfd (SCM_RIGHTS) of `window_bytes` bytes that
// both sides map; READ_MEM/WRITE_MEM name an offset in that window.
//
// Errors: WireError (a std::runtime_error) for a malformed or unexpected frame, a peer that closed the connection,
// and a peer that stayed silent past the timeout; its text names the socket path when the caller gave one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::wire {

inline constexpr uint32_t kMagic = 0x574E5254;  ///< "TRNW" as bytes on the wire
inline constexpr uint32_t kVersion = 1;         ///< protocol version HELLO checks (exact match)
inline constexpr uint32_t kHeaderBytes = 16;
inline constexpr uint32_t kMaxPayload = 4096;  ///< largest payload of any message (error texts are cut to fit)
inline constexpr uint64_t kDefaultWindowBytes = 64ull << 20;  ///< shared memory window: 64 MiB
/// Server: a KEEPALIVE during WAIT_IRQ when this long passed since the last one, checked between simulation
/// slices of at most about 80 ms: so a client sees one at least every ~200 ms, and a client timeout must be longer.
inline constexpr int kKeepaliveMs = 100;
inline constexpr int kDefaultTimeoutMs = 10000;
/// How long a client waiting for an answer spins (non-blocking checks) before it blocks in poll(): a blocked
/// reader's wake-up costs tens of microseconds on a virtual machine, more than a whole register round trip.
inline constexpr int kSpinUs = 200;
/// How long the server, after an answer, spins for the same client's next request (drivers access registers in
/// bursts: HI, LO, HI of a counter); short, so that it takes little CPU from a client that computes between
/// requests (docs/performance.md, "Served device").
inline constexpr int kServerSpinUs = 30;  ///< client: silence (no answer, no keepalive) before giving up

/// Message types. Requests go client -> server and get exactly one answer of the same type (or an error), except
/// WRITE_REG, which is posted: it gets an answer only when it failed (an error answer, then the server closes).
/// KEEPALIVE goes server -> client only, while a WAIT_IRQ runs.
enum class MsgType : uint16_t {
  kHello = 1,      ///< req: u32 version, u32 role (Role)      ans: u32 version, u32 reserved, u64 window_bytes + memfd
  kReadReg = 2,    ///< req: u32 offset                        ans: u32 value
  kWriteReg = 3,   ///< req: u32 offset, u32 value             ans: none on success (posted, as a PCIe MMIO write)
  kReadMem = 4,    ///< req: u64 device_addr, u64 bytes, u64 window_offset   ans: - (the bytes are in the window)
  kWriteMem = 5,   ///< req: u64 device_addr, u64 bytes, u64 window_offset   ans: -
  kWaitIrq = 6,    ///< req: u64 max_cycles                    ans: u32 irq (1 = interrupt line high)
  kReset = 7,      ///< req: -                                 ans: -   (device reset: docs/driver.md)
  kBye = 8,        ///< req: -                                 ans: -   then the server closes the connection
  kKeepalive = 9,  ///< server -> client during WAIT_IRQ, seq of the WAIT_IRQ, no payload
  kPing = 10,      ///< req: -                                 ans: -   (touches no device: a protocol round trip,
                   ///<   and a barrier after posted writes)
};
/// "hello", "read_reg", ... ("unknown" for any other value).
const char* msg_type_name(uint16_t type);

/// Who a client is (HELLO's role field).
enum class Role : uint32_t {
  kOwner = 0,   ///< the driver: one at a time; connecting resets the device; may do everything
  kAttach = 1,  ///< a debug client beside the owner (`trnsim attach`): registers and memory only, no reset, no wait
};

/// Answer status. Every status but kOk is followed by the server closing the connection; the payload is one line of
/// text saying what was wrong and where.
enum class Status : uint16_t {
  kOk = 0,
  kBadMessage = 1,  ///< malformed frame: bad magic, unknown type, wrong payload length, window range, wrong role
  kVersion = 2,     ///< HELLO with another protocol version
  kAddress = 3,     ///< memory access outside the device's mapped spaces (the device's std::out_of_range)
  kDevice = 4,      ///< the device failed (any other exception of the backend)
  kBusy = 5,        ///< an owner is connected already
};
const char* status_name(uint16_t status);

/// A protocol failure (see the file comment).
class WireError : public std::runtime_error {
 public:
  explicit WireError(const std::string& what, Status status = Status::kBadMessage)
      : std::runtime_error(what), status_(status) {}
  /// What the peer answered (an error answer) or kBadMessage for a local failure.
  Status status() const { return status_; }

 private:
  Status status_;
};

struct Header {
  uint32_t magic = kMagic;
  uint16_t type = 0;
  uint16_t status = 0;
  uint32_t seq = 0;
  uint32_t length = 0;
};

/// A message: its header fields and payload (length is payload.size()).
struct Frame {
  uint16_t type = 0;
  uint16_t status = 0;
  uint32_t seq = 0;
  std::vector<uint8_t> payload;
};

/// Little-endian payload builder and reader. The reader throws WireError naming the message and field when the
/// payload is shorter than the fields read, or longer than them (done()).
class PayloadWriter {
 public:
  PayloadWriter& u32(uint32_t v);
  PayloadWriter& u64(uint64_t v);
  PayloadWriter& bytes(const void* data, std::size_t n);
  std::vector<uint8_t> take() { return std::move(buf_); }

 private:
  std::vector<uint8_t> buf_;
};
class PayloadReader {
 public:
  PayloadReader(const Frame& f) : f_(f) {}
  uint32_t u32(const char* field);
  uint64_t u64(const char* field);
  /// Throws unless every byte was read.
  void done() const;

 private:
  void need(std::size_t n, const char* field) const;
  const Frame& f_;
  std::size_t pos_ = 0;
};

/// One connected stream socket (owns the fd). `peer` names the other side in error texts ("server at /tmp/x").
class Channel {
 public:
  Channel(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  ~Channel();
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }

  /// Sends one frame, with `pass_fd` (>= 0) attached as SCM_RIGHTS. A peer that does not read is waited for at most
  /// `timeout_ms`. WireError when the peer is gone or the time is up.
  void send(const Frame& f, int pass_fd = -1, int timeout_ms = kDefaultTimeoutMs);
  /// Sends `f` only if the socket takes it at once (a keepalive: never worth blocking for); false if not sent.
  bool try_send(const Frame& f);
  /// The server's non-blocking read: takes whatever bytes are there into this channel's buffer and returns a frame
  /// once one is complete (nullopt: not yet). WireError: the peer closed the connection, a bad magic, a payload over
  /// kMaxPayload. partial() tells whether part of a frame is waiting.
  std::optional<Frame> try_recv();
  bool partial() const { return !inbuf_.empty(); }
  /// True when a whole frame waits in the buffer (try_recv() returns it without reading the socket).
  bool has_frame() const;
  /// Receives one frame. `timeout_ms` bounds the wait for its header (-1: no bound) and, separately, its payload
  /// (a peer that stops mid-frame: timeout_ms, or kDefaultTimeoutMs when unbounded). `received_fd`, when given, gets a
  /// passed fd (or -1). WireError: the peer closed the connection, the timeout passed, a bad magic or a payload over
  /// kMaxPayload. `spin`: spin (kSpinUs) before blocking; off where the answer is known to take long (a WAIT_IRQ), so
  /// that the spinning reader does not take CPU from the simulation it waits for.
  Frame recv(int timeout_ms, int* received_fd = nullptr, bool spin = true);
  /// True when a byte (or EOF) is ready to read now.
  bool readable() const;
  /// Polls readable() for up to `us` microseconds; true as soon as it is.
  bool spin_until_readable(int us = kSpinUs) const;

 private:
  void read_exact(void* data, std::size_t n, int timeout_ms, int* received_fd, bool spin);
  std::optional<Frame> parse_buffered();
  /// Sends `b`; with `may_skip`, returns false instead of waiting when not one byte of it fits now.
  bool send_bytes(const std::vector<uint8_t>& b, uint16_t type, int pass_fd, int timeout_ms, bool may_skip);
  int fd_;
  std::string peer_;
  std::vector<uint8_t> inbuf_;  ///< try_recv(): bytes of frames not complete yet
};

/// An error answer to request `req`: status and one line of text.
Frame error_frame(const Frame& req, Status status, const std::string& text);

}  // namespace trnsim::wire
