// The Linux driver end to end (label qemu): a QEMU guest (Debian's kernel, TCG) loads this project's module
// (firmware/linux/trn/trn.ko), and trn_guest_gemm runs a BF16 GEMM through /dev/trn0 with the project's Driver and
// GEMM kernel, its operands staged in and the result out of guest RAM by the device's bus-master DMA, on the device
// `trnsim serve --qemu` simulates; then a malformed program, loaded and run with the module's ioctls, must end in EIO
// with HBM_RANGE at its instruction 1, field dst_addr. The host
// compares the printed result with the golden GEMM, bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "firmware/driver/driver.h"
#include "firmware/golden/gemm_golden.h"
#include "tests/driver/backends.h"
#include "tests/support/child_process.h"
#include "tests/pcie/guest_support.h"
#include "tests/support/test_seed.h"
#include "tests/te/te_test_util.h"

namespace trnsim::test {
namespace {

/// A tensor of narrow patterns as the device stores it (driver::pack_elements), in a file for the guest.
void write_tensor_file(const std::string& path, const std::vector<uint16_t>& v) {
  const std::vector<uint8_t> bytes =
      driver::pack_elements(std::vector<uint32_t>(v.begin(), v.end()), isa::DataType::kBf16);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void run_guest(const std::string& te, int k, int m, int n) {
  const std::string missing =
      missing_guest_packages() + (std::string(TRNSIM_LINUX_MODULE).empty() ? " linux-headers-amd64" : "");
  if (!missing.empty()) GTEST_SKIP() << "needs Debian packages:" << missing << " (make deps installs them)";
  TempDir dir;
  std::mt19937_64 rng(test_seed());
  golden::GemmOperands ops;
  ops.dtype = isa::Dtype::kBf16;
  ops.k = k, ops.m = m, ops.n = n;
  ops.stationary = random_tensor(ops.dtype, std::size_t(k) * m, rng);
  ops.moving = random_tensor(ops.dtype, std::size_t(k) * n, rng);
  write_tensor_file(dir.path() + "/stationary.bin", ops.stationary);
  write_tensor_file(dir.path() + "/moving.bin", ops.moving);
  std::ofstream(dir.path() + "/gemm.args") << k << " " << m << " " << n << "\n";
  const std::string initrd = dir.path() + "/initrd.gz";
  ASSERT_EQ(make_initramfs(TRNSIM_SOURCE_DIR, initrd, "firmware/linux/guest/init",
                           {TRNSIM_LINUX_MODULE, TRNSIM_GUEST_BIN, dir.path() + "/stationary.bin",
                            dir.path() + "/moving.bin", dir.path() + "/gemm.args"}),
            "");

  const std::string sock = dir.path() + "/trn.sock";
  ServeProcess serve(TRNSIM_BIN, sock, "--config tiny --te " + te + " --once", dir.path() + "/serve.out",
                     dir.path() + "/serve.err", "--qemu");
  Proc guest(fmt::format("'{}' qemu --socket '{}' --initrd '{}' --kernel /boot/vmlinuz-{} --timeout-s 400",
                         TRNSIM_BIN, sock, initrd, TRNSIM_GUEST_KERNEL_VERSION),
             dir.path() + "/guest.out", dir.path() + "/guest.err");
  const int code = guest.wait(450);
  const std::string console = guest.out();
  std::istringstream lines(console);
  std::vector<uint32_t> got;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("guest: out ", 0) == 0) {
      std::istringstream words(line.substr(11));
      int row = -1;
      words >> row;
      EXPECT_EQ(row, int(got.size() / std::size_t(n))) << line;
      for (std::string hex; words >> hex;) got.push_back(uint32_t(std::stoul(hex, nullptr, 16)));
    } else if (line.rfind("guest:", 0) == 0) {
      std::cout << line << "\n";
    }
  }
  EXPECT_EQ(code, 0) << guest.err();
  EXPECT_NE(console.find("guest: module loaded: trnsim device"), std::string::npos) << console;
  EXPECT_NE(console.find("guest: fault hbm_range at queue dma, instruction 1 (errno Input/output error): dst_addr"),
            std::string::npos)
      << console;
  EXPECT_NE(console.find("guest: PASS"), std::string::npos) << console;
  // tiny has two NeuronCores: the module names them, and core 1 (its own register block, through the same /dev/trn0)
  // computes the same GEMM, bit for bit core 0's, which the golden checks below.
  EXPECT_NE(console.find("2 NeuronCore(s)"), std::string::npos) << console;
  EXPECT_NE(console.find("guest: CHIP_CORES = 2"), std::string::npos) << console;
  EXPECT_NE(console.find("guest: core 1 of 2: gemm"), std::string::npos) << console;
  EXPECT_NE(console.find("output identical to core 0's"), std::string::npos) << console;
  EXPECT_NE(console.find("guest: core 1 fault hbm_range at queue dma, instruction 1 (errno Input/output error)"),
            std::string::npos)
      << console;
  const std::vector<uint32_t> want = golden::gemm(ops, 16);
  ASSERT_EQ(got.size(), want.size()) << console;
  int shown = 0;
  for (std::size_t i = 0; i < want.size() && shown < 5; ++i) {
    if (got[i] != want[i]) {
      ADD_FAILURE() << fmt::format("out[{}][{}] = {:#010x}, golden {:#010x}", i / n, i % n, got[i], want[i]);
      ++shown;
    }
  }
  EXPECT_EQ(serve.proc().wait(30), 0) << serve.proc().err();
  EXPECT_NE(serve.proc().err().find("0 unsupported requests"), std::string::npos) << serve.proc().err();
}

TEST(QemuLinux, TheModuleRunsAGemmOnTheTlmDatapathBitExact) { run_guest("tlm", 40, 24, 72); }

TEST(QemuLinux, TheModuleRunsAGemmOnTheVerilatedTensorEngineBitExact) { run_guest("rtl", 33, 17, 40); }

}  // namespace
}  // namespace trnsim::test
