// Workloads as sequences of programs (kernel_sequence.h).
#include "firmware/kernels/kernel_sequence.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "firmware/kernels/gemm_kernel.h"

namespace trnsim::kernels {

void append(KernelSequence* seq, KernelSequence more) {
  for (auto& s : more) seq->push_back(std::move(s));
}

SequenceRun run_sequence(driver::Driver& drv, const KernelSequence& seq, uint64_t timeout_cycles,
                         const std::function<void(const StepRun&)>& on_step, std::size_t* failed_step) {
  SequenceRun total;
  for (std::size_t i = 0; i < seq.size(); ++i) {
    const KernelStep& step = seq[i];
    if (failed_step) *failed_step = i;
    StepRun r;
    r.name = step.name;
    r.macs = step.macs;
    for (const auto& q : step.program.queues) r.instructions += q.size();
    drv.load_program(step.program);
    r.run = drv.run(timeout_cycles);
    total.cycles += r.run.cycles;
    total.macs += r.macs;
    total.instructions += r.instructions;
    for (std::size_t q = 0; q < total.retired.size(); ++q) total.retired[q] += r.run.retired[q];
    if (on_step) on_step(r);
    total.steps.push_back(std::move(r));
  }
  return total;
}

KernelStep gemm_step(const driver::DeviceInfo& info, std::string name, int k, int m, int n, uint64_t stationary_hbm,
                     uint64_t moving_hbm, uint64_t out_hbm) {
  GemmLayout g;
  g.dtype = isa::Dtype::kBf16;
  g.k = k;
  g.m = m;
  g.n = n;
  g.stationary_hbm = stationary_hbm;
  g.moving_hbm = moving_hbm;
  g.out_hbm = out_hbm;
  return {std::move(name), make_gemm_program(info, g), uint64_t(k) * uint64_t(m) * uint64_t(n)};
}

isa::Program dma_program(const std::vector<isa::CopyFields>& copies) {
  isa::Program p;
  auto& dma = p.queue(isa::Engine::kDma);
  for (const auto& c : copies) {
    isa::Instruction i;
    i.op = isa::Opcode::kDmaCopy;
    i.copy = c;
    dma.push_back(i);
  }
  dma.push_back(isa::Instruction::halt());
  return p;
}

namespace {
constexpr uint64_t kMaxCount = 0xFFFF;

int32_t checked_stride(uint64_t bytes) {
  if (bytes > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    throw std::invalid_argument(fmt::format("copy stride of {} bytes does not fit the ISA's 32-bit strides", bytes));
  }
  return static_cast<int32_t>(bytes);
}
}  // namespace

std::vector<isa::CopyFields> transpose_copies(uint64_t in_hbm, isa::DataType in_type, uint64_t out_hbm,
                                              isa::DataType out_type, int rows, int cols, int pieces) {
  if (rows < 1 || cols < 1 || uint64_t(rows) > kMaxCount || uint64_t(cols) > kMaxCount) {
    throw std::invalid_argument(
        fmt::format("transpose of [{}, {}]: each dimension must be 1..{} (the ISA's 16-bit counts)", rows, cols,
                    kMaxCount));
  }
  const uint64_t ies = isa::data_type_bytes(in_type), oes = isa::data_type_bytes(out_type);
  // dim 0 walks r (contiguous in the output), dim 1 walks c; bands of c go to different copies.
  std::vector<isa::CopyFields> out;
  const int bands = std::max(1, std::min(pieces, cols));
  for (int b = 0; b < bands; ++b) {
    const int c0 = int(int64_t(cols) * b / bands), c1 = int(int64_t(cols) * (b + 1) / bands);
    if (c1 == c0) continue;
    isa::CopyFields c;
    c.src_type = in_type;
    c.dst_type = out_type;
    c.src_space = c.dst_space = isa::MemSpace::kHbm;
    c.src_addr = in_hbm + uint64_t(c0) * ies;
    c.dst_addr = out_hbm + uint64_t(c0) * rows * oes;
    c.count = {static_cast<uint16_t>(rows), static_cast<uint16_t>(c1 - c0), 1, 1};
    c.src_stride = {rows > 1 ? checked_stride(uint64_t(cols) * ies) : 0,
                    c1 - c0 > 1 ? static_cast<int32_t>(ies) : 0, 0, 0};
    c.dst_stride = {rows > 1 ? static_cast<int32_t>(oes) : 0,
                    c1 - c0 > 1 ? checked_stride(uint64_t(rows) * oes) : 0, 0, 0};
    out.push_back(c);
  }
  return out;
}

std::vector<isa::CopyFields> cast_copies(uint64_t in_hbm, isa::DataType in_type, uint64_t out_hbm,
                                         isa::DataType out_type, uint64_t elements, int pieces) {
  const uint64_t ies = isa::data_type_bytes(in_type), oes = isa::data_type_bytes(out_type);
  constexpr uint64_t kRow = 8192;  // elements per row of the 2-D copies
  std::vector<isa::CopyFields> out;
  auto add = [&](uint64_t first, uint64_t row, uint64_t nrows) {
    isa::CopyFields c;
    c.src_type = in_type;
    c.dst_type = out_type;
    c.src_space = c.dst_space = isa::MemSpace::kHbm;
    c.src_addr = in_hbm + first * ies;
    c.dst_addr = out_hbm + first * oes;
    c.count = {static_cast<uint16_t>(row), static_cast<uint16_t>(nrows), 1, 1};
    c.src_stride = {row > 1 ? static_cast<int32_t>(ies) : 0, nrows > 1 ? static_cast<int32_t>(row * ies) : 0, 0, 0};
    c.dst_stride = {row > 1 ? static_cast<int32_t>(oes) : 0, nrows > 1 ? static_cast<int32_t>(row * oes) : 0, 0, 0};
    out.push_back(c);
  };
  const uint64_t full = elements / kRow;
  const uint64_t parts = std::max<uint64_t>(1, std::min<uint64_t>(uint64_t(std::max(1, pieces)), full));
  for (uint64_t p = 0; p < parts && full > 0; ++p) {
    uint64_t r0 = full * p / parts;
    const uint64_t r1 = full * (p + 1) / parts;
    while (r0 < r1) {
      const uint64_t n = std::min<uint64_t>(r1 - r0, kMaxCount);
      add(r0 * kRow, kRow, n);
      r0 += n;
    }
  }
  if (elements % kRow) add(full * kRow, elements % kRow, 1);
  return out;
}

}  // namespace trnsim::kernels
