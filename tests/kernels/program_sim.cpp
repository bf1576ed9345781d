// Test-side program analysis (program_sim.h).
#include "tests/kernels/program_sim.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>

#include "firmware/golden/engine_golden.h"
#include "firmware/golden/float_bits.h"
#include "firmware/golden/fp_golden.h"
#include "firmware/golden/nn_golden.h"
#include "firmware/isa/te_stream.h"
#include "firmware/kernels/dma_copies.h"

namespace trnsim::test {
namespace {

using isa::Engine;
using isa::Instruction;
using isa::MemSpace;
using isa::Opcode;

constexpr int kQueues = isa::kNumQueues;
constexpr int kTe = static_cast<int>(Engine::kTe);
constexpr int kDma = static_cast<int>(Engine::kDma);

/// What a queue knows to be complete: per queue the index of the last instruction known complete with all before
/// it (-1: none), and dma copies known landed one by one past that prefix (by their completion semaphore, done_sem).
struct Known {
  std::array<int64_t, kQueues> upto;
  std::vector<int64_t> copies;  ///< sorted dma indices above upto[kDma]

  Known() { upto.fill(-1); }
  bool has(int q, int64_t index) const {
    return upto[std::size_t(q)] >= index ||
           (q == kDma && std::binary_search(copies.begin(), copies.end(), index));
  }
  void join(const Known& o) {
    for (int q = 0; q < kQueues; ++q) upto[std::size_t(q)] = std::max(upto[std::size_t(q)], o.upto[std::size_t(q)]);
    std::vector<int64_t> merged;
    std::set_union(copies.begin(), copies.end(), o.copies.begin(), o.copies.end(), std::back_inserter(merged));
    copies = std::move(merged);
    prune();
  }
  /// Drops the copies the dma prefix covers.
  void prune() {
    copies.erase(std::remove_if(copies.begin(), copies.end(), [&](int64_t c) { return c <= upto[kDma]; }),
                 copies.end());
  }
};

std::string where(int q, std::size_t i, const Instruction& in) {
  return fmt::format("{}[{}] {}", isa::engine_name(static_cast<Engine>(q)), i,
                     isa::opcode_name(in.op).value_or("?"));
}

const char* space_name(MemSpace s) {
  switch (s) {
    case MemSpace::kHbm: return "HBM";
    case MemSpace::kSbuf: return "SBUF";
    case MemSpace::kPsum: return "PSUM";
    case MemSpace::kHost: return "host memory";
  }
  return "?";
}

/// One contiguous byte run of an access inside one partition.
struct Run {
  MemSpace space;
  uint32_t partition;
  uint64_t lo, hi;
  bool write;
};

struct Geometry {
  uint64_t partition_bytes[3];
  uint32_t partitions[3];
  explicit Geometry(const driver::DeviceInfo& info) {
    partition_bytes[0] = info.hbm_bytes;
    partitions[0] = 1;
    partition_bytes[1] = info.sbuf_partition_bytes;
    partitions[1] = info.sbuf_partitions;
    partition_bytes[2] = info.psum_partition_bytes;
    partitions[2] = info.psum_partitions;
  }
  uint64_t pb(MemSpace s) const { return partition_bytes[static_cast<int>(s)]; }
  uint32_t np(MemSpace s) const { return partitions[static_cast<int>(s)]; }
};

/// The runs of one Vector/Scalar operand: `partitions` partitions from its start, free counts [n0, n1] walked with
/// its strides (elements). Runs are not cut at partition ends, so a stray offset shows up as out of range.
void operand_runs(const isa::Operand& o, int partitions, int n0, int n1, bool write,
                  const std::function<void(const Run&)>& f) {
  const int64_t es = isa::data_type_bytes(o.type);
  for (int p = 0; p < partitions; ++p) {
    const uint32_t part = uint32_t(o.partition) + uint32_t(p);
    for (int64_t i1 = 0; i1 < n1; ++i1) {
      const int64_t row = int64_t(o.offset) + i1 * o.stride[1] * es;
      if (n0 == 1 || o.stride[0] == 1 || o.stride[0] == 0) {
        const int64_t len = (o.stride[0] == 1 ? n0 : 1) * es;
        if (row < 0) throw std::out_of_range("negative address");
        f(Run{o.space, part, uint64_t(row), uint64_t(row + len), write});
      } else {
        for (int64_t i0 = 0; i0 < n0; ++i0) {
          const int64_t a = row + i0 * o.stride[0] * es;
          if (a < 0) throw std::out_of_range("negative address");
          f(Run{o.space, part, uint64_t(a), uint64_t(a + es), write});
        }
      }
    }
  }
}

/// Reads, then writes, of a Vector (tensor_tensor .. transpose) or Scalar (activation) instruction.
void for_each_tensor_op_run(const Geometry&, const Instruction& in, const std::function<void(const Run&)>& f) {
  if (in.op == Opcode::kActivation) {
    const auto& a = in.act;
    operand_runs(a.in0, a.partitions, a.free[0], a.free[1], false, f);
    if (a.scale_tensor) operand_runs(a.scale_ap, a.partitions, 1, 1, false, f);
    if (a.bias_tensor) operand_runs(a.bias_ap, a.partitions, 1, 1, false, f);
    if (a.reduce && a.sum_acc) operand_runs(a.sum, a.partitions, 1, 1, false, f);
    operand_runs(a.out, a.partitions, a.free[0], a.free[1], true, f);
    if (a.reduce) operand_runs(a.sum, a.partitions, 1, 1, true, f);
    return;
  }
  const auto& v = in.vec;
  const int P = v.partitions, n0 = v.free[0], n1 = v.free[1];
  const bool has_in0 = in.op != Opcode::kMemset && in.op != Opcode::kIota;
  if (has_in0) operand_runs(v.in0, P, n0, n1, false, f);
  if (in.op == Opcode::kTensorTensor || in.op == Opcode::kSelect) operand_runs(v.in1, P, n0, n1, false, f);
  if (in.op == Opcode::kSelect) operand_runs(v.in2, P, n0, n1, false, f);
  if (in.op == Opcode::kTensorReduce) {
    operand_runs(v.out, P, 1, v.axis == isa::ReduceAxis::kInner ? n1 : 1, true, f);
  } else if (in.op == Opcode::kTranspose) {
    operand_runs(v.out, n0, P, 1, true, f);
  } else {
    operand_runs(v.out, P, n0, n1, true, f);
  }
}

/// Calls f(Run) for every byte run `in` touches; `stationary_m` is the M of the last load_stationary (0: none).
/// Runs are cut at partition boundaries; the partition may be out of range (the caller checks).
void for_each_run(const Geometry& g, const Instruction& in, uint32_t stationary_m,
                  const std::function<void(const Run&)>& f) {
  auto emit = [&](MemSpace s, uint64_t addr, uint64_t len, bool write) {
    const uint64_t pb = g.pb(s);
    while (len > 0) {
      const uint64_t p = addr / pb, off = addr % pb;
      const uint64_t chunk = std::min(len, pb - off);
      f(Run{s, static_cast<uint32_t>(std::min<uint64_t>(p, 0xFFFFFFFFu)), off, off + chunk, write});
      addr += chunk;
      len -= chunk;
    }
  };
  switch (in.op) {
    case Opcode::kDmaCopy:
    case Opcode::kPsumCopy: {
      const auto& c = in.copy;
      const int64_t se = isa::data_type_bytes(c.src_type), de = isa::data_type_bytes(c.dst_type);
      for (int64_t i3 = 0; i3 < c.count[3]; ++i3) {
        for (int64_t i2 = 0; i2 < c.count[2]; ++i2) {
          for (int64_t i1 = 0; i1 < c.count[1]; ++i1) {
            const int64_t s0 = int64_t(c.src_addr) + i1 * c.src_stride[1] + i2 * c.src_stride[2] + i3 * c.src_stride[3];
            const int64_t d0 = int64_t(c.dst_addr) + i1 * c.dst_stride[1] + i2 * c.dst_stride[2] + i3 * c.dst_stride[3];
            for (auto [base, stride, es, space, write] :
                 {std::tuple{s0, int64_t(c.src_stride[0]), se, c.src_space, false},
                  std::tuple{d0, int64_t(c.dst_stride[0]), de, c.dst_space, true}}) {
              if (c.count[0] == 1 || stride == es) {
                if (base < 0) throw std::out_of_range("negative address");
                emit(space, uint64_t(base), uint64_t(c.count[0]) * es, write);
              } else {
                for (int64_t i0 = 0; i0 < c.count[0]; ++i0) {
                  const int64_t a = base + i0 * stride;
                  if (a < 0) throw std::out_of_range("negative address");
                  emit(space, uint64_t(a), uint64_t(es), write);
                }
              }
            }
          }
        }
      }
      break;
    }
    case Opcode::kLoadStationary:
    case Opcode::kMultiplyMoving: {
      const auto& t = in.te;
      // SBUF layout of a TE operand (firmware/isa/dtype.h): FP8 holds two operand partitions per SBUF partition.
      const uint64_t sp = t.sbuf_addr / g.pb(MemSpace::kSbuf), so = t.sbuf_addr % g.pb(MemSpace::kSbuf);
      for (uint64_t k = 0; k < isa::te_sbuf_partitions(t.dtype, t.k); ++k) {
        f(Run{MemSpace::kSbuf, static_cast<uint32_t>(sp + k), so, so + isa::te_sbuf_row_bytes(t.dtype, t.free_size),
              false});
      }
      if (in.op == Opcode::kMultiplyMoving) {
        const uint64_t pp = t.psum_addr / g.pb(MemSpace::kPsum), po = t.psum_addr % g.pb(MemSpace::kPsum);
        for (uint64_t m = 0; m < stationary_m; ++m) {
          const Run r{MemSpace::kPsum, static_cast<uint32_t>(pp + m), po, po + uint64_t(t.free_size) * 4, true};
          if (t.accumulate) f(Run{r.space, r.partition, r.lo, r.hi, false});
          f(r);
        }
      }
      break;
    }
    default:
      if (isa::is_tensor_op(in.op)) for_each_tensor_op_run(g, in, f);
      break;
  }
}

/// Untimed execution of both queues: runs each as far as the semaphores allow, tracking what each queue knows to
/// be complete. exec(q, index, instr, known) is called for every instruction but sem_wait, in a valid order.
///
/// A copy with a completion semaphore (done_sem) counts at once (counters only grow, so this decides no deadlock
/// wrongly) and lands at an unknown later time, in any order with the other copies of its semaphore. So that a wait
/// knows which copies landed, the copies of one semaphore must come in *batches*: a batch is a run of such copies
/// with nothing else between them on the dma queue, and a new batch may start only once the dma queue knows the
/// previous one landed (it waited for the semaphore's count at that batch's end). Then a wait for count >= V knows
/// every batch that ends at or below V landed (violations: violations()).
class Untimed {
 public:
  explicit Untimed(const isa::Program& p) : p_(p) {
    for (int q = 0; q < kQueues; ++q) halted_[q] = p.queues[q].empty();
  }

