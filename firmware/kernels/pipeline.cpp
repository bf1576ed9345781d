// Pipeline and instruction constructors (pipeline.h).
#include "firmware/kernels/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "firmware/isa/te_stream.h"

namespace trnsim::kernels {
namespace {

constexpr int kQueues = isa::kNumQueues;
constexpr int kDma = static_cast<int>(isa::Engine::kDma);

// The Scalar engine's minimum initiation interval (docs/isa.md "Costs"; the Vector engine's cost is
// isa::vector_cycles); the clocks, the Vector data path and the DMA copy figures come from the device (DeviceInfo:
// TE_CLOCK_MHZ, ACT/VEC_CLOCK_MHZ, VEC_WIDTH, DMA_LATENCY_NS, DMA_BW_MBPS).
constexpr double kMinII = double(isa::kEngineMinII);

isa::Instruction sem(isa::Opcode op, uint8_t id, uint32_t value) {
  isa::Instruction i;
  i.op = op;
  i.sem.sem = id;
  i.sem.value = value;
  return i;
}


}  // namespace

Pipeline::Pipeline(const driver::DeviceInfo& info, uint8_t first_sem) : info_(info), first_sem_(first_sem) {
  if (int(first_sem) + kQueues + kLandingSems > isa::kNumSemaphores) {
    throw std::invalid_argument("pipeline: semaphores past 31");
  }
}

Pipeline::OpId Pipeline::add(isa::Engine engine, std::vector<isa::Instruction> instrs, const std::vector<OpId>& after) {
  const OpId id = static_cast<OpId>(ops_.size());
  Op op{engine, std::move(instrs), {}, false};
  for (const OpId d : after) {
    if (d < 0) continue;
    if (d >= id) throw std::logic_error("pipeline: dependency on an op not added before");
    if (std::find(op.deps.begin(), op.deps.end(), d) != op.deps.end()) continue;
    op.deps.push_back(d);
    if (ops_[std::size_t(d)].engine != engine) ops_[std::size_t(d)].cross_users = true;
  }
  ops_.push_back(std::move(op));
  return id;
}

double Pipeline::dma_engine_cycles() const {
  const double mhz = info_.te_clock_mhz == 0 ? 2400.0 : double(info_.te_clock_mhz);
  if (!(info_.dma_bytes_per_ns > 0)) {
    throw std::invalid_argument("Pipeline: the DeviceInfo has no engine clocks or DMA figures (a Driver's has)");
  }
  const double latency = info_.dma_latency_ns * mhz / 1000.0, bytes_per_cycle = info_.dma_bytes_per_ns * 1000.0 / mhz;
  double busy = 0.0;
  for (const Op& op : ops_) {
    if (op.engine != isa::Engine::kDma) continue;
    for (const isa::Instruction& in : op.instrs) {
      if (in.op == isa::Opcode::kDmaCopy || in.op == isa::Opcode::kPsumCopy) {
        busy += latency + double(copy_bytes(in.copy)) / bytes_per_cycle;
      }
    }
  }
  return busy / double(std::max<uint32_t>(1, info_.num_dma_engines));
}

std::vector<Pipeline::OpId> Pipeline::schedule(double* cycles, bool te_streams) const {
  const std::size_t n = ops_.size();
  std::vector<std::vector<OpId>> users(n);
  std::vector<int> pending(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(ops_[i].deps.size());
    for (const OpId d : ops_[i].deps) users[std::size_t(d)].push_back(OpId(i));
  }
  const double mhz = info_.te_clock_mhz == 0 ? 2400.0 : double(info_.te_clock_mhz);
  const double latency = info_.dma_latency_ns * mhz / 1000.0, bytes_per_cycle = info_.dma_bytes_per_ns * 1000.0 / mhz;
  if (info_.act_clock_mhz == 0 || info_.vec_clock_mhz == 0 || !(info_.dma_bytes_per_ns > 0)) {
    throw std::invalid_argument("Pipeline: the DeviceInfo has no engine clocks or DMA figures (a Driver's has)");
  }
  // TE cycles per engine cycle of the Scalar and Vector engines (2.0 and 2.5 at 2.4 / 1.2 / 0.96 GHz).
  const double act_ratio = mhz / info_.act_clock_mhz, vec_ratio = mhz / info_.vec_clock_mhz;
  const isa::VecDataPath vec_path = info_.vec_data_path();
  std::array<double, kQueues> t{};
  std::vector<double> engines(std::max<uint32_t>(1, info_.num_dma_engines), 0.0);
  double outstanding = 0.0;  // when every copy issued so far is done
  double last_result = 0.0;  // when the last op's results are in (the te queue's halt waits for them)
  std::vector<double> finish(n, 0.0);
  std::array<double, kLandingSems> landed{};  // when the last landing op on each completion semaphore is done
  int landing_ops = 0;
  std::vector<OpId> ready, order;
  isa::TeStream te(info_.te_rows, info_.te_cols);  // the TE's two sequencers (te_streams)
  for (std::size_t i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push_back(OpId(i));
  }
  auto start_of = [&](OpId id) {
    const Op& op = ops_[std::size_t(id)];
    const int q = static_cast<int>(op.engine);
    double s = t[std::size_t(q)];
    for (const OpId d : op.deps) {
      if (static_cast<int>(ops_[std::size_t(d)].engine) != q || q == kDma) s = std::max(s, finish[std::size_t(d)]);
    }
    return s;
  };
  while (!ready.empty()) {
    auto best = ready.begin();
    double best_start = start_of(*best);
    for (auto it = ready.begin() + 1; it != ready.end(); ++it) {
      const double s = start_of(*it);
      if (s < best_start || (s == best_start && *it < *best)) {
        best = it;
        best_start = s;
      }
    }
    const OpId id = *best;
    ready.erase(best);
    order.push_back(id);
    const Op& op = ops_[std::size_t(id)];
    const int q = static_cast<int>(op.engine);
    double now = best_start, done = best_start, te_drain = 0.0, te_results = 0.0;
    // A dma op after another dma op it depends on: the barrier in front of it waits for every copy issued so far.
    bool after_dma = false;
    for (const OpId d : op.deps) after_dma = after_dma || ops_[std::size_t(d)].engine == isa::Engine::kDma;
    if (q == kDma && after_dma) now = std::max(now, outstanding);
    // A published dma op waits for the op before it on its completion semaphore.
    const bool landing = q == kDma && op.cross_users;
    const int lane = landing ? landing_ops++ % kLandingSems : 0;
    if (landing) now = std::max(now, landed[std::size_t(lane)]);
    for (const isa::Instruction& in : op.instrs) {
      now += 1.0;  // issue
      switch (in.op) {
        // The TE (docs/architecture.md "Timing"). te_streams: as the engine streams, a load taken once the previous
        // load is done and the multiply before it has swapped, its beats after that swap has passed their PE rows
        // (its last after the swap has left the array); a multiply once both sequencers are idle, its results one
        // pipeline depth after its last column. Otherwise each command in series: a multiply's next command after
        // its last column, its results one pipeline depth later (added once, at the op's end), a load's beats in full.
        case isa::Opcode::kLoadStationary:
          if (te_streams) {
            now = te.load(now, isa::te_sbuf_partitions(in.te.dtype, in.te.k)) + 1.0;  // taken, then its handshake
            break;
          }
          now += 1.0 + isa::te_sbuf_partitions(in.te.dtype, in.te.k);
          break;
        case isa::Opcode::kMultiplyMoving:
          if (te_streams) {
            now = te.multiply(now, in.te.free_size) + 1.0;
            te_results = te.results();
            break;
          }
          now += 1.0 + double(in.te.free_size);
          te_drain = double(info_.te_rows) + info_.te_cols + 1.0;
          break;
        case isa::Opcode::kActivation:
          now += std::ceil(
              (std::max(kMinII, double(in.act.free[0]) * in.act.free[1]) + (in.act.reduce ? kMinII : 0.0)) * act_ratio);
          break;
        case isa::Opcode::kDmaCopy:
        case isa::Opcode::kPsumCopy: {
          auto e = std::min_element(engines.begin(), engines.end());
          now = std::max(now, *e);
          *e = now + latency + double(copy_bytes(in.copy)) / bytes_per_cycle;
          outstanding = std::max(outstanding, *e);
          done = std::max(done, *e);
          break;
        }
        default:
          if (isa::is_tensor_op(in.op)) now += std::ceil(double(isa::vector_cycles(in, vec_path)) * vec_ratio);
          break;
      }
    }
    if (landing) landed[std::size_t(lane)] = done;
    t[std::size_t(q)] = now;
    // The te queue's signal after the op lands with its last results, one pipeline depth after its last column;
    // the queue goes on issuing meanwhile.
    finish[std::size_t(id)] = q == kDma                                       ? done
                              : te_streams && op.engine == isa::Engine::kTe ? std::max(now, te_results)
                                                                            : now + te_drain;
    last_result = std::max(last_result, finish[std::size_t(id)]);
    for (const OpId u : users[std::size_t(id)]) {
      if (--pending[std::size_t(u)] == 0) ready.push_back(u);
    }
  }
  if (order.size() != n) throw std::logic_error("pipeline: dependency cycle");
  if (cycles) *cycles = std::max({*std::max_element(t.begin(), t.end()), outstanding, last_result});
  return order;
}

double Pipeline::estimated_cycles() const {
  double c = 0.0;
  schedule(&c, /*te_streams=*/true);
  return c;
}

isa::Program Pipeline::build() const {
  const std::vector<OpId> order = schedule(nullptr, /*te_streams=*/false);
  const std::size_t n = ops_.size();
  // Pass 1: the synchronisation of every op, in the global order. te/act/vec/cc publish an op by a signal right after
  // it; a dma op by its copies as they land (done_sem on its lane's completion semaphore; the dma queue first waits
  // for the lane's previous op to have landed). A dma op that must follow an earlier dma op (buffer reuse) gets a
  // barrier in front of it, a dma sem_signal, unless one came since.
  struct Sync {
    bool signal_before = false;  // dma: a barrier in front of the op
    bool signal_after = false;   // te/act/vec/cc: publish the op
    int lane = -1;               // dma with users on other queues: its copies' completion semaphore (lane)
    uint32_t lane_before = 0;    // the lane's count before the op: what the dma queue waits for first
  };
  // A producer of a wait: a queue's semaphore (0 .. kQueues - 1) or a completion semaphore (kQueues + lane).
  constexpr int kProducers = kQueues + kLandingSems;
  std::vector<Sync> sync(n);
  std::vector<uint32_t> published(n, 0);
  std::vector<int> producer(n, 0);  // whose count `published` is
  std::array<uint32_t, kProducers> count{};
  int landing_ops = 0;
  std::vector<uint32_t> issued_at(n, 0);  // dma: barriers before the op
  for (const OpId id : order) {
    const Op& op = ops_[std::size_t(id)];
    const int q = static_cast<int>(op.engine);
    Sync& sy = sync[std::size_t(id)];
    if (q == kDma) {
      bool after_dma_copy = false;
      for (const OpId d : op.deps) {
        after_dma_copy = after_dma_copy || (ops_[std::size_t(d)].engine == isa::Engine::kDma &&
                                            issued_at[std::size_t(d)] == count[kDma]);
      }
      if (after_dma_copy) {
        sy.signal_before = true;
        ++count[kDma];
      }
      issued_at[std::size_t(id)] = count[kDma];
      if (op.cross_users) {
        uint32_t copies = 0;
        for (const isa::Instruction& in : op.instrs) {
          copies += in.op == isa::Opcode::kDmaCopy || in.op == isa::Opcode::kPsumCopy ? 1 : 0;
        }
        if (copies == 0) throw std::logic_error("pipeline: a dma op that other queues wait for has no copies");
        sy.lane = landing_ops++ % kLandingSems;
        sy.lane_before = count[std::size_t(kQueues + sy.lane)];
        producer[std::size_t(id)] = kQueues + sy.lane;
        count[std::size_t(kQueues + sy.lane)] += copies;
        published[std::size_t(id)] = count[std::size_t(kQueues + sy.lane)];
      }
    } else if (op.cross_users) {
      sy.signal_after = true;
      producer[std::size_t(id)] = q;
      published[std::size_t(id)] = ++count[std::size_t(q)];
    }
  }

  // Pass 2: emit.
  isa::Program prog;
  std::array<std::array<uint32_t, kProducers>, kQueues> emitted{};
  for (const OpId id : order) {
    const Op& op = ops_[std::size_t(id)];
    const int q = static_cast<int>(op.engine);
    auto& out = prog.queues[std::size_t(q)];
    const Sync& sy = sync[std::size_t(id)];
    if (sy.signal_before) out.push_back(sem(isa::Opcode::kSemSignal, uint8_t(first_sem_ + q), 1));
    // The waits for the producers' published counts; waits an earlier one of this queue implies are left out.
    std::array<uint32_t, kProducers> need{};
    for (const OpId d : op.deps) {
      const int pq = static_cast<int>(ops_[std::size_t(d)].engine);
      const int pr = producer[std::size_t(d)];
      if (pq != q) need[std::size_t(pr)] = std::max(need[std::size_t(pr)], published[std::size_t(d)]);
    }
    if (sy.lane >= 0) {  // the op before on this lane has landed
      const std::size_t pr = std::size_t(kQueues + sy.lane);
      need[pr] = std::max(need[pr], sy.lane_before);
    }
    for (int pr = 0; pr < kProducers; ++pr) {
      if (need[std::size_t(pr)] > emitted[std::size_t(q)][std::size_t(pr)]) {
        out.push_back(sem(isa::Opcode::kSemWait, uint8_t(first_sem_ + pr), need[std::size_t(pr)]));
        emitted[std::size_t(q)][std::size_t(pr)] = need[std::size_t(pr)];
      }
    }
    const std::size_t first = out.size();
    out.insert(out.end(), op.instrs.begin(), op.instrs.end());
    if (sy.lane >= 0) {  // each copy adds 1 to the lane's semaphore when it lands
      for (std::size_t k = first; k < out.size(); ++k) {
        if (out[k].op == isa::Opcode::kDmaCopy || out[k].op == isa::Opcode::kPsumCopy) {
          out[k].copy.done_sem = first_sem_ + kQueues + sy.lane;
        }
      }
    }
    if (sy.signal_after) out.push_back(sem(isa::Opcode::kSemSignal, uint8_t(first_sem_ + q), 1));
  }
  for (auto& qi : prog.queues) {
    if (!qi.empty()) qi.push_back(isa::Instruction::halt());
  }
  return prog;
}

uint32_t PartitionArena::take(uint64_t bytes, const char* what) {
  const uint64_t at = (used_ + 63) / 64 * 64;
  if (at + bytes > limit_) {
    throw std::invalid_argument(fmt::format("{} needs {} bytes per partition, but only {} of {} are left", what, bytes,
                                            at > limit_ ? 0 : limit_ - at, limit_));
  }
  used_ = at + bytes;
  return static_cast<uint32_t>(at);
}

std::vector<RowGroup> plan_row_groups(int rows, int pt, int cols, int min_groups, uint64_t group_bytes) {
  const int full = rows / pt, ragged = rows % pt;
  const uint64_t row_bytes = uint64_t(cols) * 4;
  int g = static_cast<int>(std::max<uint64_t>(1, group_bytes / std::max<uint64_t>(1, row_bytes)));
  g = std::max(1, std::min(g, (full + min_groups - 1) / std::max(1, min_groups)));
  std::vector<RowGroup> out;
  for (int t = 0; t < full; t += g) out.push_back({t * pt, pt, std::min(g, full - t)});
  if (ragged > 0) out.push_back({full * pt, ragged, 1});
  return out;
}

std::vector<RowBuffer> take_row_buffers(PartitionArena& arena, int wanted, int groups, int cols, int g,
                                        const char* kernel) {
  const uint64_t row_bytes = uint64_t(cols) * 4 * uint64_t(g), block = uint64_t(g) * 4;
  const uint64_t per_buffer = (row_bytes + 63) / 64 * 64 + 4 * ((block + 63) / 64 * 64);
  int n = std::max(1, std::min(wanted, groups));
  while (n > 1 && uint64_t(n) * per_buffer > arena.left()) --n;
  const std::string what = fmt::format("{} row tile of {} FP32", kernel, cols);
  std::vector<RowBuffer> out(static_cast<std::size_t>(n));
  for (auto& b : out) {
    b.x = arena.take(row_bytes, what.c_str());
    for (auto& c : b.column) c = arena.take(block, what.c_str());
  }
  return out;
}

void check_hbm_tensor(const driver::DeviceInfo& info, const char* kernel, const char* tensor, uint64_t addr,
                      uint64_t bytes) {
  if (addr > info.hbm_bytes || bytes > info.hbm_bytes - addr) {
    throw std::invalid_argument(fmt::format("{}: {} [{:#x}, +{} bytes) is outside HBM ({} bytes)", kernel, tensor, addr,
                                            bytes, info.hbm_bytes));
  }
}

isa::Operand operand(uint32_t offset, isa::DataType type, std::array<int16_t, 2> stride, isa::MemSpace space,
                     uint16_t partition) {
  isa::Operand o;
  o.space = space;
  o.type = type;
  o.partition = partition;
  o.offset = offset;
  o.stride = stride;
  return o;
}

isa::Operand column(uint32_t offset) { return operand(offset, isa::DataType::kFp32, {0, 0}); }

namespace {
uint32_t f32_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
isa::Instruction vec(isa::Opcode op, int partitions, int n0, int n1 = 1) {
  isa::Instruction i;
  i.op = op;
  i.vec.partitions = static_cast<uint16_t>(partitions);
  i.vec.free = {static_cast<uint16_t>(n0), static_cast<uint16_t>(n1)};
  return i;
}
/// A one-element free axis walks nothing: strides 0 (the assembler's canonical form).
isa::Operand fit(isa::Operand o, int n0, int n1 = 1) {
  if (n0 == 1) o.stride[0] = 0;
  if (n1 == 1) o.stride[1] = 0;
  return o;
}
}  // namespace

isa::Instruction tensor_tensor(isa::AluOp op, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0,
                               const isa::Operand& in1, int n1) {
  isa::Instruction i = vec(isa::Opcode::kTensorTensor, partitions, n0, n1);
  i.vec.op = op;
  i.vec.out = fit(out, n0, n1);
  i.vec.in0 = fit(in0, n0, n1);
  i.vec.in1 = fit(in1, n0, n1);
  return i;
}

isa::Instruction transpose_op(int partitions, int n0, const isa::Operand& out, const isa::Operand& in0) {
  isa::Instruction i = vec(isa::Opcode::kTranspose, partitions, n0);
  i.vec.out = fit(out, partitions);
  i.vec.in0 = fit(in0, n0);
  return i;
}

isa::Instruction iota_op(int partitions, int n, uint32_t out, int16_t pstep, int32_t step) {
  isa::Instruction i = vec(isa::Opcode::kIota, partitions, n);
  i.vec.out = operand(out, isa::DataType::kFp32, {int16_t(n > 1 ? 1 : 0), 0});
  i.vec.pstep = pstep;
  i.vec.step = {step, 0};
  return i;
}

std::vector<isa::Instruction> causal_softmax_constants(int partitions, uint32_t const_off, uint32_t pred_off,
                                                       int pred_width) {
  // +0 twice; the second 0 -> 1 -> -FLT_MAX -> -inf. The predicate: c - q < 0.
  const isa::Operand ninf = operand(const_off + 4);
  std::vector<isa::Instruction> c{
      iota_op(partitions, 2, const_off, 0, 0),
      tensor_scalar(isa::AluOp::kIsEqual, 0.0f, isa::AluOp::kMultiply, -FLT_MAX, partitions, 1, ninf, ninf),
      tensor_scalar(isa::AluOp::kMultiply, 2.0f, isa::AluOp::kNone, 0.0f, partitions, 1, ninf, ninf)};
  if (pred_width > 0) {
    const isa::Operand pred = operand(pred_off);
    c.push_back(iota_op(partitions, pred_width, pred_off, -1, 1));
    c.push_back(tensor_scalar(isa::AluOp::kIsLt, 0.0f, isa::AluOp::kNone, 0.0f, partitions, pred_width, pred, pred));
  }
  return c;
}

isa::Instruction select(int partitions, int n0, const isa::Operand& out, const isa::Operand& pred,
                        const isa::Operand& in1, const isa::Operand& in2, int n1) {
  isa::Instruction i = vec(isa::Opcode::kSelect, partitions, n0, n1);
  i.vec.out = fit(out, n0, n1);
  i.vec.in0 = fit(pred, n0, n1);
  i.vec.in1 = fit(in1, n0, n1);
  i.vec.in2 = fit(in2, n0, n1);
  return i;
}

isa::Instruction tensor_scalar(isa::AluOp op, float imm0, isa::AluOp op1, float imm1, int partitions, int n0,
                               const isa::Operand& out, const isa::Operand& in0, int n1) {
  isa::Instruction i = vec(isa::Opcode::kTensorScalar, partitions, n0, n1);
  i.vec.op = op;
  i.vec.imm0 = f32_bits(imm0);
  i.vec.op1 = op1;
  i.vec.imm1 = op1 == isa::AluOp::kNone ? 0u : f32_bits(imm1);
  i.vec.out = fit(out, n0, n1);
  i.vec.in0 = fit(in0, n0, n1);
  return i;
}

isa::Instruction tensor_copy(int partitions, int n0, const isa::Operand& out, const isa::Operand& in0, int n1) {
  isa::Instruction i = vec(isa::Opcode::kTensorCopy, partitions, n0, n1);
  i.vec.out = fit(out, n0, n1);
  i.vec.in0 = fit(in0, n0, n1);
  return i;
}

isa::Instruction memset_op(int partitions, int n0, const isa::Operand& out, float value) {
  isa::Instruction i = vec(isa::Opcode::kMemset, partitions, n0, 1);
  i.vec.imm0 = f32_bits(value);
  i.vec.out = fit(out, n0, 1);
  return i;
}

isa::Instruction tensor_reduce_rows(isa::AluOp op, int partitions, int n0, int n1, const isa::Operand& out,
                                    const isa::Operand& in0) {
  isa::Instruction i = vec(isa::Opcode::kTensorReduce, partitions, n0, n1);
  i.vec.op = op;
  i.vec.axis = isa::ReduceAxis::kInner;
  i.vec.out = out;
  i.vec.out.stride = {0, static_cast<int16_t>(n1 > 1 ? 1 : 0)};
  i.vec.in0 = fit(in0, n0, n1);
  return i;
}

isa::Instruction tensor_reduce(isa::AluOp op, int partitions, int n0, const isa::Operand& out,
                               const isa::Operand& in0) {
  isa::Instruction i = vec(isa::Opcode::kTensorReduce, partitions, n0);
  i.vec.op = op;
  i.vec.axis = isa::ReduceAxis::kAll;
  i.vec.out = out;
  i.vec.out.stride = {0, 0};
  i.vec.in0 = fit(in0, n0);
  return i;
}

isa::Instruction activation(isa::ActFunc func, int partitions, int n0, const isa::Operand& out, const isa::Operand& in0,
                            float scale, float bias, const isa::Operand* bias_column, const isa::Operand* sum_column) {
  isa::Instruction i;
  i.op = isa::Opcode::kActivation;
  isa::ActFields& a = i.act;
  a.func = func;
  a.partitions = static_cast<uint16_t>(partitions);
  a.free = {static_cast<uint16_t>(n0), 1};
  a.out = fit(out, n0);
  a.in0 = fit(in0, n0);
  a.scale = f32_bits(scale);
  if (bias_column) {
    a.bias_tensor = true;
    a.bias_ap = *bias_column;
    a.bias_ap.stride = {0, 0};
  } else {
    a.bias = f32_bits(bias);
  }
  if (sum_column) {
    a.reduce = true;
    a.sum = *sum_column;
    a.sum.stride = {0, 0};
  }
  return i;
}

namespace {
/// The 3-D copy between a row group's HBM rows and its SBUF tiles (load: HBM -> SBUF FP32, else the reverse).
isa::CopyFields group_copy(const driver::DeviceInfo& info, uint64_t hbm, isa::DataType type, const RowGroup& grp,
                           int cols, uint32_t sbuf_offset, bool load, int width) {
  const int64_t row = int64_t(cols) * isa::data_type_bytes(type), pb = int64_t(info.sbuf_partition_bytes);
  const uint64_t first = hbm + uint64_t(grp.row0) * uint64_t(row);
  const int n = width > 0 ? width : cols;
  isa::CopyFields c = load ? copy_rows(isa::MemSpace::kHbm, first, type, row, isa::MemSpace::kSbuf, sbuf_offset,
                                       isa::DataType::kFp32, pb, grp.p, n)
                           : copy_rows(isa::MemSpace::kSbuf, sbuf_offset, isa::DataType::kFp32, pb, isa::MemSpace::kHbm,
                                       first, type, row, grp.p, n);
  if (grp.g > 1) {
    const int64_t hbm_tile = row * grp.p, sbuf_tile = int64_t(cols) * 4;
    if (hbm_tile > std::numeric_limits<int32_t>::max()) {
      throw std::invalid_argument(
          fmt::format("a row tile of {} bytes does not fit the ISA's 32-bit strides", hbm_tile));
    }
    c.count[2] = static_cast<uint16_t>(grp.g);
    (load ? c.src_stride : c.dst_stride)[2] = static_cast<int32_t>(hbm_tile);
    (load ? c.dst_stride : c.src_stride)[2] = static_cast<int32_t>(sbuf_tile);
  }
  return c;
}
}  // namespace

Pipeline::OpId load_rows(Pipeline& pipe, const driver::DeviceInfo& info, uint64_t hbm, isa::DataType type,
                         const RowGroup& group, int cols, uint32_t sbuf_offset,
                         const std::vector<Pipeline::OpId>& after, int width, double piece_latencies) {
  const isa::CopyFields c = group_copy(info, hbm, type, group, cols, sbuf_offset, true, width);
  const uint32_t parts =
      piece_latencies >= 1.0 ? latency_engines(info, copy_bytes(c), piece_latencies) : info.num_dma_engines;
  return pipe.add(isa::Engine::kDma, dma_pieces(c, parts), after);
}

Pipeline::OpId store_rows(Pipeline& pipe, const driver::DeviceInfo& info, uint64_t hbm, isa::DataType type,
                          const RowGroup& group, int cols, uint32_t sbuf_offset,
                          const std::vector<Pipeline::OpId>& after, int width) {
  return pipe.add(isa::Engine::kDma,
                  dma_pieces(group_copy(info, hbm, type, group, cols, sbuf_offset, false, width), info.num_dma_engines),
                  after);
}

}  // namespace trnsim::kernels
