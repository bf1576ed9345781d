#include "model/core/access_checker.h"

#include <algorithm>

#include <fmt/core.h>

#include "spec/trn_regs.h"

namespace trnsim::model {

AccessChecker::AccessChecker(const ChipConfig& config, const Options& options) : options_(options) {
  spaces_.push_back({"sbuf", regs::SBUF_BASE, config.sbuf_bytes(), config.sbuf_partition_bytes, {}, {}});
  spaces_.push_back({"psum", regs::PSUM_BASE, config.psum_bytes(), config.psum_partition_bytes, {}, {}});
  const size_t agents = size_t(isa::kNumQueues) + size_t(std::max(1, config.num_dma_engines));
  clocks_.assign(agents, Clock(agents, 0));
  sem_clocks_.assign(isa::kNumSemaphores, Clock(agents, 0));
  last_record_.assign(agents, 0);
  on_launch();
}

namespace {
void join(AccessChecker::Clock& into, const AccessChecker::Clock& from) {
  for (size_t i = 0; i < into.size(); ++i) into[i] = std::max(into[i], from[i]);
}
}  // namespace

void AccessChecker::on_launch() {
  ++launch_;
  for (Clock& c : clocks_) std::fill(c.begin(), c.end(), 0);
  for (Clock& c : sem_clocks_) std::fill(c.begin(), c.end(), 0);
  for (int q = 0; q < isa::kNumQueues; ++q) clocks_[size_t(q)][size_t(q)] = 1;  // DMA engines tick per copy
}

void AccessChecker::on_signal(int queue, int sem) {
  join(sem_clocks_[size_t(sem)], clocks_[size_t(queue)]);
  ++clocks_[size_t(queue)][size_t(queue)];
}

void AccessChecker::on_wait(int queue, int sem) { join(clocks_[size_t(queue)], sem_clocks_[size_t(sem)]); }

AccessChecker::Clock AccessChecker::dma_issue(int engine) {
  Clock& c = clocks_[size_t(dma_agent(engine))];
  join(c, clocks_[size_t(isa::Engine::kDma)]);
  ++c[size_t(dma_agent(engine))];
  return c;
}

void AccessChecker::on_copy_signal(const Clock& copy_clock, int sem) { join(sem_clocks_[size_t(sem)], copy_clock); }

void AccessChecker::on_dma_drain() {
  Clock& q = clocks_[size_t(isa::Engine::kDma)];
  for (size_t a = isa::kNumQueues; a < clocks_.size(); ++a) join(q, clocks_[a]);
}

uint32_t AccessChecker::record_for(const Actor& a, const Clock& clock) {
  const uint32_t epoch = clock[size_t(a.agent)];
  const uint32_t last = last_record_[size_t(a.agent)];
  if (last != 0) {
    const Record& r = records_[last];
    if (r.queue == a.queue && r.index == a.index && r.epoch == epoch && r.launch == launch_) return last;
  }
  records_.push_back({a.agent, a.queue, a.index, a.op, a.dma_engine, epoch, launch_});
  last_record_[size_t(a.agent)] = uint32_t(records_.size() - 1);
  return last_record_[size_t(a.agent)];
}

bool AccessChecker::ordered(uint32_t id, const Clock& clock, int agent) const {
  const Record& r = records_[id];
  return r.launch != launch_ || r.agent == agent || clock[size_t(r.agent)] >= r.epoch;
}

std::string AccessChecker::describe(const Record& r) const {
  const std::string op(isa::opcode_name(r.op).value_or("?"));
  const std::string queue(isa::engine_name(static_cast<isa::Engine>(r.queue)));
  if (r.dma_engine >= 0) {
    return fmt::format("{} instruction {} ({} on DMA engine {})", queue, r.index, op, r.dma_engine);
  }
  return fmt::format("{} instruction {} ({})", queue, r.index, op);
}

// The accessing instruction, as the text after "queue Q, instruction I" of the driver's message.
std::string AccessChecker::actor_text(const Actor& a) {
  const std::string op(isa::opcode_name(a.op).value_or("?"));
  return a.dma_engine >= 0 ? fmt::format("{} on DMA engine {}", op, a.dma_engine) : op;
}

std::string AccessChecker::where(const Space& s, uint64_t first, uint64_t last) const {
  const uint64_t p = first / s.partition_bytes;
  if (last / s.partition_bytes == p) {
    return fmt::format("{} partition {} bytes 0x{:x}..0x{:x}", s.name, p, first % s.partition_bytes,
                       last % s.partition_bytes);
  }
  return fmt::format("{} bytes 0x{:x}..0x{:x} (partition {} offset 0x{:x} to partition {} offset 0x{:x})", s.name,
                     first, last, p, first % s.partition_bytes, last / s.partition_bytes, last % s.partition_bytes);
}

Fault AccessChecker::hazard(const Space& s, const Actor& a, bool write, uint32_t other, bool other_wrote,
                            uint64_t first, uint64_t last) const {
  const char* kind = write ? (other_wrote ? "write-after-write" : "write-after-read") : "read-after-write";
  return Fault{regs::ERR_HAZARD, 0,
               fmt::format("{} {} {}, which {} {} before, with no semaphore chain ordering the two ({} hazard)",
                           actor_text(a), write ? "writes" : "reads", where(s, first, last), describe(records_[other]),
                           other_wrote ? "wrote" : "read", kind)};
}

std::optional<Fault> AccessChecker::access(const Actor& a, uint64_t device_addr, uint64_t bytes, bool write) {
  Space* s = nullptr;
  for (Space& sp : spaces_) {
    if (device_addr >= sp.base && device_addr - sp.base < sp.size) s = &sp;
  }
  if (s == nullptr || bytes == 0) return std::nullopt;
  const uint64_t begin = device_addr - s->base, end = std::min(s->size, begin + bytes);

  if (options_.uninit) {
    for (uint64_t at = begin; at < end;) {
      const uint64_t page = at / kPageBytes, off = at % kPageBytes, chunk = std::min(end - at, kPageBytes - off);
      auto& w = s->written[page];
      if (write) {
        if (!w) w = std::make_unique<uint8_t[]>(kPageBytes);
        std::fill(w.get() + off, w.get() + off + chunk, uint8_t{1});
      } else {
        for (uint64_t i = 0; i < chunk; ++i) {
          if (w && w[off + i]) continue;
          // The run of unwritten bytes from here, inside this partition and this access.
          const uint64_t first = at + i, part_end = (first / s->partition_bytes + 1) * s->partition_bytes;
          uint64_t last = first;
          while (last + 1 < std::min(end, part_end)) {
            const auto it = s->written.find((last + 1) / kPageBytes);
            if (it != s->written.end() && it->second && it->second[(last + 1) % kPageBytes]) break;
            ++last;
          }
          return Fault{regs::ERR_UNINIT_READ, 0,
                       fmt::format("{} reads {}, which no engine has written (fresh SBUF/PSUM holds NaN in checked "
                                   "mode)", actor_text(a), where(*s, first, last))};
        }
      }
      at += chunk;
    }
  }

  if (options_.hazards) {
    const Clock& clock = a.clock ? *a.clock : clocks_[size_t(a.agent)];
    const uint32_t id = record_for(a, clock);
    // Neighbouring bytes mostly hold the same history: a byte equal to the one before (no conflict) gets the same
    // new state without asking the clocks again.
    Shadow prev_in, prev_out;
    bool have_prev = false;
    for (uint64_t at = begin; at < end;) {
      const uint64_t page = at / kPageBytes, off = at % kPageBytes, chunk = std::min(end - at, kPageBytes - off);
      auto& sh = s->shadow[page];
      if (!sh) sh = std::make_unique<Shadow[]>(kPageBytes);
      for (uint64_t i = 0; i < chunk; ++i) {
        Shadow& b = sh[off + i];
        if (have_prev && b.write == prev_in.write && b.read0 == prev_in.read0 && b.read1 == prev_in.read1) {
          b = prev_out;
          continue;
        }
        prev_in = b;
        // The conflicting earlier access of this byte, if any: an unordered write, or (for a write) an unordered read.
        const auto conflict_of = [&](const Shadow& x, bool* wrote) -> uint32_t {
          *wrote = true;
          if (x.write && !ordered(x.write, clock, a.agent)) return x.write;
          *wrote = false;
          if (!write) return 0;
          if (x.read0 && !ordered(x.read0, clock, a.agent)) return x.read0;
          if (x.read1 && !ordered(x.read1, clock, a.agent)) return x.read1;
          return 0;
        };
        bool wrote = false;
        if (const uint32_t other = conflict_of(b, &wrote)) {
          // Report the run of bytes (inside this partition and this access) that conflict with the same access.
          const uint64_t first = at + i, part_end = (first / s->partition_bytes + 1) * s->partition_bytes;
          uint64_t last = first;
          while (last + 1 < std::min(end, part_end)) {
            const auto it = s->shadow.find((last + 1) / kPageBytes);
            bool w2 = false;
            if (it == s->shadow.end() || conflict_of(it->second[(last + 1) % kPageBytes], &w2) != other) break;
            ++last;
          }
          return hazard(*s, a, write, other, wrote, first, last);
        }
        if (write) {
          b = Shadow{id, 0, 0};
        } else if (b.read0 == 0 || b.read0 == id || ordered(b.read0, clock, a.agent)) {
          b.read0 = id;
        } else {
          b.read1 = id;  // a third concurrent reader replaces the second (documented limit)
        }
        prev_out = b;
        have_prev = true;
      }
      at += chunk;
    }
  }
  return std::nullopt;
}

}  // namespace trnsim::model