  /// Copies that started a batch on a completion semaphore while the previous batch may still be in flight.
  const std::vector<std::string>& violations() const { return violations_; }

  /// Returns an empty string on success, else why the run stopped ("deadlock: ...").
  template <class F>
  std::string run(F&& exec) {
    for (;;) {
      bool progress = false, all_halted = true;
      for (int q = 0; q < kQueues; ++q) {
        while (!halted_[q]) {
          const auto& instrs = p_.queues[q];
          if (pc_[q] >= instrs.size()) {
            return fmt::format("{} ran past its last instruction without halt", isa::engine_name(Engine(q)));
          }
          const Instruction& in = instrs[pc_[q]];
          const int64_t i = static_cast<int64_t>(pc_[q]);
          if (in.op == Opcode::kSemWait) {
            const auto s = in.sem.sem;
            if (s >= isa::kNumSemaphores) return "bad semaphore";
            if (counter_[s] < in.sem.value) break;  // blocked
            for (const auto& [cum, k] : signals_[s]) {
              if (cum >= in.sem.value) {
                known_[q].join(k);
                break;
              }
            }
            for (const Batch& b : batches_[s]) {
              if (b.end <= in.sem.value) known_[q].join(b.known);
            }
          } else {
            exec(q, pc_[q], in, known_[q]);
          }
          if ((in.op == Opcode::kDmaCopy || in.op == Opcode::kPsumCopy) && in.copy.done_sem >= 0 &&
              in.copy.done_sem < isa::kNumSemaphores) {
            land_later(in.copy.done_sem, i);
          }
          // After the instruction: the te, act and vec engines finished it (they complete in order); the DMA
          // queue's signal/halt completed all earlier copies.
          if (q != kDma || in.op == Opcode::kSemSignal || in.op == Opcode::kHalt) {
            known_[q].upto[std::size_t(q)] = i;
            if (q == kDma) known_[q].prune();
          }
          if (in.op == Opcode::kSemSignal && in.sem.sem < isa::kNumSemaphores) {
            counter_[in.sem.sem] += in.sem.value;
            signals_[in.sem.sem].emplace_back(counter_[in.sem.sem], known_[q]);
          }
          if (in.op == Opcode::kHalt) halted_[q] = true;
          ++pc_[q];
          progress = true;
        }
        all_halted = all_halted && halted_[q];
      }
      if (all_halted) return {};
      if (!progress) {
        std::string text = "deadlock:";
        for (int q = 0; q < kQueues; ++q) {
          if (halted_[q]) continue;
          const auto& in = p_.queues[q][pc_[q]];
          text += fmt::format(" {} waits for semaphore {} >= {} (it is {});", where(q, pc_[q], in), in.sem.sem,
                              in.sem.value, counter_[in.sem.sem]);
        }
        return text;
      }
    }
  }

