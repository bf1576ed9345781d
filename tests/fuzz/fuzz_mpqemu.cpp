// Fuzz target: QEMU's multi-process protocol as `trnsim serve --qemu` serves it (pcie::QemuServer, the PCI function
// of docs/linux-driver.md, the device model behind it). Each input is what one QEMU sends on one connection.
// Documented outcome: RET for every configuration, BAR and reset message; a malformed message closes the
// connection, never the server. Oracles: the server closes every connection within kCloseBoundMs of the end of
// the stream and keeps serving; no crash.
//
// Messages carry file descriptors (SYNC_SYSMEM's guest RAM, SET_IRQFD's eventfds) that bytes cannot: the input is
// a list of messages, each {i32 cmd, u8 fds (bits 3:0 count 0..15, bit 4 memfds of 1 MiB, else eventfds), u16 data
// bytes (modulo 257), the data}, and the harness attaches those fds.
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <vector>

#include "cosim/pcie/mpqemu.h"
#include "cosim/pcie/qemu_server.h"
#include "tests/fuzz/server_harness.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ServerHarness<pcie::QemuServer> harness("mpqemu");
  static const bool attached = [] {  // once: the device's DMA reaches guest RAM through the server's bus master
    harness.device().attach_host_memory(&harness.server().bus_master());
    return true;
  }();
  (void)attached;
  const int fd = harness.connect();
  fuzz::Reader in(data, size);
  while (!in.empty()) {
    const int32_t cmd = in.take<int32_t>();
    const uint8_t fd_spec = in.take<uint8_t>();
    const std::vector<uint8_t> body = in.bytes(in.take<uint16_t>() % 257);
    std::vector<int> fds;
    for (int i = 0; i < (fd_spec & 15); ++i) {
      int f = -1;
      if (fd_spec & 16) {
        f = memfd_create("fuzz-ram", MFD_CLOEXEC);
        if (f >= 0 && ftruncate(f, 1 << 20) != 0) fuzz::fail("ftruncate of a memfd failed");
      } else {
        f = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
      }
      if (f < 0) fuzz::fail("cannot make the fds of a message");
      fds.push_back(f);
    }
    bool sent = true;
    try {
      pcie::mpqemu::send(fd, cmd, body, fds, 2000);
    } catch (const pcie::mpqemu::ProtocolError&) {
      sent = false;  // the server closed the connection (its answer to a bad message)
    }
    for (const int f : fds) ::close(f);
    if (!sent) break;
  }
  fuzz::converse(fd, nullptr, 0);
  ::close(fd);
  return 0;
}
