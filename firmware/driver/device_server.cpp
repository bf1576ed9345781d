#include "firmware/driver/device_server.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "firmware/driver/driver.h"
#include "spec/trn_regs.h"

namespace trnsim::wire {

namespace {

constexpr uint64_t kAttachWindowBytes = 1ull << 20;
constexpr int kBurst = 64;            ///< requests of one client per turn
constexpr int kMaxDeferredSlices = 16;  ///< serve-loop rounds with requests before a pending wait's slice runs anyway

}  // namespace

/// One client connection and its shared window.
struct DeviceServer::Conn {
  uint32_t id = 0;
  std::size_t ep = 0;  ///< the endpoint it connected to
  int chip = -1;       ///< for log lines: the endpoint's index when the server has several
  std::unique_ptr<Channel> ch;
  bool hello = false;
  Role role = Role::kAttach;
  int memfd = -1;
  uint8_t* window = nullptr;
  uint64_t window_bytes = 0;
  bool closed = false;
  std::chrono::steady_clock::time_point since = std::chrono::steady_clock::now();  ///< connected / partial frame
  /// An owner's WAIT_IRQ in progress.
  struct Wait {
    uint64_t seq = 0;
    uint64_t left = 0;  ///< cycles of its budget not yet run
    std::chrono::steady_clock::time_point keepalive;
  };
  std::optional<Wait> wait;
  ~Conn() {
    if (window != nullptr) ::munmap(window, window_bytes);
    if (memfd >= 0) ::close(memfd);
  }
  bool owner() const { return hello && role == Role::kOwner; }
  std::string name() const {
    return fmt::format("client {}{}{}", id, !hello ? "" : role == Role::kOwner ? " (owner" : " (attach",
                       !hello ? "" : chip < 0 ? ")" : fmt::format(", chip {})", chip));
  }
};

DeviceServer::DeviceServer(driver::Device& device, std::string socket_path, Options options)
    : DeviceServer(std::vector<Endpoint>{{&device, std::move(socket_path)}}, std::move(options)) {}

DeviceServer::DeviceServer(std::vector<Endpoint> endpoints, Options options)
    : eps_(std::move(endpoints)), options_(std::move(options)) {
  try {
    if (eps_.empty()) throw WireError("a device server needs at least one endpoint");
    for (const Endpoint& e : eps_) {
      if (e.device == nullptr) throw WireError(fmt::format("socket path {}: no device", e.path));
      listen_on(e);
    }
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw WireError(fmt::format("pipe(): {}", std::strerror(errno)));
  } catch (...) {
    close_listeners();
    throw;
  }
}

void DeviceServer::listen_on(const Endpoint& e) { listeners_.emplace_back(e.path); }

void DeviceServer::close_listeners() {
  listeners_.clear();  // each closes its socket and removes its file if it is still its own
  for (int& fd : wake_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

DeviceServer::~DeviceServer() {
  {
    const std::lock_guard<std::mutex> lock(beat_m_);
    beat_stop_ = true;
  }
  beat_cv_.notify_one();
  if (beat_.joinable()) beat_.join();
  conns_.clear();
  close_listeners();
}

void DeviceServer::stop() {
  stop_ = true;
  const char b = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_[1], &b, 1);  // async-signal-safe
}

void DeviceServer::say(const std::string& line) const {
  if (options_.log) options_.log(line);
}

driver::Device& DeviceServer::device_of(const Conn& c) const { return *eps_[c.ep].device; }

bool DeviceServer::any_owner() const {
  return std::any_of(conns_.begin(), conns_.end(), [](const auto& c) { return !c->closed && c->owner(); });
}

void DeviceServer::accept_one(std::size_t endpoint) {
  const int fd = listeners_[endpoint].accept();
  if (fd < 0) {
    if (errno == EMFILE || errno == ENFILE) {  // out of descriptors: back off instead of spinning on the backlog
      say(fmt::format("cannot accept a connection: {}; {} open", std::strerror(errno), conns_.size()));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return;  // or the peer went away between poll and accept
  }
  auto c = std::make_unique<Conn>();
  c->id = next_id_++;
  c->ep = endpoint;
  c->chip = eps_.size() > 1 ? int(endpoint) : -1;
  c->ch = std::make_unique<Channel>(fd, fmt::format("client {}", c->id));
  say(fmt::format("{} connected", c->name()));
  conns_.push_back(std::move(c));
}

void DeviceServer::close_conn(Conn& c, const std::string& why) {
  if (c.closed) return;
  c.closed = true;
  say(fmt::format("{} closed: {}", c.name(), why));
  // The device stays as the owner left it, for `trnsim attach` to look at (a post-mortem); the next owner's hello
  // resets it, and nothing runs meanwhile: simulated time passes only inside an owner's WAIT_IRQ.
  if (c.owner()) owner_left_ = true;
  c.ch.reset();
}

bool DeviceServer::handle(Conn& c) {
  std::optional<Frame> next;
  try {
    next = c.ch->try_recv();
  } catch (const WireError& e) {
    try {  // a malformed header gets its answer too (seq 0: there was no readable request); a dead peer none
      c.ch->send(error_frame(Frame{}, Status::kBadMessage, e.what()), -1, options_.send_timeout_ms);
    } catch (const WireError&) {
    }
    close_conn(c, e.what());
    return false;
  }
  if (!next) {  // part of a frame, or nothing: the rest comes later, and nobody waits for it meanwhile
    if (!c.ch->partial() && c.hello) c.since = std::chrono::steady_clock::now();
    return true;
  }
  const Frame& req = *next;
  c.since = std::chrono::steady_clock::now();
  // Every refusal: an error answer naming what was wrong, then the connection closed.
  const auto refuse = [&](Status status, const std::string& text, const std::string& why) {
    try {
      c.ch->send(error_frame(req, status, text), -1, options_.send_timeout_ms);
    } catch (const WireError&) {  // the client is gone already
    }
    close_conn(c, why);
    return false;
  };
  try {
    return answer(c, req);
  } catch (const WireError& e) {  // a malformed request
    return refuse(e.status(), e.what(), fmt::format("{} ({})", e.what(), status_name(uint16_t(e.status()))));
  } catch (const std::out_of_range& e) {
    return refuse(Status::kAddress, e.what(), fmt::format("{}: {}", msg_type_name(req.type), e.what()));
  } catch (const std::exception& e) {
    return refuse(Status::kDevice, e.what(), fmt::format("device error on {}: {}", msg_type_name(req.type), e.what()));
  }
}

bool DeviceServer::turn(Conn& c) {
  // A few requests per turn (a client may pipeline), then the others' turn. The owner's next request usually
  // follows its answer at once: wait for it spinning (kServerSpinUs) rather than in poll().
  for (int i = 0; i < kBurst; ++i) {
    if (!handle(c) || stop_) return false;
    if (c.wait) break;                // its WAIT_IRQ is pending: nothing more until it is answered
    if (c.ch->has_frame()) continue;  // a pipelined request is buffered already
    if (!(c.owner() && c.ch->spin_until_readable(kServerSpinUs))) break;
  }
  return !c.closed;
}

void DeviceServer::expire_idle() {
  // Bounds on what a client may leave half done: the hello within idle_ms of connecting, a frame within idle_ms
  // of its first byte. An owner or attach client idle between requests may stay as long as it likes.
  const auto now = std::chrono::steady_clock::now();
  for (auto& c : conns_) {
    if (c->closed) continue;
    const bool stalled = !c->hello || c->ch->partial();
    if (stalled && now - c->since > std::chrono::milliseconds(options_.idle_ms)) {
      const std::string bound = options_.idle_ms % 1000 == 0 ? std::to_string(options_.idle_ms / 1000) + " s"
                                                             : std::to_string(options_.idle_ms) + " ms";
      close_conn(*c, c->hello ? "a frame begun and not finished for " + bound : "no hello within " + bound);
    }
  }
}

bool DeviceServer::answer(Conn& c, const Frame& req) {
  Frame ans;
  ans.type = req.type;
  ans.seq = req.seq;
  PayloadReader r(req);
  const auto type = static_cast<MsgType>(req.type);
  if (!c.hello && type != MsgType::kHello) {
    throw WireError(fmt::format("{} before hello", msg_type_name(req.type)));
  }
  const auto owner_only = [&] {
    if (!c.owner())
      throw WireError(fmt::format("{} is for the owner; an attach client may not", msg_type_name(req.type)));
  };
  const auto window_range = [&](uint64_t bytes, uint64_t offset) {
    if (offset > c.window_bytes || bytes > c.window_bytes - offset) {
      throw WireError(fmt::format("{}: {} bytes at window offset {} do not fit the {}-byte window",
                                  msg_type_name(req.type), bytes, offset, c.window_bytes));
    }
  };
  switch (type) {
    case MsgType::kHello: {
      if (c.hello) throw WireError("a second hello");
      const uint32_t version = r.u32("version");
      const uint32_t role = r.u32("role");
      r.done();
      if (version != kVersion) {
        throw WireError(fmt::format("protocol version {} asked; this server speaks version {}", version, kVersion),
                        Status::kVersion);
      }
      if (role > uint32_t(Role::kAttach)) throw WireError(fmt::format("hello: unknown role {}", role));
      c.role = static_cast<Role>(role);
      if (c.role == Role::kOwner && !options_.owned_by.empty()) {
        throw WireError(fmt::format("device busy: {} owns it; this socket serves `trnsim attach` only",
                                    options_.owned_by),
                        Status::kBusy);
      }
      if (c.role == Role::kOwner) {
        for (const auto& o : conns_) {
          if (o.get() != &c && o->ep == c.ep && o->owner() && !o->closed) {
            throw WireError(
                fmt::format("device busy: {} is its owner; use `trnsim attach` to look beside it", o->name()),
                Status::kBusy);
          }
        }
      }
      c.window_bytes = c.role == Role::kOwner ? options_.window_bytes : kAttachWindowBytes;
      c.memfd = ::memfd_create("trnsim-window", MFD_CLOEXEC | MFD_ALLOW_SEALING);
      // Sealed at its size: a client that shrank it could make the server's copies fault (SIGBUS).
      if (c.memfd < 0 || ::ftruncate(c.memfd, static_cast<off_t>(c.window_bytes)) != 0 ||
          ::fcntl(c.memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        throw std::runtime_error(fmt::format("cannot create the shared window: {}", std::strerror(errno)));
      }
      void* p = ::mmap(nullptr, c.window_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, c.memfd, 0);
      if (p == MAP_FAILED) throw std::runtime_error(fmt::format("cannot map the window: {}", std::strerror(errno)));
      c.window = static_cast<uint8_t*>(p);
      c.hello = true;
      if (c.role == Role::kOwner) driver::reset_device(device_of(c));
      ans.payload = PayloadWriter().u32(kVersion).u32(0).u64(c.window_bytes).take();
      c.ch->send(ans, c.memfd, options_.send_timeout_ms);
      say(fmt::format("{} said hello", c.name()));
      return true;
    }
    case MsgType::kReadReg: {
      const uint32_t off = r.u32("offset");
      r.done();
      ans.payload = PayloadWriter().u32(device_of(c).read_reg(off)).take();
      break;
    }
    case MsgType::kWriteReg: {
      const uint32_t off = r.u32("offset");
      const uint32_t value = r.u32("value");
      r.done();
      device_of(c).write_reg(off, value);
      return true;  // posted: no answer
    }
    case MsgType::kReadMem:
    case MsgType::kWriteMem: {
      const uint64_t addr = r.u64("device_addr");
      const uint64_t bytes = r.u64("bytes");
      const uint64_t offset = r.u64("window_offset");
      r.done();
      window_range(bytes, offset);
      if (type == MsgType::kReadMem) {
        device_of(c).read_mem(addr, c.window + offset, bytes);
      } else {
        device_of(c).write_mem(addr, c.window + offset, bytes);
      }
      break;
    }
    case MsgType::kWaitIrq:
      owner_only();
      wait_irq(c, req);
      return !c.closed;
    case MsgType::kReset:
      owner_only();
      r.done();
      driver::reset_device(device_of(c));
      break;
    case MsgType::kPing:
      r.done();
      break;
    case MsgType::kBye:
      r.done();
      c.ch->send(ans, -1, options_.send_timeout_ms);
      close_conn(c, "bye");
      return false;
    default:
      throw WireError(fmt::format("unknown message type {}", req.type));
  }
  c.ch->send(ans, -1, options_.send_timeout_ms);
  return true;
}

void DeviceServer::wait_irq(Conn& c, const Frame& req) {
  PayloadReader r(req);
  const uint64_t max_cycles = r.u64("max_cycles");
  r.done();
  c.wait = Conn::Wait{req.seq, max_cycles, std::chrono::steady_clock::now()};
  const bool irq = device_of(c).wait_interrupt(0);
  if (irq || max_cycles == 0) answer_wait(c, irq);
}

void DeviceServer::answer_wait(Conn& c, bool irq) {
  Frame ans;
  ans.type = static_cast<uint16_t>(MsgType::kWaitIrq);
  ans.seq = c.wait->seq;
  ans.payload = PayloadWriter().u32(irq ? 1 : 0).take();
  c.wait.reset();
  try {
    c.ch->send(ans, -1, options_.send_timeout_ms);
  } catch (const WireError& e) {
    close_conn(c, e.what());
  }
}

void DeviceServer::check_waiting(Conn& c) {
  try {
    if (const auto extra = c.ch->try_recv()) {
      throw WireError(fmt::format("{} while wait_irq runs", msg_type_name(extra->type)));
    }
  } catch (const WireError& e) {
    close_conn(c, e.what());
  }
}

std::optional<std::string> DeviceServer::keepalive(Conn& c) {
  using clock = std::chrono::steady_clock;
  if (clock::now() - c.wait->keepalive < std::chrono::milliseconds(kKeepaliveMs)) return std::nullopt;
  Frame k;
  k.type = static_cast<uint16_t>(MsgType::kKeepalive);
  k.seq = c.wait->seq;
  try {
    c.ch->try_send(k);  // an owner that does not read gets none (and no server blocks on it)
  } catch (const WireError& e) {
    return std::string(e.what());
  }
  c.wait->keepalive = clock::now();
  return std::nullopt;
}

void DeviceServer::beat_loop() {
  std::unique_lock<std::mutex> lock(beat_m_);
  while (!beat_stop_) {
    beat_cv_.wait_for(lock, std::chrono::milliseconds(kKeepaliveMs));
    if (!beat_armed_ || beat_stop_) continue;
    for (const auto& c : conns_) {
      if (c->closed || !c->wait) continue;
      const auto lost = [&](const auto& l) { return l.first == c.get(); };
      if (std::any_of(beat_lost_.begin(), beat_lost_.end(), lost)) continue;
      if (auto error = keepalive(*c)) beat_lost_.emplace_back(c.get(), std::move(*error));
    }
  }
}

void DeviceServer::run_slice() {
  using clock = std::chrono::steady_clock;
  Conn* lead = nullptr;
  for (const auto& c : conns_) {
    if (!c->closed && c->wait) {
      lead = c.get();
      break;
    }
  }
  if (lead == nullptr) return;
  // Slices of about 20-80 ms of host time: short enough for keepalives and the other clients, long enough that the
  // slicing costs nothing measurable (the size carries over from one WAIT_IRQ to the next: a driver that waits in
  // short steps gets one slice per step). The simulation is the same however it is sliced. A slice's host time is
  // only known afterwards (cycles that were idle and cheap may start a collective on 16 chips), so while it runs the
  // keepalive thread (beat_loop) sends the waiting clients theirs on the clock.
  const uint64_t n = std::min(lead->wait->left, slice_cycles_);
  const auto t0 = clock::now();
  if (!beat_.joinable()) beat_ = std::thread([this] { beat_loop(); });
  struct Armed {  // disarms the thread however the slice ends; after it the thread touches no connection
    DeviceServer& s;
    explicit Armed(DeviceServer& server) : s(server) {
      const std::lock_guard<std::mutex> lock(s.beat_m_);
      s.beat_armed_ = true;
    }
    ~Armed() {
      const std::lock_guard<std::mutex> lock(s.beat_m_);
      s.beat_armed_ = false;
    }
  };
  bool lead_irq = false;
  {
    const Armed armed(*this);
    lead_irq = device_of(*lead).wait_interrupt(n);
  }
  for (const auto& [c, why] : beat_lost_) close_conn(*c, why);
  beat_lost_.clear();
  const auto ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  if (ms < 20 && slice_cycles_ < (1ull << 26)) slice_cycles_ *= 2;
  if (ms > 80 && slice_cycles_ > 64) slice_cycles_ /= 2;
  for (const auto& c : conns_) {
    if (c->closed || !c->wait) continue;
    const bool irq = c.get() == lead ? lead_irq : device_of(*c).wait_interrupt(0);
    c->wait->left -= std::min(c->wait->left, n);
    if (irq || c->wait->left == 0) {
      answer_wait(*c, irq);
      continue;
    }
    if (auto error = keepalive(*c)) close_conn(*c, *error);
  }
}

/// The connections whose fds `fds[first..]` polled readable, as stable pointers (conns_ may grow while they are
/// served: accepts during a wait; the Conn objects themselves never move).
std::vector<DeviceServer::Conn*> DeviceServer::ready(const std::vector<pollfd>& fds, std::size_t first) {
  std::vector<Conn*> out;
  for (std::size_t i = first; i < fds.size(); ++i) {
    for (const auto& c : conns_) {
      if (c->closed || c->ch->fd() != fds[i].fd) continue;
      // Readable, or with whole requests already buffered (a pipelining client's rest after its turn ended).
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) || c->ch->has_frame()) out.push_back(c.get());
    }
  }
  return out;
}

bool DeviceServer::any_buffered() const {
  return std::any_of(conns_.begin(), conns_.end(), [](const auto& c) { return !c->closed && c->ch->has_frame(); });
}

void DeviceServer::serve() {
  while (!stop_ && !(options_.once && owner_left_ && !any_owner())) {
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [](const auto& c) { return c->closed; }), conns_.end());
    std::vector<pollfd> fds{{wake_[0], POLLIN, 0}};
    for (const ListeningSocket& l : listeners_) fds.push_back({l.fd(), POLLIN, 0});
    const std::size_t first = fds.size();
    for (const auto& c : conns_) fds.push_back({c->ch->fd(), POLLIN, 0});
    const bool waiting = std::any_of(conns_.begin(), conns_.end(), [](const auto& c) { return bool(c->wait); });
    // A bounded poll: half-done hellos and frames expire (expire_idle) even when nothing else happens; no wait at
    // all while a WAIT_IRQ is pending (the slices below are the pace then).
    if (::poll(fds.data(), fds.size(), any_buffered() || waiting ? 0 : 500) < 0) {
      if (errno == EINTR) continue;
      throw WireError(fmt::format("poll(): {}", std::strerror(errno)));
    }
    if (fds[0].revents & POLLIN) break;
    const std::vector<Conn*> todo = ready(fds, first);
    for (std::size_t e = 0; e < listeners_.size(); ++e) {
      if (fds[1 + e].revents & POLLIN) accept_one(e);
    }
    bool served = false;
    for (std::size_t e = 0; e < listeners_.size(); ++e) served = served || (fds[1 + e].revents & POLLIN);
    for (Conn* c : todo) {
      if (c->closed || stop_) continue;
      served = true;
      if (c->wait) {
        check_waiting(*c);
      } else {
        turn(*c);
      }
    }
    expire_idle();
    // Simulated time passes only when every request that has arrived is answered: a driver that rings the
    // doorbells of several chips (one socket each) and then waits on one sees them all start at the same
    // simulated time, as in process. A client that never stops talking still lets the waits run, every few rounds.
    if (stop_) break;
    if (served && ++deferred_slices_ < kMaxDeferredSlices) continue;
    deferred_slices_ = 0;
    run_slice();
  }
}

}  // namespace trnsim::wire