  uint64_t counter(int s) const { return counter_[s]; }

 private:
  /// The copies of one batch on a completion semaphore: the count when all have landed, and what that tells.
  struct Batch {
    uint64_t end = 0;
    int64_t last = -1;  ///< dma index of its newest copy
    Known known;
  };

  /// Dma copy `i` will add 1 to semaphore `s` when it lands.
  void land_later(int s, int64_t i) {
    std::vector<Batch>& bs = batches_[std::size_t(s)];
    if (bs.empty() || bs.back().last != i - 1) {  // a new batch: the previous one must be known landed
      if (!bs.empty()) {
        const Batch& prev = bs.back();
        for (const int64_t c : prev.known.copies) {
          if (!known_[kDma].has(kDma, c)) {
            violations_.push_back(fmt::format(
                "{}: a new batch of copies signalling semaphore {} while dma[{}] of the previous batch may still be "
                "in flight (the dma queue must first sem_wait sem={} value={}): waits could not tell them apart",
                where(kDma, std::size_t(i), p_.queues[kDma][std::size_t(i)]), s, c, s, prev.end));
            break;
          }
        }
      }
      bs.push_back(Batch{counter_[std::size_t(s)], i, known_[kDma]});
    }
    Batch& b = bs.back();
    b.last = i;
    ++b.end;
    counter_[std::size_t(s)] = b.end;
    Known self;
    self.copies.push_back(i);
    b.known.join(known_[kDma]);
    b.known.join(self);
  }

  const isa::Program& p_;
  std::array<std::size_t, kQueues> pc_{};
  std::array<bool, kQueues> halted_{};
  std::array<Known, kQueues> known_;
  std::array<uint64_t, isa::kNumSemaphores> counter_{};
  std::array<std::vector<std::pair<uint64_t, Known>>, isa::kNumSemaphores> signals_;
  std::array<std::vector<Batch>, isa::kNumSemaphores> batches_;
  std::vector<std::string> violations_;
};

/// Shadow memory of one partition: disjoint segments with their last writer and the readers since.
class Shadow {
 public:
  struct Seg {
    uint64_t hi;
    int64_t writer = -1;
    std::vector<int64_t> readers;
  };
  /// Calls conflict(other_id, other_was_write) for every earlier access of [lo, hi) this one must be ordered after.
  template <class F>
  void access(uint64_t lo, uint64_t hi, int64_t id, bool write, F&& conflict) {
    split(lo);
    split(hi);
    uint64_t pos = lo;
    auto it = segs_.lower_bound(lo);
    while (pos < hi) {
      if (it == segs_.end() || it->first > pos) {  // a gap: fresh segment
        const uint64_t end = (it == segs_.end()) ? hi : std::min(hi, it->first);
        it = segs_.emplace_hint(it, pos, Seg{end, -1, {}});
      }
      Seg& s = it->second;
      if (s.writer >= 0 && s.writer != id) conflict(s.writer, true);
      if (write) {
        for (int64_t r : s.readers) {
          if (r != id) conflict(r, false);
        }
        s.writer = id;
        s.readers.clear();
      } else if (s.readers.empty() || s.readers.back() != id) {
        s.readers.push_back(id);
      }
      pos = s.hi;
      ++it;
    }
  }

