// trn_guest_gemm: the guest program of docs/linux-driver.md, run inside a QEMU guest on /dev/trn0 (the module) with
// the project's own Driver and GEMM kernel over driver::LinuxDevice.
//
//   trn_guest_gemm K M N STATIONARY.bin MOVING.bin
//
// The operands (BF16 bit patterns, little-endian, [K, M] and [K, N] row-major) go into DMA buffers in guest RAM; a
// DMA-only program stages them into HBM by bus mastering (space host), the GEMM kernel computes out[M, N] =
// S^T @ M, a second DMA program stages out back into a guest buffer, whose FP32 bits are printed ("guest: out ROW
// HEX..."), for the host to compare with the golden GEMM. Then a malformed program (a copy past the end of HBM at
// instruction 1), loaded and run with the module's ioctls, must fail with EIO and HBM_RANGE at queue dma,
// instruction 1, field dst_addr. On a chip of several NeuronCores (CHIP_CORES), core 1 then computes the same GEMM
// through a driver::CoreDevice over the same /dev/trn0 (its register block at CORE_STRIDE, its own HBM region, the
// operands read in place from the shared HBM), and its output must equal core 0's bit for bit ("guest: core 1 of
// N: ..."), and the malformed program run on core 1 with the ioctls' core field must fault there the same way.
// Console lines start with "guest:"; the last
// is "guest: PASS ..." or "guest: FAIL ...". Exit code 0 / 1 (2: bad arguments).
#include <fmt/format.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "firmware/driver/core_device.h"
#include "firmware/driver/driver.h"
#include "firmware/isa/isa.h"
#include "firmware/kernels/dma_copies.h"
#include "firmware/kernels/gemm_kernel.h"
#include "firmware/linux/guest/linux_device.h"
#include "firmware/linux/trn/trn_ioctl.h"
#include "spec/trn_regs.h"

namespace {

using trnsim::isa::DataType;
using trnsim::isa::MemSpace;
namespace driver = trnsim::driver;
namespace kernels = trnsim::kernels;
namespace isa = trnsim::isa;
namespace regs = trnsim::regs;

constexpr uint64_t kTimeoutCycles = 2'000'000'000;

std::vector<uint8_t> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(fmt::format("{}: cannot be read", path));
  return {std::istreambuf_iterator<char>(f), {}};
}

