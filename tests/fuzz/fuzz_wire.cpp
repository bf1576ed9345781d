// Fuzz target: the wire protocol of `trnsim serve` (wire::DeviceServer, docs/driver.md "Wire protocol") with the
// device model behind it (config tiny, TLM Tensor Engine). Each input is the byte stream one client sends on one
// connection: frames (HELLO as owner or attach, register and memory requests, WAIT_IRQ, RESET, PING), damaged
// frames, or garbage.
// Documented outcome: the server answers each complete request or sends an error answer and closes the
// connection; it never stops for a client's fault. Oracles: the server closes every connection within
// kCloseBoundMs of the end of the stream (no hang) and keeps serving (the next input connects); no crash.
#include "firmware/driver/device_server.h"
#include "tests/fuzz/server_harness.h"

using namespace trnsim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::ServerHarness<wire::DeviceServer> harness("wire");
  const int fd = harness.connect();
  fuzz::converse(fd, data, size);
  ::close(fd);
  return 0;
}
