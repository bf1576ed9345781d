// A real QEMU guest against the served device (label qemu): `trnsim serve --qemu` and `trnsim qemu` as a user runs
// them, Debian's kernel, an initramfs of busybox (firmware/linux/make-initramfs.sh) whose /init
// (firmware/linux/smoke/init) finds the PCI function, checks ID through BAR0, writes a DMA program and its input into
// HBM through the BAR2 window, starts it, polls STATUS and compares the device's copy with the input. The
// register offsets the guest uses come from spec/trn_regs.h (written into /trn.env here). Beside the guest, the
// server's second socket serves `trnsim attach` (and refuses a driver: the guest owns the device).
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "firmware/isa/isa.h"
#include "spec/trn_regs.h"
#include "tests/driver/backends.h"
#include "tests/pcie/guest_support.h"
#include "tests/support/child_process.h"
#include "tests/support/test_seed.h"

namespace trnsim::test {
namespace {

constexpr uint64_t kProgramAt = 0x0, kInputAt = 0x10000, kOutputAt = 0x20000, kDataBytes = 1024;

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

TEST(QemuGuest, ABusyboxGuestRunsADmaProgramThroughTheBars) {
  const std::string missing = missing_guest_packages();
  if (!missing.empty()) GTEST_SKIP() << "needs Debian packages:" << missing << " (make deps installs them)";
  TempDir dir;
  // The program: one dma_copy of the input to the output, FP32 to FP32, then halt.
  isa::Instruction copy;
  copy.op = isa::Opcode::kDmaCopy;
  copy.copy.src_type = copy.copy.dst_type = isa::DataType::kFp32;
  copy.copy.src_space = copy.copy.dst_space = isa::MemSpace::kHbm;
  copy.copy.src_addr = kInputAt;
  copy.copy.dst_addr = kOutputAt;
  copy.copy.count = {uint16_t(kDataBytes / 4), 1, 1, 1};
  copy.copy.src_stride = copy.copy.dst_stride = {4, 0, 0, 0};
  std::vector<uint8_t> program;
  for (const isa::Instruction& in : {copy, isa::Instruction::halt()}) {
    const auto b = isa::encode(in);
    program.insert(program.end(), b.begin(), b.end());
  }
  std::mt19937 rng{static_cast<uint32_t>(test_seed())};
  std::vector<uint8_t> input(kDataBytes);
  for (auto& b : input) b = uint8_t(rng());
  write_file(dir.path() + "/program.bin", program);
  write_file(dir.path() + "/input.bin", input);
  const uint32_t dma = uint32_t(isa::Engine::kDma);
  std::ofstream env(dir.path() + "/trn.env");
  env << fmt::format(
      "TRN_VENDOR=0x{:04x}\nTRN_DEVICE=0x{:04x}\nTRN_ID={}\nTRN_ID_VALUE={}\nTRN_TE_DIM={}\nTRN_STATUS={}\n"
      "TRN_STATUS_DONE={}\nTRN_STATUS_ERROR={}\nTRN_ERR_CODE={}\nTRN_CYCLE_LO={}\nTRN_DOORBELL={}\n"
      "TRN_DOORBELL_QUEUES={}\nTRN_Q_BASE_LO={}\nTRN_Q_BASE_HI={}\nTRN_Q_LEN={}\nTRN_PROGRAM_AT={}\n"
      "TRN_PROGRAM_LEN={}\nTRN_INPUT_AT={}\nTRN_OUTPUT_AT={}\nTRN_DATA_BYTES={}\n",
      regs::PCI_VENDOR_ID, regs::PCI_DEVICE_ID, regs::ID, regs::kIdValue, regs::TE_DIM, regs::STATUS,
      regs::STATUS_DONE_MASK, regs::STATUS_ERROR_MASK, regs::ERR_CODE, regs::CYCLE_LO, regs::DOORBELL, 1u << dma,
      regs::queue_reg(dma, regs::Q_BASE_LO), regs::queue_reg(dma, regs::Q_BASE_HI), regs::queue_reg(dma, regs::Q_LEN),
      kProgramAt, program.size() / isa::kInstrBytes, kInputAt, kOutputAt, kDataBytes);
  env.close();
  const std::string initrd = dir.path() + "/initrd.gz";
  ASSERT_EQ(make_initramfs(TRNSIM_SOURCE_DIR, initrd, "firmware/linux/smoke/init",
                           {dir.path() + "/trn.env", dir.path() + "/program.bin", dir.path() + "/input.bin"}),
            "");

  const std::string sock = dir.path() + "/trn.sock", attach_sock = dir.path() + "/attach.sock";
  ServeProcess serve(TRNSIM_BIN, sock, "--config tiny --te tlm --socket '" + attach_sock + "'",
                     dir.path() + "/serve.out", dir.path() + "/serve.err", "--qemu");
  Proc guest(fmt::format("'{}' qemu --socket '{}' --initrd '{}' --timeout-s 240", TRNSIM_BIN, sock, initrd),
             dir.path() + "/guest.out", dir.path() + "/guest.err");
  const int code = guest.wait(300);
  const std::string console = guest.out();
  std::cout << console << guest.err();
  EXPECT_EQ(code, 0) << "trnsim qemu: " << guest.err();
  EXPECT_NE(console.find("guest: trnsim at 0000:00:"), std::string::npos);
  EXPECT_NE(console.find("class 0x120000"), std::string::npos);
  EXPECT_NE(console.find(fmt::format("ID 0x{:08X}", regs::kIdValue)), std::string::npos);
  EXPECT_NE(console.find("guest: program done after"), std::string::npos);
  EXPECT_NE(console.find("guest: PASS: the device copied 1024 bytes in HBM"), std::string::npos);
  // Beside the guest: `trnsim attach` on the second socket sees what the guest's program left; a driver is refused.
  Proc look(fmt::format("'{}' attach '{}' --read STATUS --read 'Q_RETIRED[dma]'", TRNSIM_BIN,
                        attach_sock),
            dir.path() + "/attach.out", dir.path() + "/attach.err");
  EXPECT_EQ(look.wait(60), 0) << look.out() << look.err();
  // dma_copy and halt retired; STATUS.DONE
  EXPECT_NE(look.out().find(fmt::format("Q_RETIRED[{}]           0x00000002", dma)), std::string::npos) << look.out();
  EXPECT_NE(look.out().find(fmt::format("STATUS                 0x{:08x}", regs::STATUS_DONE_MASK)),
            std::string::npos)
      << look.out();
  Proc driver(fmt::format("'{}' run --connect '{}' --workload gpt2-mlp-up", TRNSIM_BIN, attach_sock),
              dir.path() + "/run.out", dir.path() + "/run.err");
  EXPECT_EQ(driver.wait(60), 2) << driver.out() << driver.err();
  EXPECT_NE(driver.err().find("device busy: a QEMU guest"), std::string::npos) << driver.err();
  serve.proc().signal(SIGTERM);
  EXPECT_EQ(serve.proc().wait(30), 0) << serve.proc().err();
  EXPECT_NE(serve.proc().err().find("QEMU connected"), std::string::npos) << serve.proc().err();
  EXPECT_NE(serve.proc().err().find("0 unsupported requests"), std::string::npos) << serve.proc().err();
}

}  // namespace
}  // namespace trnsim::test
