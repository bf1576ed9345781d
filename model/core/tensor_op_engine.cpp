#include "model/core/tensor_op_engine.h"

#include <algorithm>
#include <string>

#include <fmt/core.h>

#include "model/fp/engine_ops.h"
#include "model/fp/fp_ops.h"

namespace trnsim::model {

uint32_t start_partition_alignment(int partitions) { return partitions <= 32 ? 32 : partitions <= 64 ? 64 : 128; }

TensorOpEngine::TensorOpEngine(const sc_core::sc_module_name& name, isa::Engine engine, CoreControl& control,
                               uint32_t clock_mhz)
    : QueueEngine(name, engine, control), clock_mhz_(clock_mhz) {}

uint64_t TensorOpEngine::space_base(isa::MemSpace s) const {
  return s == isa::MemSpace::kPsum ? regs::PSUM_BASE : regs::SBUF_BASE;
}

uint32_t TensorOpEngine::partition_bytes(isa::MemSpace s) const {
  const ChipConfig& c = control_.config();
  return s == isa::MemSpace::kPsum ? c.psum_partition_bytes : c.sbuf_partition_bytes;
}

int TensorOpEngine::partitions_of(isa::MemSpace s) const {
  const ChipConfig& c = control_.config();
  return s == isa::MemSpace::kPsum ? c.psum_partitions : c.sbuf_partitions;
}

void TensorOpEngine::span(const isa::Operand& o, int n0, int n1, int64_t* lo, int64_t* hi) const {
  const int64_t es = isa::data_type_bytes(o.type);
  const int64_t a = int64_t(n0 - 1) * o.stride[0], b = int64_t(n1 - 1) * o.stride[1];
  *lo = int64_t(o.offset) + es * (std::min<int64_t>(a, 0) + std::min<int64_t>(b, 0));
  *hi = int64_t(o.offset) + es * (std::max<int64_t>(a, 0) + std::max<int64_t>(b, 0)) + es - 1;
}

std::optional<Fault> TensorOpEngine::check(const isa::Operand& o, int partitions, int n0, int n1,
                                           std::string_view name) const {
  const uint32_t range_code = o.space == isa::MemSpace::kPsum ? regs::ERR_PSUM_RANGE : regs::ERR_SBUF_RANGE;
  const std::string space(isa::mem_space_name(o.space));
  const std::string part_field = std::string(name) + "_partition", off_field = std::string(name) + "_offset";
  const int have = partitions_of(o.space);
  if (int(o.partition) + partitions > have) {
    return Fault{range_code, uint32_t(isa::field_id(part_field)),
                 fmt::format("{} partitions {}..{} are outside {} ({} partitions)", name, o.partition,
                             o.partition + partitions - 1, space, have)};
  }
  const uint32_t align = start_partition_alignment(partitions);
  if (o.partition % align != 0) {
    return Fault{regs::ERR_PARTITION_ALIGN, uint32_t(isa::field_id(part_field)),
                 fmt::format("{} starts at partition {} and spans {}: an access of {} partitions must start at a "
                             "multiple of {}", name, o.partition, partitions,
                             partitions <= 32 ? "at most 32" : partitions <= 64 ? "33..64" : "more than 64", align)};
  }
  int64_t lo = 0, hi = 0;
  span(o, n0, n1, &lo, &hi);
  const uint32_t pb = partition_bytes(o.space);
  if (lo < 0 || hi >= int64_t(pb)) {
    return Fault{range_code, uint32_t(isa::field_id(off_field)),
                 fmt::format("{} touches bytes {}..{} of each partition, outside {}'s {} bytes", name, lo, hi, space,
                             pb)};
  }
  return std::nullopt;
}

std::optional<Fault> TensorOpEngine::check_free(int n0, int n1) const {
  const uint64_t n = uint64_t(n0) * uint64_t(n1), limit = control_.config().sbuf_partition_bytes;
  if (n <= limit) return std::nullopt;
  return Fault{regs::ERR_BAD_FIELD, uint32_t(isa::field_id("free")),
               fmt::format("free [{}, {}] is {} elements per partition, more than the {} an instruction may process "
                           "(the bytes of an SBUF partition)", n0, n1, n, limit)};
}

namespace {
uint32_t load_element(const uint8_t* p, unsigned es) {
  uint32_t v = 0;
  for (unsigned i = 0; i < es; ++i) v |= uint32_t(p[i]) << (8 * i);
  return v;
}
void store_element(uint8_t* p, unsigned es, uint32_t v) {
  for (unsigned i = 0; i < es; ++i) p[i] = uint8_t(v >> (8 * i));
}
}  // namespace

TensorOpEngine::Tile TensorOpEngine::read(const isa::Operand& o, int partitions, int n0, int n1) {
  Tile t(partitions, n0, n1);
  const unsigned es = isa::data_type_bytes(o.type);
  int64_t lo = 0, hi = 0;
  span(o, n0, n1, &lo, &hi);
  std::vector<uint8_t> row(size_t(hi - lo + 1));
  const uint64_t base = space_base(o.space);
  const uint32_t pb = partition_bytes(o.space);
  // The row read covers the gaps of a strided pattern: the checker hears of the elements read, not of the row.
  const bool checked = control_.checker() != nullptr;
  const CheckScope scope(*this, false);
  RunReport report(*this, false);
  for (int p = 0; p < partitions; ++p) {
    const uint64_t addr = base + uint64_t(o.partition + p) * pb + uint64_t(lo);
    bus_read(addr, row.data(), row.size());
    for (int i1 = 0; i1 < n1; ++i1) {
      for (int i0 = 0; i0 < n0; ++i0) {
        const int64_t at = int64_t(o.offset) - lo + es * (int64_t(i0) * o.stride[0] + int64_t(i1) * o.stride[1]);
        if (checked) report.add(addr + uint64_t(at), es);
        t.at(p, i1, i0) = fp::to_f32(o.type, load_element(&row[size_t(at)], es));
      }
    }
  }
  return t;
}

void TensorOpEngine::write(const isa::Operand& o, const Tile& t, bool no_sat, bool sr) {
  const unsigned es = isa::data_type_bytes(o.type);
  int64_t lo = 0, hi = 0;
  span(o, t.n0, t.n1, &lo, &hi);
  std::vector<uint8_t> row(size_t(hi - lo + 1));
  // A dense pattern covers its byte range exactly: no need to read what is there first.
  const bool dense = (t.n0 == 1 || o.stride[0] == 1) && (t.n1 == 1 || o.stride[1] == (t.n0 == 1 ? 1 : t.n0)) &&
                     size_t(t.n0) * t.n1 * es == row.size();
  const uint64_t base = space_base(o.space);
  const uint32_t pb = partition_bytes(o.space);
  // A strided write reads and rewrites its row: the checker hears of the elements written only.
  const bool checked = control_.checker() != nullptr;
  const CheckScope scope(*this, false);
  RunReport report(*this, true);
  for (int p = 0; p < t.partitions; ++p) {
    const uint64_t addr = base + uint64_t(o.partition + p) * pb + uint64_t(lo);
    if (!dense) bus_read(addr, row.data(), row.size());
    for (int i1 = 0; i1 < t.n1; ++i1) {
      for (int i0 = 0; i0 < t.n0; ++i0) {
        const int64_t at = int64_t(o.offset) - lo + es * (int64_t(i0) * o.stride[0] + int64_t(i1) * o.stride[1]);
        if (checked) report.add(addr + uint64_t(at), es);
        const uint32_t v = t.at(p, i1, i0);
        if (sr) {
          const uint64_t key = isa::sr_element_key(o.space, uint64_t(o.partition + p) * pb + uint64_t(lo + at));
          store_element(&row[size_t(at)], es,
                        fp::from_f32_stochastic(o.type, v, !no_sat, fp::sr_bits(control_.sr_seed(), key)));
        } else {
          store_element(&row[size_t(at)], es, fp::from_f32(o.type, v, !no_sat));
        }
      }
    }
    report.flush();  // before the data lands
    bus_write(addr, row.data(), row.size());
  }
}

void TensorOpEngine::write_bytes(const isa::Operand& o, int partitions, int n, const std::vector<uint8_t>& bytes) {
  const uint64_t base = space_base(o.space);
  const uint32_t pb = partition_bytes(o.space);
  const CheckScope scope(*this, false);
  RunReport report(*this, true);
  for (int p = 0; p < partitions; ++p) {
    const uint64_t addr = base + uint64_t(o.partition + p) * pb + o.offset;
    if (control_.checker() != nullptr) report.add(addr, uint64_t(n));
    report.flush();  // before the data lands
    bus_write(addr, &bytes[size_t(p) * n], size_t(n));
  }
}

void TensorOpEngine::charge(uint64_t engine_cycles) {
  engine_cycles_ += engine_cycles;
  const uint64_t te_mhz = control_.config().te_clock_mhz;
  busy((engine_cycles * te_mhz + clock_mhz_ - 1) / clock_mhz_);
}

}  // namespace trnsim::model
