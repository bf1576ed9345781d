#include "model/core/dma_engine.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/core.h>

#include "model/core/engine_observer.h"
#include "model/fp/fp_ops.h"

namespace trnsim::model {

using namespace sc_core;

DmaEngine::DmaEngine(const sc_module_name& name, CoreControl& control)
    : QueueEngine(name, isa::Engine::kDma, control),
      engine_free_at_(size_t(std::max(1, control.config().num_dma_engines)), SC_ZERO_TIME),
      engine_busy_(engine_free_at_.size(), SC_ZERO_TIME),
      engine_copies_(engine_free_at_.size(), 0) {
  // A copy in flight keeps the watchdog from firing (an engine busy past now is moving this program's bytes).
  control.set_transfer_probe([this] {
    return std::any_of(engine_free_at_.begin(), engine_free_at_.end(),
                       [](const sc_time& t) { return t > sc_time_stamp(); });
  });
}

void DmaEngine::on_start() {
  // Copies of an abandoned program (a soft reset mid-run) wake at the reset and end: they neither land nor hold an
  // engine or the new program's drain.
  std::fill(engine_free_at_.begin(), engine_free_at_.end(), sc_time_stamp());
  outstanding_ = 0;
}

uint64_t DmaEngine::space_base(isa::MemSpace s) const {
  switch (s) {
    case isa::MemSpace::kHbm: return regs::HBM_BASE;
    case isa::MemSpace::kSbuf: return regs::SBUF_BASE;
    case isa::MemSpace::kPsum: return regs::PSUM_BASE;
    case isa::MemSpace::kHost: return regs::HOST_BASE;
  }
  return regs::HBM_BASE;
}

uint64_t DmaEngine::space_size(isa::MemSpace s) const {
  const ChipConfig& c = control_.config();
  switch (s) {
    case isa::MemSpace::kHbm: return c.hbm_bytes;
    case isa::MemSpace::kSbuf: return c.sbuf_bytes();
    case isa::MemSpace::kPsum: return c.psum_bytes();
    case isa::MemSpace::kHost: return regs::HOST_SIZE;  // what the host maps is known only when the copy runs
  }
  return 0;
}

std::optional<Fault> DmaEngine::check_side(isa::MemSpace space, uint64_t addr,
                                           const std::array<int32_t, isa::kApDims>& stride,
                                           const isa::CopyFields& c, unsigned elem_bytes, bool is_src) const {
  const auto range = pattern_range(addr, c.count, stride, elem_bytes);
  const uint64_t size = space_size(space);
  if (range && range->last < size) return std::nullopt;
  const uint32_t code = space == isa::MemSpace::kHbm    ? regs::ERR_HBM_RANGE
                        : space == isa::MemSpace::kSbuf ? regs::ERR_SBUF_RANGE
                        : space == isa::MemSpace::kPsum ? regs::ERR_PSUM_RANGE
                                                        : regs::ERR_HOST_ACCESS;
  const char* field = is_src ? "src_addr" : "dst_addr";
  return Fault{code, uint32_t(isa::field_id(field)),
               range ? fmt::format("{} pattern touches bytes 0x{:x}..0x{:x}, outside {} ({} bytes)", field,
                                   range->first, range->last, isa::mem_space_name(space), size)
                     : fmt::format("{} pattern from 0x{:x} leaves the 64-bit address space (below 0 or past "
                                   "2^64 - 1) of {}",
                                   field, addr, isa::mem_space_name(space))};
}

std::optional<Fault> DmaEngine::execute(const isa::Instruction& instr, uint32_t index) {
  const isa::CopyFields& c = instr.copy;
  const unsigned sbytes = isa::data_type_bytes(c.src_type), dbytes = isa::data_type_bytes(c.dst_type);
  // A copy's bytes (count product x element bytes) must fit the model's arithmetic: zero strides let a copy repeat
  // a few bytes up to 65535^4 times, which as bytes would wrap 64 bits and make its time silently wrong.
  if (c.elements() > kMaxCopyBytes / std::max(sbytes, dbytes)) {
    return Fault{regs::ERR_BAD_FIELD, uint32_t(isa::field_id("count")),
                 fmt::format("count [{}, {}, {}, {}] of {}-byte elements is {} elements, more than one copy may move "
                             "(2^50 bytes, over 13 hours of one DMA engine at 23 B/ns)", c.count[0], c.count[1],
                             c.count[2], c.count[3], std::max(sbytes, dbytes), c.elements())};
  }
  if (auto f = check_side(c.src_space, c.src_addr, c.src_stride, c, sbytes, true)) return f;
  if (auto f = check_side(c.dst_space, c.dst_addr, c.dst_stride, c, dbytes, false)) return f;

  // The earliest free engine takes the copy; the queue waits only if all are busy: until the first known end, or
  // until a copy whose end the HBM decides (free at sc_max_time until then) ends.
  auto it = std::min_element(engine_free_at_.begin(), engine_free_at_.end());
  if (*it > sc_time_stamp()) {
    const sc_time from = sc_time_stamp();
    while (*it > sc_time_stamp()) {
      if (*it == sc_max_time()) {
        wait(engine_freed_ | control_.stop_event());
      } else {
        wait(*it - sc_time_stamp(), engine_freed_ | control_.stop_event());
      }
      if (control_.epoch() != run_epoch()) return std::nullopt;  // abandoned while waiting: not this program's time
      it = std::min_element(engine_free_at_.begin(), engine_free_at_.end());
    }
    note_dma_wait(sc_time_stamp() - from);
  }
  const int engine = int(it - engine_free_at_.begin());
  const ChipConfig& cfg = control_.config();
  const uint64_t bytes = c.elements() * std::max(sbytes, dbytes);
  const sc_time duration = sc_time(cfg.dma_latency_ns + double(bytes) / cfg.dma_bytes_per_ns, SC_NS);
  // The HBM side: what the copy reads from and writes to HBM streams through the chip's HBM after the start
  // latency, at the engine's pace scaled to those bytes (an HBM-to-HBM copy carries each byte twice), and may take
  // longer when the HBM is shared: the engine is then busy until the copy ends.
  const uint64_t hbm_bytes = (c.src_space == isa::MemSpace::kHbm ? c.elements() * sbytes : 0) +
                             (c.dst_space == isa::MemSpace::kHbm ? c.elements() * dbytes : 0);
  const bool shared_hbm = hbm_ != nullptr && hbm_bytes > 0;
  const double hbm_rate = cfg.dma_bytes_per_ns * double(hbm_bytes) / double(std::max<uint64_t>(bytes, 1));
  const sc_time latency(cfg.dma_latency_ns, SC_NS);
  *it = shared_hbm ? sc_max_time() : sc_time_stamp() + duration;
  ++outstanding_;
  const uint64_t epoch = run_epoch();  // the program's, never a later one's
  // The checker's view of this copy: its own agent (the DMA engine) with the clock it starts from.
  std::shared_ptr<AccessChecker::Actor> who;
  std::shared_ptr<AccessChecker::Clock> clock;
  if (AccessChecker* checker = control_.checker()) {
    clock = std::make_shared<AccessChecker::Clock>(checker->dma_issue(engine));
    who = std::make_shared<AccessChecker::Actor>(actor());
    who->agent = AccessChecker::dma_agent(engine);
    who->dma_engine = engine;
    who->clock = clock.get();
  }
  const std::shared_ptr<const isa::Instruction> copy =
      control_.observer() ? std::make_shared<const isa::Instruction>(instr) : nullptr;
  ++live_copies_;
  if (c.done_sem >= 0) control_.signal_in_flight_started();
  sc_spawn([this, c, duration, latency, shared_hbm, hbm_bytes, hbm_rate, bytes, epoch, engine, index, who, clock,
            copy]() {
    struct Live {
      int& n;
      CoreControl* signalling;  // ends the copy's pending completion signal (after its sem_add, if any)
      ~Live() {
        --n;
        if (signalling) signalling->signal_in_flight_ended();
      }
    } live{live_copies_, c.done_sem >= 0 ? &control_ : nullptr};
    const sc_time start = sc_time_stamp();
    sc_time end = start + duration;
    // Until its end time, or until a soft reset or a doorbell abandons it: then it ends at once, so that its
    // process and stack do not outlive the program (found by the mmio fuzz target: after some 900,000 inputs, the
    // abandoned copies of huge durations held so many stacks that the process ran out of memory mappings).
    // Another stop (an error) does not abandon it.
    auto abandoned = [this, epoch] { return control_.epoch() != epoch; };  // on_start() of the next program
    auto wait_until = [&](const sc_time& t) {
      while (sc_time_stamp() < t) {
        wait(t - sc_time_stamp(), control_.stop_event());
        if (abandoned()) return false;
      }
      return true;
    };
    if (shared_hbm) {  // the start latency, then the HBM bytes as the HBM carries them
      if (!wait_until(start + latency)) return;
      const HbmModel::Carried how = hbm_->carry(hbm_bytes, hbm_rate, control_.stop_event(), abandoned);
      if (how == HbmModel::Carried::kWithdrawn) return;
      if (how == HbmModel::Carried::kThrottled) end = std::max(end, sc_time_stamp());
    }
    if (!wait_until(end)) return;
    if (shared_hbm) {
      engine_free_at_[size_t(engine)] = end;
      engine_freed_.notify(SC_ZERO_TIME);
    }
    if (auto fault = perform(c, who.get())) {
      control_.raise_error(static_cast<int>(isa::Engine::kDma), index, *fault);
      --outstanding_;
      copy_done_.notify(SC_ZERO_TIME);
      return;
    }
    bytes_moved_ += bytes;
    engine_busy_[size_t(engine)] += end - start;
    ++engine_copies_[size_t(engine)];
    // The descriptor's completion signal (done_sem): the copy's bytes are all written. The checker sees the copy's
    // own clock released into the semaphore, not the queue's.
    if (c.done_sem >= 0) {
      if (AccessChecker* checker = control_.checker(); checker && clock) checker->on_copy_signal(*clock, c.done_sem);
      control_.sem_add(c.done_sem, 1);
    }
    if (EngineObserver* obs = control_.observer(); obs && copy) {
      obs->on_dma_copy({engine, index, copy.get(), bytes, start, sc_time_stamp()});
    }
    --outstanding_;
    copy_done_.notify(SC_ZERO_TIME);
  });
  return std::nullopt;
}

void DmaEngine::drain() {
  const uint64_t epoch = run_epoch();
  while (outstanding_ > 0 && control_.epoch() == epoch && !control_.stopped()) {
    wait(copy_done_ | control_.stop_event());
  }
  if (AccessChecker* checker = control_.checker(); checker && outstanding_ == 0) checker->on_dma_drain();
}

std::optional<Fault> DmaEngine::perform(const isa::CopyFields& c, const AccessChecker::Actor* who) {
  const CheckScope scope(*this, who != nullptr, who);  // the bus accesses below are the copy's exact bytes
  const unsigned sbytes = isa::data_type_bytes(c.src_type), dbytes = isa::data_type_bytes(c.dst_type);
  const bool same = c.src_type == c.dst_type;  // a plain copy keeps the bits (no NaN canonicalisation)
  const uint64_t sbase = space_base(c.src_space) + c.src_addr, dbase = space_base(c.dst_space) + c.dst_addr;
  const int n0 = c.count[0];
  const bool src_run = c.src_stride[0] == int32_t(sbytes), dst_run = c.dst_stride[0] == int32_t(dbytes);
  std::vector<uint8_t> in(size_t(n0) * sbytes), out(size_t(n0) * dbytes);
  for (int i3 = 0; i3 < c.count[3]; ++i3) {
    for (int i2 = 0; i2 < c.count[2]; ++i2) {
      for (int i1 = 0; i1 < c.count[1]; ++i1) {
        const int64_t so = int64_t(i3) * c.src_stride[3] + int64_t(i2) * c.src_stride[2] +
                           int64_t(i1) * c.src_stride[1];
        const int64_t dof = int64_t(i3) * c.dst_stride[3] + int64_t(i2) * c.dst_stride[2] +
                            int64_t(i1) * c.dst_stride[1];
        // Gather the innermost run (one transaction when contiguous).
        bool ok = true;
        if (src_run) {
          ok = bus_read(sbase + so, in.data(), in.size());
        } else {
          for (int i0 = 0; i0 < n0 && ok; ++i0) {
            ok = bus_read(sbase + so + int64_t(i0) * c.src_stride[0], &in[size_t(i0) * sbytes], sbytes);
          }
        }
        if (!ok) return bus_fault(c, true, sbase + so);
        if (same) {
          out = in;
        } else {
          for (int i0 = 0; i0 < n0; ++i0) {
            uint32_t f32 = 0;
            const uint8_t* s = &in[size_t(i0) * sbytes];
            if (c.src_type == isa::DataType::kFp32) {
              std::memcpy(&f32, s, 4);
            } else {
              const uint16_t bits = sbytes == 2 ? uint16_t(s[0] | (s[1] << 8)) : s[0];
              f32 = fp::widen(static_cast<isa::Dtype>(c.src_type), bits);
            }
            uint8_t* d = &out[size_t(i0) * dbytes];
            if (c.dst_type == isa::DataType::kFp32) {
              std::memcpy(d, &f32, 4);
            } else {
              const auto dt = static_cast<isa::Dtype>(c.dst_type);
              uint16_t bits;
              if (c.sr) {
                const uint64_t at = uint64_t(int64_t(c.dst_addr) + dof + int64_t(i0) * c.dst_stride[0]);
                bits = fp::narrow_stochastic(dt, f32, !c.no_sat,
                                             fp::sr_bits(control_.sr_seed(), isa::sr_element_key(c.dst_space, at)));
              } else {
                bits = fp::narrow(dt, f32, !c.no_sat);
              }
              d[0] = uint8_t(bits);
              if (dbytes == 2) d[1] = uint8_t(bits >> 8);
            }
          }
        }
        if (dst_run) {
          ok = bus_write(dbase + dof, out.data(), out.size());
        } else {
          for (int i0 = 0; i0 < n0 && ok; ++i0) {
            ok = bus_write(dbase + dof + int64_t(i0) * c.dst_stride[0], &out[size_t(i0) * dbytes], dbytes);
          }
        }
        if (!ok) return bus_fault(c, false, dbase + dof);
      }
    }
  }
  return std::nullopt;
}

Fault DmaEngine::bus_fault(const isa::CopyFields& c, bool is_src, uint64_t device_addr) const {
  const isa::MemSpace space = is_src ? c.src_space : c.dst_space;
  const char* field = is_src ? "src_addr" : "dst_addr";
  const uint64_t at = device_addr - space_base(space);
  const std::string why = space == isa::MemSpace::kHost && host_port_ != nullptr ? host_port_->last_error()
                                                                                 : "the bus answered an error";
  const uint32_t code = space == isa::MemSpace::kHost ? regs::ERR_HOST_ACCESS : regs::ERR_HBM_RANGE;
  return Fault{code, uint32_t(isa::field_id(field)),
               fmt::format("{} {}:0x{:x}: {}", field, isa::mem_space_name(space), at, why)};
}

}  // namespace trnsim::model
