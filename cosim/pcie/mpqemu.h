// The messages of QEMU's multi-process protocol (QEMU 7.2, `-device x-pci-proxy-dev`; QEMU's "Multi-process QEMU"
// documentation and include/hw/remote/mpqemu-link.h), the remote device's side, written from that description.
//
// A message on the UNIX stream socket: a 16-byte header in host byte order (x86-64: little-endian),
//   i32 cmd, 4 bytes padding, u64 size (bytes of data that follow)
// with the file descriptors it carries attached to the header as SCM_RIGHTS, then `size` bytes of data:
//   SYNC_SYSMEM   u64 gpa[8], u64 size[8], i64 offset[8] (192 bytes), one fd per region: guest RAM to map
//   PCI_CFGWRITE  u32 addr, u32 val, i32 len (12 bytes)                      answered by RET
//   PCI_CFGREAD   the same (val 0)                                           answered by RET val
//   BAR_WRITE     u64 addr (bus address), u64 val, u32 size, u8 memory, 3 bytes padding (24 bytes)   RET
//   BAR_READ      the same (val 0)                                           answered by RET val
//   SET_IRQFD     no data, 2 fds: the INTx irqfd (write 1 to assert) and its resample eventfd
//   DEVICE_RESET  no data                                                    answered by RET
//   RET           u64 value (8 bytes): the answer
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::pcie::mpqemu {

enum class Cmd : int32_t {
  kSyncSysmem = 0,
  kRet = 1,
  kPciCfgWrite = 2,
  kPciCfgRead = 3,
  kBarWrite = 4,
  kBarRead = 5,
  kSetIrqfd = 6,
  kDeviceReset = 7,
};
const char* cmd_name(int32_t cmd);  ///< "sync_sysmem", ... ("unknown" otherwise)

inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr int kMaxFds = 8;  ///< REMOTE_MAX_FDS
inline constexpr std::size_t kSyncSysmemBytes = 3 * 8 * kMaxFds, kPciConfBytes = 12, kBarAccessBytes = 24;
inline constexpr std::size_t kMaxDataBytes = kSyncSysmemBytes;

/// A malformed message or a broken connection; the text names the command and the field.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A file descriptor this side owns (closed by the destructor).
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd();
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_ = -1;
};

struct Message {
  int32_t cmd = 0;
  std::vector<uint8_t> data;  ///< `size` bytes
  std::vector<Fd> fds;
};

struct SyncSysmem {
  struct Region {
    uint64_t gpa = 0, size = 0;
    int64_t offset = 0;
  };
  std::vector<Region> regions;  ///< one per fd of the message
};
struct PciConf {
  uint32_t addr = 0, val = 0;
  int32_t len = 0;
};
struct BarAccess {
  uint64_t addr = 0, val = 0;
  uint32_t size = 0;
  bool memory = false;
};

/// Checks `m` as QEMU's mpqemu_msg_valid does (known command, data size of its command, the fds it needs) and
/// decodes it. ProtocolError names what is wrong.
SyncSysmem sync_sysmem(const Message& m);
PciConf pci_conf(const Message& m);
BarAccess bar_access(const Message& m);
void check(const Message& m);

/// The data of a message with these fields (the layouts above): for the sender's side (tests play QEMU with them).
std::vector<uint8_t> encode(const SyncSysmem& s);
std::vector<uint8_t> encode(const PciConf& c);
std::vector<uint8_t> encode(const BarAccess& b);

/// Receives one message from `sock`: false at a clean end of the stream (no byte of a message read). Waits for the
/// header as long as it takes (the caller polls first); the rest must follow within `rest_ms`. ProtocolError for a
/// message cut short, a size over kMaxDataBytes, more than kMaxFds fds (all received fds are closed then).
bool receive(int sock, Message* m, int rest_ms = 2000);
/// Sends RET `value`. ProtocolError when the peer is gone or does not read within `timeout_ms`.
void send_ret(int sock, uint64_t value, int timeout_ms = 2000);
/// Sends any message (the test's side: QEMU's messages to the device), with `fds` attached.
void send(int sock, int32_t cmd, const std::vector<uint8_t>& data, const std::vector<int>& fds = {},
          int timeout_ms = 2000);

}  // namespace trnsim::pcie::mpqemu
