// Base of the engines that compute on [partition, free] tensor operands in SBUF or PSUM: the Vector engine and the
// Scalar (activation) engine. It checks operands against the memories and the partition-quadrant rule, moves them
// over the bus (widened to FP32 on the way in, cast once on the way out) and charges time in the engine's own
// clock. The subclasses compute (model/fp/engine_ops.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "model/core/queue_engine.h"

namespace trnsim::model {

class TensorOpEngine : public QueueEngine {
 public:
  /// Minimum instruction initiation interval, in engine cycles (docs/isa.md "Costs").
  static constexpr uint64_t kMinII = isa::kEngineMinII;

  /// This engine's clock (MHz).
  uint32_t clock_mhz() const { return clock_mhz_; }
  /// Engine cycles spent on this engine's own instructions (its clock; busy_cycles() counts TE cycles).
  uint64_t engine_cycles() const { return engine_cycles_; }

 protected:
  TensorOpEngine(const sc_core::sc_module_name& name, isa::Engine engine, CoreControl& control, uint32_t clock_mhz);

  /// An operand's elements as FP32 bits, [partitions][n1][n0] row-major.
  struct Tile {
    int partitions = 0, n0 = 0, n1 = 0;
    std::vector<uint32_t> v;
    Tile() = default;
    Tile(int p, int a, int b) : partitions(p), n0(a), n1(b), v(size_t(p) * a * b) {}
    uint32_t& at(int p, int i1, int i0) { return v[(size_t(p) * n1 + i1) * n0 + i0]; }
    uint32_t at(int p, int i1, int i0) const { return v[(size_t(p) * n1 + i1) * n0 + i0]; }
  };

  /// Checks operand `name` (out, in0, bias, ...) spanning `partitions` partitions and free counts [n0, n1] (its
  /// strides; a column operand passes n0 = n1 = 1): the partitions exist (SBUF_RANGE / PSUM_RANGE, field
  /// NAME_partition), the start partition follows the quadrant rule (PARTITION_ALIGN, NAME_partition), and every
  /// byte lies inside the partition (SBUF_RANGE / PSUM_RANGE, NAME_offset).
  std::optional<Fault> check(const isa::Operand& o, int partitions, int n0, int n1, std::string_view name) const;
  /// Checks the elements per partition of one instruction, n0 * n1: at most the bytes of an SBUF partition (the
  /// longest dense FP8 row), so that broadcast strides cannot make an instruction of billions of elements
  /// (BAD_FIELD, field free).
  std::optional<Fault> check_free(int n0, int n1) const;
  /// Reads an operand (checked) widened to FP32.
  Tile read(const isa::Operand& o, int partitions, int n0, int n1);
  /// Casts and writes a tile to an operand (checked); elements are written in index order, so with overlapping
  /// addresses (stride 0) the last one stays. `sr`: stochastic rounding (rule 9) with SR_SEED and each element's
  /// destination key (isa::sr_element_key).
  void write(const isa::Operand& o, const Tile& t, bool no_sat, bool sr);
  /// Writes `bytes` ([partitions][n], row-major) as they are to a 1-byte operand's first n bytes of each partition
  /// (checked by check() first; no cast).
  void write_bytes(const isa::Operand& o, int partitions, int n, const std::vector<uint8_t>& bytes);
  /// Waits `engine_cycles` of this engine's clock, rounded up to whole TE cycles (the device's time unit).
  void charge(uint64_t engine_cycles);
  /// Cost of an instruction that processes `elements` per partition: max(kMinII, elements) engine cycles.
  static uint64_t op_cycles(uint64_t elements) { return elements > kMinII ? elements : kMinII; }

 private:
  uint64_t space_base(isa::MemSpace s) const;
  uint32_t partition_bytes(isa::MemSpace s) const;
  int partitions_of(isa::MemSpace s) const;
  /// Reports the elements an instruction reads or writes to the checker, consecutive bytes merged into one access.
  class RunReport {
   public:
    RunReport(TensorOpEngine& e, bool write) : e_(e), write_(write) {}
    ~RunReport() { flush(); }
    RunReport(const RunReport&) = delete;
    RunReport& operator=(const RunReport&) = delete;
    void add(uint64_t addr, uint64_t bytes) {
      if (end_ != begin_ && addr == end_) {
        end_ += bytes;
        return;
      }
      flush();
      begin_ = addr;
      end_ = addr + bytes;
    }
    void flush() {
      if (end_ != begin_) e_.check_access(begin_, end_ - begin_, write_);
      begin_ = end_ = 0;
    }

   private:
    TensorOpEngine& e_;
    const bool write_;
    uint64_t begin_ = 0, end_ = 0;
  };
  /// Byte range [lo, hi] touched inside one partition.
  void span(const isa::Operand& o, int n0, int n1, int64_t* lo, int64_t* hi) const;

  const uint32_t clock_mhz_;
  uint64_t engine_cycles_ = 0;
};

/// The quadrant rule (docs/isa.md): an access of `partitions` partitions may start at a multiple of 32 when it
/// spans at most 32, of 64 when it spans at most 64, and only at 0 beyond (NKI nc_stream_shuffle rules).
/// Returns the required alignment of the start partition: 32, 64 or 128.
uint32_t start_partition_alignment(int partitions);

}  // namespace trnsim::model