// The malformed program `bad` (3 instructions for the dma queue, the second a copy past the end of HBM) on core
// `core`, through the module's own C interface (TRN_IOC_LOAD_PROGRAM, TRN_IOC_RUN with the core field) after a soft
// reset of that core: RUN must fail with EIO and the fault's registers (hbm_range at dma instruction 1, field
// dst_addr). Prints "guest: [core C ]fault ..."; false (after a "guest: FAIL" line) otherwise.
bool malformed_program_faults(driver::LinuxDevice& dev, const driver::DeviceInfo& info, uint32_t core,
                              uint64_t hbm_addr, const std::vector<uint8_t>& bad) {
  const uint32_t base = core * regs::CORE_STRIDE, dma = uint32_t(isa::Engine::kDma);
  const std::string who = core == 0 ? "" : fmt::format("core {} ", core);
  for (uint32_t q = 0; q < info.num_queues; ++q) dev.write_reg(base + regs::queue_reg(q, regs::Q_LEN), 0);
  dev.write_reg(base + regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
  trn_program prog{dma, uint32_t(bad.size() / isa::kInstrBytes), hbm_addr, reinterpret_cast<uint64_t>(bad.data()),
                   core, 0};
  if (::ioctl(dev.fd(), TRN_IOC_LOAD_PROGRAM, &prog) != 0) {
    fmt::print("guest: FAIL: {}TRN_IOC_LOAD_PROGRAM: {}\n", who, std::strerror(errno));
    return false;
  }
  trn_run run{1u << dma, 10000, 0, 0, 0, 0, 0, {}, core, 0};
  const int rc = ::ioctl(dev.fd(), TRN_IOC_RUN, &run);
  const int err = errno;
  fmt::print("guest: {}fault {} at queue {}, instruction {} (errno {}): {}\n", who, regs::err_code_name(run.err_code),
             isa::engine_name(static_cast<isa::Engine>(run.err_queue)), run.err_index,
             rc == 0 ? "none" : std::strerror(err), run.detail);
  if (rc == 0 || err != EIO || run.err_code != regs::ERR_HBM_RANGE || run.err_queue != dma || run.err_index != 1 ||
      run.err_info != uint32_t(isa::field_id("dst_addr"))) {
    fmt::print("guest: FAIL: expected EIO, hbm_range at queue dma, instruction 1, field dst_addr{}\n",
               core == 0 ? "" : fmt::format(" on core {}", core));
    return false;
  }
  return true;
}

int run(int k, int m, int n, const std::vector<uint8_t>& s_bytes, const std::vector<uint8_t>& m_bytes) {
  driver::LinuxDevice dev;
  driver::Driver drv(dev);
  const driver::DeviceInfo& info = drv.info();
  fmt::print("guest: /dev/trn0: {} ({}x{} Tensor Engine, {} datapath)\n", info.config_name, info.te_rows,
             info.te_cols, info.te_backend);
  const uint64_t s_size = s_bytes.size(), m_size = m_bytes.size(), out_size = uint64_t(m) * n * 4;
  driver::LinuxDevice::DmaBuffer s_buf = dev.dma_alloc(s_size), m_buf = dev.dma_alloc(m_size),
                                 o_buf = dev.dma_alloc(out_size);
  std::memcpy(s_buf.data, s_bytes.data(), s_size);
  std::memcpy(m_buf.data, m_bytes.data(), m_size);
  std::memset(o_buf.data, 0xA5, out_size);

  kernels::GemmLayout l;
  l.dtype = isa::Dtype::kBf16;
  l.k = k, l.m = m, l.n = n;
  l.stationary_hbm = drv.alloc(s_size);
  l.moving_hbm = drv.alloc(m_size);
  l.out_hbm = drv.alloc(out_size);

  // Stage in by bus mastering: guest RAM -> HBM.
  std::vector<isa::CopyFields> in = kernels::dense_copies(MemSpace::kHost, s_buf.bus_addr, DataType::kBf16,
                                                          MemSpace::kHbm, l.stationary_hbm, DataType::kBf16,
                                                          s_size / 2);
  const auto in_m = kernels::dense_copies(MemSpace::kHost, m_buf.bus_addr, DataType::kBf16, MemSpace::kHbm,
                                          l.moving_hbm, DataType::kBf16, m_size / 2);
  in.insert(in.end(), in_m.begin(), in_m.end());
  drv.load_program(kernels::dma_program(info, in));
  const uint64_t in_cycles = drv.run(kTimeoutCycles).cycles;

  drv.load_program(kernels::make_gemm_program(info, l));
  const driver::RunResult gemm = drv.run(kTimeoutCycles);

  drv.load_program(kernels::dma_program(
      info, kernels::dense_copies(MemSpace::kHbm, l.out_hbm, DataType::kFp32, MemSpace::kHost, o_buf.bus_addr,
                                  DataType::kFp32, uint64_t(m) * n)));
  const uint64_t out_cycles = drv.run(kTimeoutCycles).cycles;
  fmt::print("guest: staged in {} cycles, gemm {} cycles, staged out {} cycles\n", in_cycles, gemm.cycles,
             out_cycles);
  for (int r = 0; r < m; ++r) {
    std::string line = fmt::format("guest: out {}", r);
    for (int c = 0; c < n; ++c) {
      uint32_t v;
      std::memcpy(&v, o_buf.data + (uint64_t(r) * n + c) * 4, 4);
      line += fmt::format(" {:08x}", v);
    }
    std::puts(line.c_str());
  }
  std::fflush(stdout);

  // A malformed program, through the module's own C interface: its second instruction copies past the end of HBM.
  isa::Instruction nop;
  nop.op = isa::Opcode::kNop;
  isa::Instruction copy;
  copy.op = isa::Opcode::kDmaCopy;
  copy.copy.src_type = copy.copy.dst_type = DataType::kFp32;
  copy.copy.src_space = copy.copy.dst_space = MemSpace::kHbm;
  copy.copy.src_addr = 0;
  copy.copy.dst_addr = info.hbm_bytes - 8;
  copy.copy.count = {16, 1, 1, 1};
  copy.copy.src_stride = copy.copy.dst_stride = {4, 0, 0, 0};
  std::vector<uint8_t> bad;
  for (const isa::Instruction& in : {nop, copy, isa::Instruction::halt()}) {
    const auto b = isa::encode(in);
    bad.insert(bad.end(), b.begin(), b.end());
  }
  if (!malformed_program_faults(dev, info, 0, drv.alloc(bad.size()), bad)) return 1;
  // The other cores: core 1 computes the same GEMM from the operands core 0 staged (HBM is the chip's).
  const uint32_t cores = dev.read_reg(regs::CHIP_CORES);
  fmt::print("guest: CHIP_CORES = {}\n", cores);
  if (cores > 1) {
    driver::CoreDevice core1(dev, 1);
    driver::Driver drv1(core1, driver::chip_regions(info.hbm_bytes, cores).at(1));
    kernels::GemmLayout l1 = l;
    l1.out_hbm = drv1.alloc(out_size);
    drv1.load_program(kernels::make_gemm_program(drv1.info(), l1));
    const driver::RunResult r1 = drv1.run(kTimeoutCycles);
    std::vector<uint8_t> out0(out_size), out1(out_size);
    drv.read_hbm(l.out_hbm, out0.data(), out_size);
    drv1.read_hbm(l1.out_hbm, out1.data(), out_size);
    const bool same = out0 == out1;
    fmt::print("guest: core 1 of {}: gemm {} cycles (core {} registers at {:#x}), output {} core 0's\n", cores,
               r1.cycles, drv1.info().core, regs::CORE_STRIDE, same ? "identical to" : "DIFFERENT from");
    if (!same) {
      fmt::print("guest: FAIL: core 1's GEMM differs from core 0's\n");
      return 1;
    }
    // The module's own ioctls on core 1: the malformed program must stop core 1 with the same fault.
    if (!malformed_program_faults(dev, info, 1, drv1.alloc(bad.size()), bad)) return 1;
  }
  fmt::print("guest: PASS: a {}x{}x{} BF16 GEMM through /dev/trn0{} and the malformed program's fault\n", k, m, n,
             cores > 1 ? " on cores 0 and 1 (each)" : "");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s K M N STATIONARY.bin MOVING.bin\n", argv[0]);
    return 2;
  }
  const int k = std::atoi(argv[1]), m = std::atoi(argv[2]), n = std::atoi(argv[3]);
  try {
    const std::vector<uint8_t> s = read_file(argv[4]), mv = read_file(argv[5]);
    if (k < 1 || m < 1 || n < 1 || s.size() != size_t(k) * m * 2 || mv.size() != size_t(k) * n * 2) {
      fmt::print("guest: FAIL: K={} M={} N={} do not match the files ({} and {} bytes)\n", k, m, n, s.size(),
                 mv.size());
      return 2;
    }
    return run(k, m, n, s, mv);
  } catch (const std::exception& e) {
    fmt::print("guest: FAIL: {}\n", e.what());
    return 1;
  }
}
