#include "model/core/tensor_engine.h"

#include <algorithm>
#include <cmath>

#include <fmt/core.h>

#include "model/fp/fp_ops.h"

namespace trnsim::model {

TensorEngine::TensorEngine(const sc_core::sc_module_name& name, CoreControl& control,
                           std::unique_ptr<TeCompute> compute)
    : QueueEngine(name, isa::Engine::kTe, control), compute_(std::move(compute)) {}

void TensorEngine::on_start() {
  loaded_ = false;
  swap_pending_ = false;
  load_free_at_ = stream_free_at_ = results_at_ = swap_clear_at_ = swap_row_clear_at_ = swap_taken_at_ =
      sc_core::SC_ZERO_TIME;
}

uint64_t TensorEngine::cycles_until(const sc_core::sc_time& t) const {
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  return t > now ? static_cast<uint64_t>(std::ceil((t - now) / control_.cycle_time())) : 0;
}

void TensorEngine::busy_until(const sc_core::sc_time& t) {
  if (const uint64_t n = cycles_until(t)) busy(n);
}

sc_core::sc_time TensorEngine::done_at() const { return std::max({load_free_at_, stream_free_at_, results_at_}); }

void TensorEngine::drain() { busy_until(done_at()); }

std::optional<sc_core::sc_time> TensorEngine::completion_time() const { return done_at(); }

std::optional<Fault> TensorEngine::execute(const isa::Instruction& instr, uint32_t index) {
  if (instr.op == isa::Opcode::kLoadStationary) return load_stationary(instr.te);
  return multiply_moving(instr.te, index);
}

std::optional<Fault> TensorEngine::read_sbuf_rows(uint64_t sbuf_addr, int k, int elems, isa::Dtype dtype,
                                                  std::vector<uint16_t>& out) {
  // The operand's SBUF layout (firmware/isa/dtype.h): FP8 holds two operand partitions per SBUF partition.
  const ChipConfig& c = control_.config();
  const unsigned esize = isa::dtype_bits(dtype) / 8;
  const uint64_t parts = isa::te_sbuf_partitions(dtype, unsigned(k));
  const uint64_t row_bytes = isa::te_sbuf_row_bytes(dtype, uint64_t(elems));
  const uint64_t p0 = sbuf_addr / c.sbuf_partition_bytes, off = sbuf_addr % c.sbuf_partition_bytes;
  if (p0 + parts > uint64_t(c.sbuf_partitions) || off + row_bytes > c.sbuf_partition_bytes) {
    return Fault{regs::ERR_SBUF_RANGE, uint32_t(isa::field_id("sbuf_addr")),
                 fmt::format("SBUF partitions {}..{}, bytes {}..{} are outside SBUF ({} partitions x {} bytes)", p0,
                             p0 + parts - 1, off, off + row_bytes - 1, c.sbuf_partitions, c.sbuf_partition_bytes)};
  }
  out.resize(size_t(k) * elems);
  std::vector<uint8_t> row(row_bytes);
  const unsigned per = isa::te_pe_partitions(dtype);  // operand partitions per SBUF partition
  for (uint64_t sp = 0; sp < parts; ++sp) {
    const uint64_t base = regs::SBUF_BASE + (p0 + sp) * c.sbuf_partition_bytes + off;
    // An odd K's last pair (FP8, MX) feeds one operand partition: only its bytes are read (docs/isa.md).
    const bool whole = std::min(unsigned(k), unsigned(sp + 1) * per) - unsigned(sp) * per == per;
    if (whole) bus_read(base, row.data(), row.size());
    for (unsigned kk = unsigned(sp) * per; kk < std::min(unsigned(k), unsigned(sp + 1) * per); ++kk) {
      for (int e = 0; e < elems; ++e) {
        const uint64_t b = isa::te_sbuf_byte(dtype, kk, uint64_t(e));
        if (!whole) bus_read(base + b, row.data() + b, esize);
        out[size_t(kk) * elems + e] = esize == 2 ? uint16_t(row[b] | (row[b + 1] << 8)) : row[b];
      }
    }
  }
  return std::nullopt;
}

std::optional<Fault> TensorEngine::read_sbuf_scales(const isa::TeFields& f, int elems, std::vector<uint8_t>& out) {
  out.clear();
  if (!compute_->supports(f.dtype)) {
    return Fault{regs::ERR_BAD_FIELD, uint32_t(isa::field_id("dtype")),
                 fmt::format("dtype {}: the {} Tensor Engine datapath does not compute with it",
                             isa::dtype_name(f.dtype), compute_->name())};
  }
  if (!isa::is_mx(f.dtype)) return std::nullopt;
  const ChipConfig& c = control_.config();
  const uint64_t parts = isa::te_sbuf_partitions(f.dtype, unsigned(f.k));
  const uint64_t p0 = f.scale_addr / c.sbuf_partition_bytes, off = f.scale_addr % c.sbuf_partition_bytes;
  if (p0 + parts > uint64_t(c.sbuf_partitions) || off + uint64_t(elems) > c.sbuf_partition_bytes) {
    return Fault{regs::ERR_SBUF_RANGE, uint32_t(isa::field_id("scale_addr")),
                 fmt::format("MX scales in SBUF partitions {}..{}, bytes {}..{} are outside SBUF ({} partitions x {} "
                             "bytes)", p0, p0 + parts - 1, off, off + elems - 1, c.sbuf_partitions,
                             c.sbuf_partition_bytes)};
  }
  out.resize(size_t(f.k) * elems);
  std::vector<uint8_t> row(static_cast<size_t>(elems));
  const unsigned per = isa::te_pe_partitions(f.dtype);  // operand partitions sharing SBUF row sp's scales
  for (uint64_t sp = 0; sp < parts; ++sp) {
    bus_read(regs::SBUF_BASE + (p0 + sp) * c.sbuf_partition_bytes + off, row.data(), row.size());
    for (unsigned kk = unsigned(sp) * per; kk < std::min(unsigned(f.k), unsigned(sp + 1) * per); ++kk) {
      std::copy(row.begin(), row.end(), out.begin() + ptrdiff_t(kk) * elems);
    }
  }
  return std::nullopt;
}

std::optional<Fault> TensorEngine::load_stationary(const isa::TeFields& f) {
  const int max_k = compute_->max_k(f.dtype);
  if (f.k > max_k || f.free_size > compute_->cols()) {
    const bool bad_k = f.k > max_k;
    return Fault{regs::ERR_TE_SHAPE, uint32_t(isa::field_id(bad_k ? "k" : "free_size")),
                 bad_k ? fmt::format("load_stationary k = {} exceeds the {} partitions one pass of the {}x{} array "
                                     "contracts with {}", f.k, max_k, compute_->rows(), compute_->cols(),
                                     isa::dtype_name(f.dtype))
                       : fmt::format("load_stationary m = {} exceeds the {}x{} array", f.free_size,
                                     compute_->rows(), compute_->cols())};
  }
  std::vector<uint8_t> scales;
  if (auto fault = read_sbuf_scales(f, f.free_size, scales)) return fault;
  std::vector<uint16_t> stationary;
  if (auto fault = read_sbuf_rows(f.sbuf_addr, f.k, f.free_size, f.dtype, stationary)) return fault;
  // The command is taken once the previous load is done and the swapping multiply took its first column; the beats
  // (issue_cycles - 1 of them) follow, one per PE row: the first once the last swap has passed row 0, the last once
  // that swap has left the array (shadow weights, TeTiming).
  busy_until(std::max(load_free_at_, swap_taken_at_));
  compute_->load_stationary(f.dtype, f.k, f.free_size, stationary, scales);
  const sc_core::sc_time cycle = control_.cycle_time();
  const sc_core::sc_time first_beat = std::max(sc_core::sc_time_stamp() + cycle, swap_row_clear_at_);
  const sc_core::sc_time last_beat =
      std::max(first_beat + cycle * double(compute_->issue_cycles() - 2), swap_clear_at_);
  load_free_at_ = last_beat + cycle;
  busy(1);  // the command handshake
  swap_pending_ = true;
  loaded_ = true;
  loaded_dtype_ = f.dtype;
  loaded_k_ = f.k;
  loaded_m_ = f.free_size;
  return std::nullopt;
}

std::optional<Fault> TensorEngine::multiply_moving(const isa::TeFields& f, uint32_t index) {
  const ChipConfig& c = control_.config();
  if (!loaded_) {
    return Fault{regs::ERR_NO_STATIONARY, 0, "multiply_moving before any load_stationary"};
  }
  if (f.k != loaded_k_) {
    return Fault{regs::ERR_TE_SHAPE, uint32_t(isa::field_id("k")),
                 fmt::format("multiply_moving k = {} but the loaded stationary has k = {}", f.k, loaded_k_)};
  }
  if (f.dtype != loaded_dtype_) {
    return Fault{regs::ERR_BAD_FIELD, uint32_t(isa::field_id("dtype")),
                 fmt::format("multiply_moving dtype {} differs from the loaded stationary's {}",
                             isa::dtype_name(f.dtype), isa::dtype_name(loaded_dtype_))};
  }
  const int m = loaded_m_, n = f.free_size;
  const uint64_t pp0 = f.psum_addr / c.psum_partition_bytes, poff = f.psum_addr % c.psum_partition_bytes;
  if (pp0 + m > uint64_t(c.psum_partitions)) {
    return Fault{regs::ERR_PSUM_RANGE, uint32_t(isa::field_id("psum_addr")),
                 fmt::format("PSUM partitions {}..{} are outside PSUM ({} partitions)", pp0, pp0 + m - 1,
                             c.psum_partitions)};
  }
  const uint64_t bank = c.psum_bank_bytes();
  if (poff / bank != (poff + 4ull * n - 1) / bank) {
    return Fault{regs::ERR_TE_SHAPE, uint32_t(isa::field_id("free_size")),
                 fmt::format("PSUM write of {} FP32 at byte offset {} crosses a {}-byte bank boundary", n, poff, bank)};
  }
  std::vector<uint8_t> scales;
  if (auto fault = read_sbuf_scales(f, n, scales)) return fault;
  std::vector<uint16_t> moving;
  if (auto fault = read_sbuf_rows(f.sbuf_addr, f.k, n, f.dtype, moving)) return fault;
  std::vector<uint32_t> sums;
  uint64_t cycles = 0;
  // The PSUM write-back mode goes to the datapath with the command and comes back with the result columns.
  PsumWrite write = f.accumulate ? PsumWrite::kAccumulate : PsumWrite::kOverwrite;
  busy_until(std::max(load_free_at_, stream_free_at_));  // both sequencers idle: the command is taken
  try {
    cycles = compute_->multiply_moving(f.dtype, f.k, n, moving, scales, sums, write, index);
  } catch (const std::exception& e) {
    return Fault{regs::ERR_ENGINE_FAULT, 0, fmt::format("cycle {}: {}", control_.cycles(), e.what())};
  }
  const uint64_t epoch = run_epoch();
  const sc_core::sc_time taken = sc_core::sc_time_stamp(), cycle = control_.cycle_time();
  if (swap_pending_) {  // this command's first column (a cycle after it) swaps the loaded weights in
    swap_clear_at_ = taken + cycle * double(1 + TeTiming::swap_clear(compute_->rows(), compute_->cols()));
    swap_row_clear_at_ = taken + cycle * double(1 + TeTiming::swap_row_clear(compute_->cols()));
    swap_taken_at_ = taken + cycle * 2.0;
    swap_pending_ = false;
  }
  stream_free_at_ = taken + cycle * double(compute_->issue_cycles());
  results_at_ = taken + cycle * double(cycles);
  busy(1);  // the command handshake
  // A soft reset while the array streamed abandons the instruction: its results must not land in the next run's
  // PSUM (the Vector, Scalar and DMA engines drop theirs the same way).
  if (control_.epoch() != epoch) return std::nullopt;
  macs_ += uint64_t(f.k) * m * n;
  // PSUM adder: write the column sums, or add them to what the bank holds (rule 4), in the mode the results carry.
  std::vector<uint32_t> row(n);
  for (int mm = 0; mm < m; ++mm) {
    const uint64_t addr = regs::PSUM_BASE + (pp0 + mm) * c.psum_partition_bytes + poff;
    if (write == PsumWrite::kAccumulate) {
      bus_read(addr, row.data(), 4ull * n);
      for (int nn = 0; nn < n; ++nn) row[nn] = fp::add(row[nn], sums[size_t(mm) * n + nn]);
    } else {
      std::copy(sums.begin() + ptrdiff_t(mm) * n, sums.begin() + ptrdiff_t(mm + 1) * n, row.begin());
    }
    bus_write(addr, row.data(), 4ull * n);
  }
  return std::nullopt;
}

}  // namespace trnsim::model
