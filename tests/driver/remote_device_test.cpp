// The wire protocol (firmware/driver/wire.h, docs/driver.md "Wire protocol"): driver::RemoteDevice against a
// wire::DeviceServer serving the mock device, and raw frames that break the protocol on purpose. The server must
// answer every bad frame with an error and close that connection, and go on serving the next client.
#include "firmware/driver/remote_device.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <numeric>
#include <thread>

#include "firmware/driver/device_server.h"
#include "firmware/driver/driver.h"
#include "firmware/driver/wire.h"
#include "spec/trn_regs.h"
#include "tests/driver/backends.h"
#include "tests/driver/mock_device.h"

namespace trnsim::test {
namespace {

using wire::Frame;
using wire::MsgType;
using wire::Status;
using wire::WireError;

/// A served device: `dev` behind a DeviceServer in a thread.
class Served {
 public:
  explicit Served(driver::Device& dev, uint64_t window = 1 << 20) {
    wire::DeviceServer::Options o;
    o.window_bytes = window;
    server_ = std::make_unique<wire::DeviceServer>(dev, dir_.path() + "/d.sock", o);
    thread_ = std::thread([this] { server_->serve(); });
  }
  ~Served() { stop(); }
  void stop() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }
  std::string path() const { return dir_.path() + "/d.sock"; }

 private:
  TempDir dir_;
  std::unique_ptr<wire::DeviceServer> server_;
  std::thread thread_;
};

/// A raw connection for frames the real client would never send.
std::unique_ptr<wire::Channel> raw_connect(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0) << path;
  return std::make_unique<wire::Channel>(fd, "test server");
}

Frame frame(MsgType t, std::vector<uint8_t> payload, uint32_t seq = 1) {
  Frame f;
  f.type = uint16_t(t);
  f.seq = seq;
  f.payload = std::move(payload);
  return f;
}

Frame hello(uint32_t version = wire::kVersion, wire::Role role = wire::Role::kOwner) {
  return frame(MsgType::kHello, wire::PayloadWriter().u32(version).u32(uint32_t(role)).take());
}

/// Sends `f`, expects an error answer with `status` whose text contains `text`, then the connection closed.
void expect_refused(wire::Channel& ch, const Frame& f, Status status, const std::string& text) {
  ch.send(f);
  const Frame ans = ch.recv(2000);
  EXPECT_EQ(ans.status, uint16_t(status)) << wire::status_name(ans.status);
  const std::string got(ans.payload.begin(), ans.payload.end());
  EXPECT_NE(got.find(text), std::string::npos) << got;
  EXPECT_THROW(ch.recv(2000), WireError);  // closed
}

TEST(RemoteDevice, RegistersMemoryAndTheRunGoThrough) {
  MockDevice mock;
  Served s(mock);
  driver::RemoteDevice dev(s.path());
  EXPECT_EQ(dev.read_reg(regs::ID), regs::kIdValue);
  dev.write_reg(regs::WATCHDOG_CYCLES, 4321);  // posted
  EXPECT_EQ(dev.read_reg(regs::WATCHDOG_CYCLES), 4321u);
  // More than the 1 MiB window: chunks.
  std::vector<uint8_t> data(3 * (1 << 20) + 777);
  std::iota(data.begin(), data.end(), uint8_t(5));
  dev.write_mem(regs::HBM_BASE + 100, data.data(), data.size());
  std::vector<uint8_t> back(data.size());
  dev.read_mem(regs::HBM_BASE + 100, back.data(), back.size());
  EXPECT_EQ(back, data);
  // A whole driver run: the mock finishes at 5000 cycles.
  driver::Driver drv(dev);
  isa::Program p;
  p.queue(isa::Engine::kDma) = {isa::Instruction::halt()};
  drv.load_program(p);
  mock.outcome.cycles = 5000;
  EXPECT_EQ(drv.run(1'000'000).cycles, 5000u);
}

TEST(RemoteDevice, OutOfRangeMemoryIsOutOfRangeAndClosesTheConnection) {
  MockDevice mock;
  Served s(mock);
  driver::RemoteDevice dev(s.path());
  uint8_t b[8] = {};
  EXPECT_THROW(dev.write_mem(0x5000'0000'0000ull, b, sizeof b), std::out_of_range);
  EXPECT_THROW(dev.read_reg(regs::ID), WireError);  // the server closed it
  driver::RemoteDevice next(s.path());              // and serves the next client
  EXPECT_EQ(next.read_reg(regs::ID), regs::kIdValue);
}

