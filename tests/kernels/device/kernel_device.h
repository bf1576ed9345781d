// The device of the kernel tests, on either backend: built without TRNSIM_TEST_SERVED, the SystemC model in this
// process; built with TRNSIM_TEST_SERVED=1 (the *_served test binaries: the same sources), a `trnsim serve --once`
// child process (TRNSIM_BIN) reached through driver::RemoteDevice. One device per test process; each test gets a
// fresh Driver and a soft-reset device.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "firmware/driver/driver.h"
#include "spec/trn_regs.h"

#if TRNSIM_TEST_SERVED
#include "firmware/driver/remote_device.h"
#include "tests/support/child_process.h"
#else
#include "cosim/device/sim_device.h"
#include "model/config/chip_config.h"
#endif

namespace trnsim::test {

struct KernelDeviceSpec {
  const char* config = "tiny";
  bool checks = false;  ///< hazard and uninitialised-read checkers on
};

#if TRNSIM_TEST_SERVED
/// `trnsim serve --once` in a child process, and the client connected to it.
class ServedDevice {
 public:
  explicit ServedDevice(const KernelDeviceSpec& spec) : dir_(make_dir()) {
    server_ = std::make_unique<ServeProcess>(
        TRNSIM_BIN, dir_ + "/dev.sock",
        std::string("--once --quiet --te tlm --config ") + spec.config +
            (spec.checks ? " --check-hazards --check-uninit" : ""),
        dir_ + "/serve.out", dir_ + "/serve.err");
    remote_ = std::make_unique<driver::RemoteDevice>(server_->path());
  }
  ~ServedDevice() {
    remote_.reset();           // bye: the --once server exits
    server_->proc().wait(5);   // (killed by its destructor if it did not)
    server_.reset();
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  driver::Device& device() { return *remote_; }

 private:
  static std::string make_dir() {
    char tmpl[] = "/tmp/trnsim-kdev-XXXXXX";  // short enough for a socket path
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    return tmpl;
  }
  std::string dir_;
  std::unique_ptr<ServeProcess> server_;
  std::unique_ptr<driver::RemoteDevice> remote_;
};

inline driver::Device& kernel_device(const KernelDeviceSpec& spec) {
  static ServedDevice served(spec);
  return served.device();
}
#else
inline driver::Device& kernel_device(const KernelDeviceSpec& spec) {
  static const std::unique_ptr<cosim::SimDevice> dev = [&] {
    cosim::SimDeviceOptions o;
    o.te = cosim::TeMode::kTlm;
    o.check_hazards = spec.checks;
    o.check_uninit = spec.checks;
    return std::make_unique<cosim::SimDevice>(model::chip_config(spec.config), o);
  }();
  return *dev;
}
#endif

/// A fresh Driver on the process's soft-reset device.
class KernelDeviceTest : public ::testing::Test {
 protected:
  explicit KernelDeviceTest(KernelDeviceSpec spec = {}) : spec_(spec) {}
  void SetUp() override {
    dev_ = &kernel_device(spec_);
    dev_->write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);
    drv_ = std::make_unique<driver::Driver>(*dev_);
  }
  KernelDeviceSpec spec_;
  driver::Device* dev_ = nullptr;
  std::unique_ptr<driver::Driver> drv_;
};

}  // namespace trnsim::test