 private:
  void split(uint64_t at) {
    auto it = segs_.upper_bound(at);
    if (it == segs_.begin()) return;
    --it;
    if (it->first < at && at < it->second.hi) {
      Seg tail = it->second;
      it->second.hi = at;
      segs_.emplace(at, std::move(tail));
    }
  }
  std::map<uint64_t, Seg> segs_;
};

}  // namespace

std::string ProgramCheck::summary() const {
  std::string s;
  for (const auto& e : errors) s += e + "\n";
  if (error_count > errors.size()) s += fmt::format("... {} errors in all\n", error_count);
  return s;
}

ProgramCheck check_program(const driver::DeviceInfo& info, const isa::Program& program,
                           const ProgramCheckOptions& options) {
  ProgramCheck out;
  auto error = [&](std::string text) {
    if (out.errors.size() < static_cast<std::size_t>(options.max_errors)) out.errors.push_back(std::move(text));
    ++out.error_count;
  };
  const Geometry geo(info);

  // Static checks.
  std::array<int, isa::kNumSemaphores> signaller;
  signaller.fill(-1);
  for (int q = 0; q < kQueues; ++q) {
    const auto& instrs = program.queues[q];
    for (std::size_t i = 0; i < instrs.size(); ++i) {
      const Instruction& in = instrs[i];
      ++out.instructions;
      if (auto e = isa::validate(in)) error(fmt::format("{}: invalid: {}", where(q, i, in), isa::describe(*e)));
      if (!isa::engine_accepts(Engine(q), in.op)) error(fmt::format("{}: wrong engine", where(q, i, in)));
      if (in.op == Opcode::kSemSignal && in.sem.sem < isa::kNumSemaphores) {
        if (signaller[in.sem.sem] >= 0 && signaller[in.sem.sem] != q) {
          error(fmt::format("{}: semaphore {} is signalled by two queues{}", where(q, i, in), in.sem.sem,
                            signaller[in.sem.sem] == kQueues ? " (one of them the copies that name it done_sem)" : ""));
        }
        signaller[in.sem.sem] = q;
      }
      // A completion semaphore is the copies' own: no queue's sem_signal may add to it (its batches would be off).
      if ((in.op == Opcode::kDmaCopy || in.op == Opcode::kPsumCopy) && in.copy.done_sem >= 0 &&
          in.copy.done_sem < isa::kNumSemaphores) {
        const int s = in.copy.done_sem;
        if (signaller[s] >= 0 && signaller[s] != kQueues) {
          error(fmt::format("{}: semaphore {} is a completion semaphore and signalled by {}", where(q, i, in), s,
                            isa::engine_name(Engine(signaller[s]))));
        }
        signaller[s] = kQueues;
      }
      if (isa::is_tensor_op(in.op)) {
        // The quadrant rule (docs/isa.md): P <= 32 starts at a multiple of 32, P <= 64 of 64, else at 0.
        const int P = in.op == Opcode::kActivation ? in.act.partitions : in.vec.partitions;
        const int out_p = in.op == Opcode::kTranspose ? in.vec.free[0] : P;
        const auto check_start = [&](const isa::Operand& o, int parts, const char* name) {
          const int align = parts <= 32 ? 32 : parts <= 64 ? 64 : 128;
          if (o.partition % align != 0) {
            error(fmt::format("{}: {} starts at partition {} (an access of {} partitions must start at a multiple "
                              "of {})", where(q, i, in), name, o.partition, parts, align));
          }
        };
        if (in.op == Opcode::kActivation) {
          check_start(in.act.out, P, "out");
          check_start(in.act.in0, P, "in0");
          if (in.act.scale_tensor) check_start(in.act.scale_ap, P, "scale");
          if (in.act.bias_tensor) check_start(in.act.bias_ap, P, "bias");
          if (in.act.reduce) check_start(in.act.sum, P, "sum");
        } else {
          check_start(in.vec.out, out_p, "out");
          if (in.op != Opcode::kMemset && in.op != Opcode::kIota) check_start(in.vec.in0, P, "in0");
          if (in.op == Opcode::kTensorTensor || in.op == Opcode::kSelect) check_start(in.vec.in1, P, "in1");
          if (in.op == Opcode::kSelect) check_start(in.vec.in2, P, "in2");
        }
      }
      if (in.op == Opcode::kLoadStationary || in.op == Opcode::kMultiplyMoving) {
        const unsigned max_k = isa::te_max_k(in.te.dtype, info.te_rows);
        if (in.te.k > max_k) {
          error(fmt::format("{}: k {} > {} partitions per pass ({} TE rows)", where(q, i, in), in.te.k, max_k,
                            info.te_rows));
        }
        if (in.op == Opcode::kLoadStationary && in.te.free_size > info.te_cols) {
          error(fmt::format("{}: M {} > {} TE columns", where(q, i, in), in.te.free_size, info.te_cols));
        }
        if (in.op == Opcode::kMultiplyMoving) {
          const uint64_t bank = info.psum_bank_bytes();
          const uint64_t off = (in.te.psum_addr % info.psum_partition_bytes) % bank;
          if (off + uint64_t(in.te.free_size) * 4 > bank) {
            error(fmt::format("{}: PSUM write [{}, {}) of a bank crosses its end ({} bytes)", where(q, i, in), off,
                              off + in.te.free_size * 4, bank));
          }
        }
      }
    }
    if (!instrs.empty() && instrs.back().op != Opcode::kHalt) {
      error(fmt::format("{} does not end with halt", isa::engine_name(Engine(q))));
    }
  }

  // Execution: bounds, areas and races.
  struct AccessInfo {
    int q;
    int64_t index;
    Known known;
    std::string text;
  };
  std::vector<AccessInfo> accesses;
  std::map<std::pair<int, uint32_t>, Shadow> shadow;
  uint32_t stationary_m = 0;
  Untimed sim(program);
  const std::string stop = sim.run([&](int q, std::size_t i, const Instruction& in, const Known& known) {
    if (in.op == Opcode::kMultiplyMoving && stationary_m == 0) {
      error(fmt::format("{}: multiply_moving before any load_stationary", where(q, i, in)));
    }
    const int64_t id = static_cast<int64_t>(accesses.size());
    accesses.push_back({q, static_cast<int64_t>(i), known, where(q, i, in)});
    try {
      for_each_run(geo, in, stationary_m, [&](const Run& r) {
        ++out.access_runs;
        const char* kind = r.write ? "writes" : "reads";
        if (r.partition >= geo.np(r.space) || r.hi > geo.pb(r.space)) {
          error(fmt::format("{} {} {} partition {} bytes [{:#x}, {:#x}): outside the device", where(q, i, in), kind,
                            space_name(r.space), r.partition, r.lo, r.hi));
          return;
        }
        if (!options.areas.empty()) {
          bool inside = false;
          for (const Area& a : options.areas) {
            if (a.space == r.space && r.partition >= a.p0 && r.partition < a.p1 && r.lo >= a.lo && r.hi <= a.hi &&
                (r.write ? a.writable : a.readable)) {
              inside = true;
              break;
            }
          }
          if (!inside) {
            error(fmt::format("{} {} {} partition {} bytes [{:#x}, {:#x}): outside every area it may {}",
                              where(q, i, in), kind, space_name(r.space), r.partition, r.lo, r.hi,
                              r.write ? "write" : "read"));
          }
        }
        shadow[{static_cast<int>(r.space), r.partition}].access(
            r.lo, r.hi, id, r.write, [&](int64_t other, bool other_wrote) {
              const AccessInfo& x = accesses[static_cast<std::size_t>(other)];
              const AccessInfo& y = accesses[static_cast<std::size_t>(id)];
              if (y.known.has(x.q, x.index)) return;  // x complete before y started
              error(fmt::format("race: {} {} {} partition {} [{:#x}, {:#x}) while {} may still {} it", y.text, kind,
                                space_name(r.space), r.partition, r.lo, r.hi, x.text,
                                other_wrote ? "write" : "read"));
            });
      });
    } catch (const std::out_of_range&) {
      error(fmt::format("{}: negative address", where(q, i, in)));
    }
    if (in.op == Opcode::kLoadStationary) stationary_m = in.te.free_size;
  });
  for (const std::string& v : sim.violations()) error(v);
  if (!stop.empty()) error(stop);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Functional reference

namespace {

uint64_t load_le(const uint8_t* p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned b = 0; b < bytes; ++b) v |= uint64_t(p[b]) << (8 * b);
  return v;
}
void store_le(uint8_t* p, uint64_t v, unsigned bytes) {
  for (unsigned b = 0; b < bytes; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

/// Widening tables per narrow dtype (built on first use).
const std::vector<float>& widen_table(isa::Dtype dt) {
  static std::array<std::vector<float>, 4> tables;
  auto& t = tables[static_cast<int>(dt)];
  if (t.empty()) {
    const unsigned n = isa::dtype_bits(dt) == 16 ? 65536 : 256;
    t.resize(n);
    for (unsigned b = 0; b < n; ++b) t[b] = golden::float_from_bits(golden::widen_to_f32(dt, uint16_t(b)));
  }
  return t;
}

/// Element access of the reference machine's SBUF / PSUM for one Vector/Scalar operand.
struct OperandIo {
  RefMemory& mem;
  const driver::DeviceInfo& info;
  uint8_t* byte(const isa::Operand& o, int p, int64_t elem) const {
    auto& v = o.space == MemSpace::kPsum ? mem.psum : mem.sbuf;
    const uint64_t pb = o.space == MemSpace::kPsum ? info.psum_partition_bytes : info.sbuf_partition_bytes;
    const int64_t off = int64_t(o.offset) + elem * int64_t(isa::data_type_bytes(o.type));
    const uint64_t es = isa::data_type_bytes(o.type);
    if (o.space == MemSpace::kHbm || off < 0 || uint64_t(off) + es > pb) {
      throw std::runtime_error(fmt::format("reference: operand offset {} outside the partition", off));
    }
    const uint64_t addr = (uint64_t(o.partition) + uint64_t(p)) * pb + uint64_t(off);
    if (addr + es > v.size()) throw std::runtime_error("reference: operand partition outside the memory");
    return v.data() + addr;
  }
  /// Element (p, i1, i0) widened to FP32 bits.
  uint32_t get(const isa::Operand& o, int p, int i1, int i0) const {
    const int64_t e = int64_t(i0) * o.stride[0] + int64_t(i1) * o.stride[1];
    return golden::element_to_f32(o.type, uint32_t(load_le(byte(o, p, e), isa::data_type_bytes(o.type))));
  }
  void put(const isa::Operand& o, int p, int i1, int i0, uint32_t f32, bool no_sat) const {
    const int64_t e = int64_t(i0) * o.stride[0] + int64_t(i1) * o.stride[1];
    store_le(byte(o, p, e), golden::element_from_f32(o.type, f32, !no_sat), isa::data_type_bytes(o.type));
  }
};

/// One Vector or Scalar instruction on the reference machine, in the golden functions' numerics: every input read
/// before any output is written (the engines read when an instruction starts and write when it ends).
void execute_tensor_op(const driver::DeviceInfo& info, const Instruction& in, RefMemory& mem) {
  const OperandIo io{mem, info};
  if (in.op == Opcode::kActivation) {
    const auto& a = in.act;
    const int P = a.partitions, n0 = a.free[0], n1 = a.free[1];
    std::vector<uint32_t> r(std::size_t(P) * n0 * n1);
    std::vector<uint32_t> sums(static_cast<std::size_t>(P));
    for (int p = 0; p < P; ++p) {
      const uint32_t bias = a.bias_tensor ? io.get(a.bias_ap, p, 0, 0) : a.bias;
      const uint32_t scale = a.scale_tensor ? io.get(a.scale_ap, p, 0, 0) : a.scale;
      uint32_t sum = a.reduce && a.sum_acc ? io.get(a.sum, p, 0, 0) : 0;
      for (int i1 = 0; i1 < n1; ++i1) {
        for (int i0 = 0; i0 < n0; ++i0) {
          const uint32_t z = golden::activation_input(io.get(a.in0, p, i1, i0), scale, bias);
          const uint32_t v = golden::activation_device(a.func, z);
          r[(std::size_t(p) * n1 + i1) * n0 + i0] = v;
          sum = golden::alu(isa::AluOp::kAdd, sum, v);
        }
      }
      sums[std::size_t(p)] = sum;
    }
    for (int p = 0; p < P; ++p) {
      for (int i1 = 0; i1 < n1; ++i1) {
        for (int i0 = 0; i0 < n0; ++i0) io.put(a.out, p, i1, i0, r[(std::size_t(p) * n1 + i1) * n0 + i0], a.no_sat);
      }
      if (a.reduce) io.put(a.sum, p, 0, 0, sums[std::size_t(p)], a.no_sat);
    }
    return;
  }
  const auto& v = in.vec;
  const int P = v.partitions, n0 = v.free[0], n1 = v.free[1];
  struct Out {
    int p, i1, i0;
    uint32_t value;
  };
  std::vector<Out> outs;
  outs.reserve(std::size_t(P) * n0 * n1);
  for (int p = 0; p < P; ++p) {
    if (in.op == Opcode::kTensorReduce) {
      const bool all = v.axis == isa::ReduceAxis::kAll;
      for (int r = 0; r < (all ? 1 : n1); ++r) {
        std::vector<uint32_t> vals;
        for (int i1 = all ? 0 : r; i1 < (all ? n1 : r + 1); ++i1) {
          for (int i0 = 0; i0 < n0; ++i0) vals.push_back(io.get(v.in0, p, i1, i0));
        }
        outs.push_back({p, r, 0, golden::reduce(v.op, vals)});
      }
      continue;
    }
    for (int i1 = 0; i1 < n1; ++i1) {
      for (int i0 = 0; i0 < n0; ++i0) {
        switch (in.op) {
          case Opcode::kTensorTensor:
            outs.push_back({p, i1, i0, golden::alu(v.op, io.get(v.in0, p, i1, i0), io.get(v.in1, p, i1, i0))});
            break;
          case Opcode::kTensorScalar:
            outs.push_back({p, i1, i0, golden::tensor_scalar(v.op, v.imm0, v.op1, v.imm1, io.get(v.in0, p, i1, i0))});
            break;
          case Opcode::kTensorCopy: outs.push_back({p, i1, i0, io.get(v.in0, p, i1, i0)}); break;
          case Opcode::kMemset: outs.push_back({p, i1, i0, v.imm0}); break;
          case Opcode::kIota:
            outs.push_back({p, i1, i0, golden::iota(v.base, v.pstep, v.step[0], v.step[1], p, i0, i1)});
            break;
          case Opcode::kSelect:
            outs.push_back({p, i1, i0,
                            golden::select_predicate(io.get(v.in0, p, i1, i0)) ? io.get(v.in1, p, i1, i0)
                                                                               : io.get(v.in2, p, i1, i0)});
            break;
          case Opcode::kTranspose: outs.push_back({i0, 0, p, io.get(v.in0, p, i1, i0)}); break;
          default: throw std::runtime_error("reference: not a Vector instruction");
        }
      }
    }
  }
  for (const Out& o : outs) io.put(v.out, o.p, o.i1, o.i0, o.value, v.no_sat);
}

}  // namespace

ProgramCheckOptions prefetch_areas(const driver::DeviceInfo& info, uint32_t sbuf_end) {
  ProgramCheckOptions opt;
  opt.areas = {{MemSpace::kHbm, 0, 1, 0, info.hbm_bytes, true, true, "HBM"},
               {MemSpace::kPsum, 0, info.psum_partitions, 0, info.psum_partition_bytes, true, true, "PSUM"},
               {MemSpace::kSbuf, 0, info.sbuf_partitions, 0, sbuf_end, true, true, "the program's"},
               {MemSpace::kSbuf, 0, info.sbuf_partitions, sbuf_end, info.sbuf_partition_bytes, false, true,
                "the prefetch's"}};
  return opt;
}

std::vector<int> operand_rows_missing(const driver::DeviceInfo& info, const RefMemory& mem,
                                      const std::vector<uint8_t>& hbm, uint64_t src, int k, int n, int k_tile,
                                      uint32_t sbuf, uint32_t tile_bytes) {
  std::vector<int> missing;
  const uint64_t row = uint64_t(n) * 2;
  for (int r = 0; r < k && missing.size() < 5; ++r) {
    const uint64_t at = uint64_t(r % k_tile) * info.sbuf_partition_bytes + sbuf + uint64_t(r / k_tile) * tile_bytes;
    if (at + row > mem.sbuf.size() || src + (uint64_t(r) + 1) * row > hbm.size() ||
        std::memcmp(&mem.sbuf[at], &hbm[src + uint64_t(r) * row], row) != 0) {
      missing.push_back(r);
    }
  }
  return missing;
}

uint64_t hbm_bytes_read(const isa::Program& program, uint64_t lo, uint64_t hi) {
  uint64_t bytes = 0;
  for (const auto& queue : program.queues) {
    for (const Instruction& in : queue) {
      if (in.op == isa::Opcode::kDmaCopy && in.copy.src_space == MemSpace::kHbm && in.copy.src_addr >= lo &&
          in.copy.src_addr < hi) {
        bytes += kernels::copy_bytes(in.copy);
      }
    }
  }
  return bytes;
}

RefMemory run_reference(const driver::DeviceInfo& info, const isa::Program& program, std::vector<uint8_t> hbm) {
  RefMemory mem;
  mem.hbm = std::move(hbm);
  mem.sbuf.assign(uint64_t(info.sbuf_partitions) * info.sbuf_partition_bytes, 0);
  mem.psum.assign(uint64_t(info.psum_partitions) * info.psum_partition_bytes, 0);
  auto space = [&](MemSpace s) -> std::vector<uint8_t>& {
    return s == MemSpace::kHbm ? mem.hbm : s == MemSpace::kSbuf ? mem.sbuf : mem.psum;
  };
  auto at = [&](MemSpace s, uint64_t addr, uint64_t bytes) -> uint8_t* {
    auto& v = space(s);
    if (addr > v.size() || bytes > v.size() - addr) {
      throw std::runtime_error(fmt::format("reference: {} access [{:#x}, +{}) outside memory", space_name(s), addr, bytes));
    }
    return v.data() + addr;
  };

  std::vector<float> stationary;  // [k][M]
  uint32_t st_k = 0, st_m = 0;
  Untimed sim(program);
  const std::string stop = sim.run([&](int, std::size_t, const Instruction& in, const Known&) {
    if (in.op == Opcode::kDmaCopy || in.op == Opcode::kPsumCopy) {
      const auto& c = in.copy;
      const unsigned se = isa::data_type_bytes(c.src_type), de = isa::data_type_bytes(c.dst_type);
      for (int64_t i3 = 0; i3 < c.count[3]; ++i3)
        for (int64_t i2 = 0; i2 < c.count[2]; ++i2)
          for (int64_t i1 = 0; i1 < c.count[1]; ++i1)
            for (int64_t i0 = 0; i0 < c.count[0]; ++i0) {
              const int64_t s = int64_t(c.src_addr) + i0 * c.src_stride[0] + i1 * c.src_stride[1] +
                                i2 * c.src_stride[2] + i3 * c.src_stride[3];
              const int64_t d = int64_t(c.dst_addr) + i0 * c.dst_stride[0] + i1 * c.dst_stride[1] +
                                i2 * c.dst_stride[2] + i3 * c.dst_stride[3];
              uint64_t bits = load_le(at(c.src_space, uint64_t(s), se), se);
              if (c.src_type != c.dst_type) {
                const uint32_t f32 = c.src_type == isa::DataType::kFp32
                                         ? uint32_t(bits)
                                         : golden::widen_to_f32(isa::Dtype(c.src_type), uint16_t(bits));
                bits = c.dst_type == isa::DataType::kFp32
                           ? f32
                           : golden::narrow_from_f32(isa::Dtype(c.dst_type), f32, !c.no_sat);
              }
              store_le(at(c.dst_space, uint64_t(d), de), bits, de);
            }
      return;
    }
    if (isa::is_tensor_op(in.op)) {
      execute_tensor_op(info, in, mem);
      return;
    }
    if (isa::is_collective(in.op)) {
      // A collective's result depends on the other chips: the collective tests check it with collective_golden.
      throw std::runtime_error("reference: " + std::string(*isa::opcode_name(in.op)) +
                               " is a multi-chip collective; this reference models one chip");
    }
    if (in.op != Opcode::kLoadStationary && in.op != Opcode::kMultiplyMoving) return;
    const auto& t = in.te;
    const auto& table = widen_table(t.dtype);
    const unsigned es = isa::dtype_bits(t.dtype) / 8;
    const uint64_t pb = info.sbuf_partition_bytes;
    // Operand partition k of a TE operand in SBUF (firmware/isa/dtype.h: FP8 pairs two per SBUF partition).
    auto sbuf_row = [&](uint32_t k, uint32_t n, std::vector<float>* dst) {
      const uint8_t* p = at(MemSpace::kSbuf, t.sbuf_addr + uint64_t(isa::te_sbuf_partition(t.dtype, k)) * pb,
                            isa::te_sbuf_row_bytes(t.dtype, n));
      for (uint32_t j = 0; j < n; ++j) (*dst)[j] = table[load_le(p + isa::te_sbuf_byte(t.dtype, k, j), es)];
    };
    if (in.op == Opcode::kLoadStationary) {
      st_k = t.k;
      st_m = t.free_size;
      stationary.assign(uint64_t(st_k) * st_m, 0.0f);
      std::vector<float> row(st_m);
      for (uint32_t k = 0; k < st_k; ++k) {
        sbuf_row(k, st_m, &row);
        std::copy(row.begin(), row.end(), stationary.begin() + uint64_t(k) * st_m);
      }
      return;
    }
    if (t.k != st_k) throw std::runtime_error("reference: multiply_moving k differs from the stationary's");
    const uint32_t n = t.free_size;
    std::vector<float> moving(uint64_t(t.k) * n), row(n);
    for (uint32_t k = 0; k < t.k; ++k) {
      sbuf_row(k, n, &row);
      std::copy(row.begin(), row.end(), moving.begin() + uint64_t(k) * n);
    }
    const uint64_t ppb = info.psum_partition_bytes;
    std::vector<float> sum(n);
    for (uint32_t m = 0; m < st_m; ++m) {
      std::fill(sum.begin(), sum.end(), 0.0f);  // rule 3: +0.0
      for (uint32_t k = 0; k < t.k; ++k) {
        const float s = stationary[uint64_t(k) * st_m + m];
        const float* mv = &moving[uint64_t(k) * n];
        for (uint32_t j = 0; j < n; ++j) {
          const float product = s * mv[j];  // rule 2: one rounding; no FMA (-ffp-contract=off)
          sum[j] = sum[j] + product;
        }
      }
      uint8_t* out = at(MemSpace::kPsum, t.psum_addr + uint64_t(m) * ppb, uint64_t(n) * 4);
      for (uint32_t j = 0; j < n; ++j) {
        float v = sum[j];
        if (t.accumulate) v = golden::float_from_bits(uint32_t(load_le(out + 4 * j, 4))) + v;
        const uint32_t bits = std::isnan(v) ? golden::kF32CanonicalNan : golden::bits_from_float(v);
        store_le(out + 4 * j, bits, 4);
      }
    }
  });
  if (!stop.empty()) throw std::runtime_error("reference: " + stop);
  return mem;
}

// ---------------------------------------------------------------------------------------------------------------
// Timing estimate

TimingEstimate estimate_timing(const driver::DeviceInfo& info, const isa::Program& program, const CostModel& cost) {
  TimingEstimate est;
  const double mhz = info.te_clock_mhz;
  const double latency = info.dma_latency_ns * mhz / 1000.0;
  const double bytes_per_cycle = info.dma_bytes_per_ns * 1000.0 / mhz;
  const double issue = static_cast<double>(cost.issue_cycles);

  std::array<double, kQueues> t{};
  std::array<std::size_t, kQueues> pc{};
  std::array<bool, kQueues> halted{};
  std::array<uint64_t, isa::kNumSemaphores> counter{};
  // Per semaphore: (time, value) of every increment; copies with a completion semaphore land out of order.
  std::array<std::vector<std::pair<double, uint64_t>>, isa::kNumSemaphores> signals;
  std::vector<double> engine_free(std::max<uint32_t>(1, info.num_dma_engines), 0.0);
  double copies_done = 0.0;  // when every copy issued so far has completed
  double te_busy = 0.0, te_stall = 0.0;
  uint64_t stationary_m = 0;
  // The TE's two sequencers (docs/architecture.md "Timing" and "In a stream"; isa::TeStream): a load is taken once
  // the previous load is done and the swapping multiply took its first column, its beats follow the shadow-weight
  // rule; a multiply is taken once both sequencers are idle.
  isa::TeStream te(info.te_rows, info.te_cols);
  for (int q = 0; q < kQueues; ++q) halted[q] = program.queues[q].empty();

  for (;;) {
    bool progress = false, all = true;
    for (int q = 0; q < kQueues; ++q) {
      while (!halted[q]) {
        const auto& instrs = program.queues[q];
        if (pc[q] >= instrs.size()) throw std::runtime_error("timing: queue ran past its end");
        const Instruction& in = instrs[pc[q]];
        if (in.op == Opcode::kSemWait && counter[in.sem.sem] < in.sem.value) break;  // the signal is not known yet
        t[q] += issue;
        switch (in.op) {
          case Opcode::kSemWait: {
            // The time the count reached the value: the increments in the order they happen.
            auto events = signals[in.sem.sem];
            std::sort(events.begin(), events.end());
            double when = 0.0;
            uint64_t cum = 0;
            for (const auto& [time, value] : events) {
              cum += value;
              if (cum >= in.sem.value) {
                when = time;
                break;
              }
            }
            const double start = std::max(t[q], when);
            if (q == kTe) te_stall += start - t[q];
            t[q] = start;
            break;
          }
          case Opcode::kSemSignal:
          case Opcode::kHalt: {
            if (q == kDma) t[q] = std::max(t[q], copies_done);
            const double te_done = te.done();
            // The te queue's signal of its own core's semaphore lands when the loads and the pipeline are done while
            // the queue goes on (docs/isa.md "Execution"); its halt, and a signal to another core, wait for them.
            const bool te_deferred = q == kTe && in.op == Opcode::kSemSignal && in.sem.core < 0;
            if (q == kTe && !te_deferred && te_done > t[q]) {
              te_busy += te_done - t[q];
              t[q] = te_done;
            }
            if (in.op == Opcode::kSemSignal) {
              counter[in.sem.sem] += in.sem.value;
              signals[in.sem.sem].emplace_back(te_deferred ? std::max(t[q], te_done) : t[q], in.sem.value);
            } else {
              halted[q] = true;
            }
            break;
          }
          case Opcode::kLoadStationary: {
            const double taken = te.load(t[q], isa::te_sbuf_partitions(in.te.dtype, in.te.k));  // a beat per PE row
            stationary_m = in.te.free_size;
            te_busy += taken + 1.0 - t[q];
            t[q] = taken + 1.0;
            break;
          }
          case Opcode::kMultiplyMoving: {
            const double taken = te.multiply(t[q], in.te.free_size);
            te_busy += taken + 1.0 - t[q];
            t[q] = taken + 1.0;
            est.macs += uint64_t(in.te.k) * in.te.free_size * stationary_m;
            break;
          }
          case Opcode::kDmaCopy:
          case Opcode::kPsumCopy: {
            // The earliest free engine takes the copy; the queue waits while all are busy.
            auto e = std::min_element(engine_free.begin(), engine_free.end());
            t[q] = std::max(t[q], *e);
            const uint64_t bytes = in.copy.elements() * std::max(isa::data_type_bytes(in.copy.src_type),
                                                                 isa::data_type_bytes(in.copy.dst_type));
            *e = t[q] + latency + double(bytes) / bytes_per_cycle;
            copies_done = std::max(copies_done, *e);
            if (in.copy.done_sem >= 0 && in.copy.done_sem < isa::kNumSemaphores) {  // counted now, lands at *e
              ++counter[std::size_t(in.copy.done_sem)];
              signals[std::size_t(in.copy.done_sem)].emplace_back(*e, 1);
            }
            ++est.dma_copies;
            est.dma_bytes += bytes;
            break;
          }
          case Opcode::kActivation: {
            // docs/isa.md "Costs": max(64, n) (+ 64 with sum) Scalar cycles at 1.2 GHz = x 2 TE cycles.
            const double n = std::max(64.0, double(in.act.free[0]) * in.act.free[1]) + (in.act.reduce ? 64.0 : 0.0);
            t[q] += std::ceil(n * info.te_clock_mhz / double(info.act_clock_mhz));
            break;
          }
          default:
            if (isa::is_collective(in.op)) {
              throw std::runtime_error("timing: collective instructions wait on other chips; no one-chip estimate");
            }
            if (isa::is_tensor_op(in.op)) {
              // docs/isa.md "Costs": max(64, ceil(n / w)) Vector cycles (n = P for transpose) at 0.96 GHz, w the
              // elements per lane: VEC_WIDTH.ELEMS_16 / partitions when out and every input read are BF16 or FP16,
              // else ELEMS / partitions (at least 1); quantize_mx two passes over n0 at ELEMS.
              const auto is16 = [](const isa::Operand& o) {
                return o.type == isa::DataType::kBf16 || o.type == isa::DataType::kFp16;
              };
              const Opcode op = in.op;
              const bool reads0 = op != Opcode::kMemset && op != Opcode::kIota;
              const bool reads1 = op == Opcode::kTensorTensor || op == Opcode::kSelect;
              const bool all16 = op != Opcode::kQuantizeMx && is16(in.vec.out) && (!reads0 || is16(in.vec.in0)) &&
                                 (!reads1 || is16(in.vec.in1)) && (op != Opcode::kSelect || is16(in.vec.in2));
              const uint32_t elems = all16 ? info.vec_elems_per_cycle_16 : info.vec_elems_per_cycle;
              const double w = std::max(1u, elems / std::max(1u, info.sbuf_partitions));
              const double n = op == Opcode::kTranspose  ? double(in.vec.partitions)
                               : op == Opcode::kQuantizeMx ? double(in.vec.free[0])
                                                           : double(in.vec.free[0]) * in.vec.free[1];
              const double passes = op == Opcode::kQuantizeMx ? 2.0 : 1.0;
              t[q] += std::ceil(passes * std::max(64.0, std::ceil(n / w)) * info.te_clock_mhz /
                                double(info.vec_clock_mhz));
            }
            break;
        }
        ++pc[q];
        progress = true;
      }
      all = all && halted[q];
    }
    if (all) break;
    if (!progress) throw std::runtime_error("timing: deadlock");
  }
  est.cycles = static_cast<uint64_t>(std::ceil(*std::max_element(t.begin(), t.end())));
  est.te_busy = static_cast<uint64_t>(te_busy);
  est.te_stall = static_cast<uint64_t>(te_stall);
  return est;
}

}  // namespace trnsim::test