TEST(RemoteDevice, MalformedFramesGetAnErrorAndTheServerGoesOn) {
  MockDevice mock;
  Served s(mock);
  {
    auto ch = raw_connect(s.path());
    expect_refused(*ch, hello(7), Status::kVersion, "version 7");
  }
  {
    auto ch = raw_connect(s.path());
    expect_refused(*ch, frame(MsgType::kReadReg, wire::PayloadWriter().u32(0).take()), Status::kBadMessage,
                   "before hello");
  }
  {
    auto ch = raw_connect(s.path());
    ch->send(hello());
    int fd = -1;
    const Frame ok = ch->recv(2000, &fd);
    EXPECT_EQ(ok.status, 0);
    EXPECT_GE(fd, 0);
    ::close(fd);
    expect_refused(*ch, frame(MsgType::kReadReg, {1, 2}), Status::kBadMessage, "ends before field offset");
  }
  {
    auto ch = raw_connect(s.path());
    ch->send(hello());
    int fd = -1;
    ch->recv(2000, &fd);
    ::close(fd);
    expect_refused(*ch, Frame{77, 0, 2, {}}, Status::kBadMessage, "unknown message type 77");
  }
  {
    auto ch = raw_connect(s.path());
    ch->send(hello());
    int fd = -1;
    ch->recv(2000, &fd);
    ::close(fd);
    // 16 bytes at the end of the 1 MiB window: past it.
    expect_refused(
        *ch, frame(MsgType::kWriteMem, wire::PayloadWriter().u64(regs::HBM_BASE).u64(16).u64((1 << 20) - 8).take()),
        Status::kBadMessage, "do not fit the 1048576-byte window");
  }
  {
    auto ch = raw_connect(s.path());
    const uint8_t garbage[16] = {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1', '\r', '\n'};
    ASSERT_EQ(::send(ch->fd(), garbage, sizeof garbage, MSG_NOSIGNAL), ssize_t(sizeof garbage));
    const Frame ans = ch->recv(2000);
    EXPECT_EQ(ans.status, uint16_t(Status::kBadMessage));
    EXPECT_NE(std::string(ans.payload.begin(), ans.payload.end()).find("not a trnsim wire frame"), std::string::npos);
  }
  driver::RemoteDevice dev(s.path());  // still serving
  EXPECT_EQ(dev.read_reg(regs::ID), regs::kIdValue);
}

TEST(RemoteDevice, ASecondOwnerIsBusyAnAttachClientIsWelcome) {
  MockDevice mock;
  Served s(mock);
  driver::RemoteDevice owner(s.path());
  try {
    driver::RemoteDevice second(s.path());
    ADD_FAILURE() << "a second owner connected";
  } catch (const WireError& e) {
    EXPECT_EQ(e.status(), Status::kBusy);
    EXPECT_NE(std::string(e.what()).find("device busy"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(s.path()), std::string::npos) << e.what();
  }
  owner.write_reg(regs::WATCHDOG_CYCLES, 99);
  driver::RemoteDevice attach(s.path(), wire::Role::kAttach);
  EXPECT_EQ(attach.read_reg(regs::WATCHDOG_CYCLES), 99u);  // no reset for an attach client
  EXPECT_THROW(attach.wait_interrupt(10), WireError);      // waiting is the owner's
  EXPECT_EQ(owner.read_reg(regs::WATCHDOG_CYCLES), 99u);
}

/// A device that takes 30 ms of host time per wait and raises its line after `irq_after` cycles.
class SlowDevice final : public driver::Device {
 public:
  /// Raises its line once `irq_after` cycles were waited for; each wait takes `slice_ms` of host time.
  explicit SlowDevice(uint64_t irq_after, int slice_ms = 30) : irq_after_(irq_after), slice_ms_(slice_ms) {}
  uint32_t read_reg(uint32_t offset) override { return mock.read_reg(offset); }
  void write_reg(uint32_t offset, uint32_t value) override { mock.write_reg(offset, value); }
  void write_mem(uint64_t a, const void* d, std::size_t n) override { mock.write_mem(a, d, n); }
  void read_mem(uint64_t a, void* d, std::size_t n) override { mock.read_mem(a, d, n); }
  bool wait_interrupt(uint64_t max_cycles) override {
    if (max_cycles == 0) return waited_ >= irq_after_;
    std::this_thread::sleep_for(std::chrono::milliseconds(slice_ms_));
    waited_ += max_cycles;
    ++waits;
    return waited_ >= irq_after_;
  }
  MockDevice mock;
  std::atomic<int> waits{0};

 private:
  uint64_t irq_after_;
  int slice_ms_;
  uint64_t waited_ = 0;
};

TEST(RemoteDevice, KeepalivesCarryALongWaitPastTheClientTimeout) {
  SlowDevice slow(80 * 1024);  // about 80 slices of 30 ms: 2.4 s, three times the client's 800 ms timeout
  Served s(slow);
  driver::RemoteDevice dev(s.path(), wire::Role::kOwner, /*timeout_ms=*/800);
  EXPECT_TRUE(dev.wait_interrupt(1'000'000));
  EXPECT_GE(slow.waits.load(), 40);
}

TEST(RemoteDevice, KeepalivesGoOnWhileOneSliceRunsLongerThanTheClientTimeout) {
  // One slice of 2.5 s (a step that was idle and cheap, then a collective over 16 chips): the keepalives come from
  // the server's second thread on the clock, so the client's 800 ms timeout never fires (it did: "no answer for
  // 10000 ms" on a served 32 MiB all-reduce).
  SlowDevice slow(1, 2500);
  Served s(slow);
  driver::RemoteDevice dev(s.path(), wire::Role::kOwner, /*timeout_ms=*/800);
  EXPECT_TRUE(dev.wait_interrupt(1'000'000));
  EXPECT_EQ(slow.waits.load(), 1);
}

TEST(RemoteDevice, AnOwnerThatDiesMidWaitLeavesTheServerReady) {
  SlowDevice slow(~0ull);  // never raises its line
  Served s(slow);
  {
    auto ch = raw_connect(s.path());
    ch->send(hello());
    int fd = -1;
    ch->recv(2000, &fd);
    ::close(fd);
    ch->send(frame(MsgType::kWaitIrq, wire::PayloadWriter().u64(1ull << 40).take(), 2));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }  // the client dies in the middle of its wait
  const auto t0 = std::chrono::steady_clock::now();
  driver::RemoteDevice next(s.path());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  EXPECT_EQ(next.read_reg(regs::ID), regs::kIdValue);
}

TEST(RemoteDevice, ClientsConnectingDuringAnOwnersWaitAreServed) {
  // Accepting while an owner's WAIT_IRQ runs adds connections under the serve loop's feet (a crash once).
  SlowDevice slow(30 * 1024);
  Served s(slow);
  driver::RemoteDevice owner(s.path());
  std::thread waiter([&] { EXPECT_TRUE(owner.wait_interrupt(1'000'000)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int i = 0; i < 20; ++i) {
    driver::RemoteDevice attach(s.path(), wire::Role::kAttach);
    EXPECT_EQ(attach.read_reg(regs::ID), regs::kIdValue);
  }
  waiter.join();
}

TEST(RemoteDevice, AHalfSentFrameHoldsUpNobodyElse) {
  MockDevice mock;
  Served s(mock);
  auto slow = raw_connect(s.path());
  const uint8_t five[5] = {0x54, 0x52, 0x4E, 0x57, 0x01};  // the start of a header, then nothing
  ASSERT_EQ(::send(slow->fd(), five, sizeof five, MSG_NOSIGNAL), 5);
  const auto t0 = std::chrono::steady_clock::now();
  driver::RemoteDevice dev(s.path());
  for (int i = 0; i < 100; ++i) EXPECT_EQ(dev.read_reg(regs::ID), regs::kIdValue);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

// The server's bounds on a client (docs/driver.md, "Bounded waits"): a hello that does not come within idle_ms, a
// frame begun and not finished within idle_ms, answers not read within send_timeout_ms. Each closes that connection
// with a one-line reason naming the bound, and the server goes on serving.
TEST(DeviceServer, EachBoundOnAClientClosesItsConnectionNamingTheBound) {
  MockDevice mock;
  TempDir dir;
  std::mutex m;
  std::vector<std::string> log;
  wire::DeviceServer::Options o;
  o.window_bytes = 1 << 20;
  o.idle_ms = 300;
  o.send_timeout_ms = 300;
  o.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> g(m);
    log.push_back(line);
  };
  const std::string path = dir.path() + "/d.sock";
  wire::DeviceServer server(mock, path, o);
  std::thread serving([&] { server.serve(); });

  auto silent = raw_connect(path);  // connects, never says hello
  auto half = raw_connect(path);    // says hello, then half a header
  auto deaf = raw_connect(path);    // says hello, then requests without reading the answers
  for (auto* ch : {half.get(), deaf.get()}) {
    ch->send(hello(wire::kVersion, wire::Role::kAttach));
    int fd = -1;
    ch->recv(2000, &fd);
    if (fd >= 0) ::close(fd);
  }
  const uint8_t five[5] = {0x54, 0x52, 0x4E, 0x57, 0x02};
  ASSERT_EQ(::send(half->fd(), five, sizeof five, MSG_NOSIGNAL), 5);
  // READ_REG of offset 0, as bytes: u32 magic, u16 type, u16 status, u32 seq, u32 length, u32 offset.
  std::vector<uint8_t> one = wire::PayloadWriter().u32(wire::kMagic).u32(uint32_t(MsgType::kReadReg)).u32(7)
                                 .u32(4).u32(0).take();
  std::vector<uint8_t> burst;
  for (int i = 0; i < 1000; ++i) burst.insert(burst.end(), one.begin(), one.end());
  const auto t0 = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5)) {  // until the server hangs up
    if (::send(deaf->fd(), burst.data(), burst.size(), MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5)) << "the deaf client was never dropped";
  for (auto* ch : {silent.get(), half.get()}) EXPECT_THROW(ch->recv(3000), WireError);  // closed, not silent
  {
    driver::RemoteDevice dev(path);  // the server goes on
    EXPECT_EQ(dev.read_reg(regs::ID), regs::kIdValue);
  }
  server.stop();
  serving.join();
  std::string all;
  for (const std::string& l : log) all += l + "\n";
  EXPECT_NE(all.find("closed: no hello within 300 ms"), std::string::npos) << all;
  EXPECT_NE(all.find("closed: a frame begun and not finished for 300 ms"), std::string::npos) << all;
  EXPECT_NE(all.find("does not read: gave up sending read_reg after 300 ms"), std::string::npos) << all;
}

TEST(RemoteDevice, TheWindowCannotBeShrunkUnderTheServer) {
  MockDevice mock;
  Served s(mock);
  auto ch = raw_connect(s.path());
  ch->send(hello(wire::kVersion, wire::Role::kAttach));
  int fd = -1;
  ASSERT_EQ(ch->recv(2000, &fd).status, 0);
  ASSERT_GE(fd, 0);
  EXPECT_NE(::ftruncate(fd, 0), 0);  // sealed: F_SEAL_SHRINK
  ::close(fd);
  ch->send(frame(MsgType::kReadMem, wire::PayloadWriter().u64(regs::HBM_BASE).u64(4096).u64(0).take(), 2));
  EXPECT_EQ(ch->recv(2000).status, 0);  // and the server is still there to answer
}

TEST(RemoteDevice, AServerThatDiesFailsTheClientWithinASecondNamingTheSocket) {
  MockDevice mock;
  auto s = std::make_unique<Served>(mock);
  const std::string path = s->path();
  driver::RemoteDevice dev(path);
  s->stop();
  const auto t0 = std::chrono::steady_clock::now();
  try {
    dev.read_reg(regs::ID);
    ADD_FAILURE() << "read_reg after the server stopped";
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 1.0);
}

TEST(RemoteDevice, ASilentServerTimesOut) {
  TempDir dir;
  const std::string path = dir.path() + "/silent.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(fd, 4), 0);  // accepts into the backlog, never answers
  const auto t0 = std::chrono::steady_clock::now();
  try {
    driver::RemoteDevice dev(path, wire::Role::kOwner, 300);
    ADD_FAILURE() << "connected to a silent server";
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find("no answer for 300 ms"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
  ::close(fd);
}

TEST(RemoteDevice, NothingListeningIsAClearError) {
  TempDir dir;
  try {
    driver::RemoteDevice dev(dir.path() + "/none.sock");
    ADD_FAILURE() << "connected to nothing";
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find("is `trnsim serve --socket` running?"), std::string::npos) << e.what();
  }
}

TEST(DeviceServer, ReplacesAStaleSocketRefusesALiveOneAndOtherFiles) {
  TempDir dir;
  MockDevice mock;
  const std::string path = dir.path() + "/s.sock";
  {  // a socket file whose server died without removing it
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    ::close(fd);
  }
  wire::DeviceServer live(mock, path, {});
  try {
    wire::DeviceServer second(mock, path, {});
    ADD_FAILURE() << "two servers on one path";
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find("a server is listening there already"), std::string::npos) << e.what();
  }
  const std::string file = dir.path() + "/plain";
  ASSERT_EQ(std::system(("echo x > " + file).c_str()), 0);
  EXPECT_THROW(wire::DeviceServer(mock, file, {}), WireError);
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);  // not removed
}

/// A device whose register writes fail.
class BrokenWrites final : public driver::Device {
 public:
  uint32_t read_reg(uint32_t offset) override { return mock.read_reg(offset); }
  void write_reg(uint32_t offset, uint32_t) override {
    if (offset == regs::DOORBELL) throw std::runtime_error("the doorbell is stuck");
  }
  void write_mem(uint64_t a, const void* d, std::size_t n) override { mock.write_mem(a, d, n); }
  void read_mem(uint64_t a, void* d, std::size_t n) override { mock.read_mem(a, d, n); }
  bool wait_interrupt(uint64_t) override { return false; }
  MockDevice mock;
};

TEST(RemoteDevice, APostedWriteThatFailsIsReportedByTheNextCall) {
  BrokenWrites dev;
  Served s(dev);
  driver::RemoteDevice remote(s.path());
  remote.write_reg(regs::DOORBELL, 1);  // posted: returns at once
  try {
    remote.read_reg(regs::STATUS);
    ADD_FAILURE() << "the failed write went unnoticed";
  } catch (const WireError& e) {
    EXPECT_NE(std::string(e.what()).find("earlier write_reg"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the doorbell is stuck"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trnsim::test
