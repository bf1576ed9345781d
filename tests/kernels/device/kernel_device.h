// The device of the kernel tests, on either backend: built without TRNSIM_TEST_SERVED, the SystemC model in this
// process; built with TRNSIM_TEST_SERVED=1 (the *_served test binaries: the same sources), a `trnsim serve --once`
// child process (TRNSIM_BIN) reached through driver::RemoteDevice. One device per test process; each test gets a
// fresh Driver and a soft-reset device.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "firmware/driver/driver.h"
#include "spec/trn_regs.h"

#if TRNSIM_TEST_SERVED
#include "firmware/driver/remote_device.h"
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
  explicit ServedDevice(const KernelDeviceSpec& spec) {
    char tmpl[] = "/tmp/trnsim-kdev-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    const std::string sock = dir_ + "/dev.sock", out = dir_ + "/serve.out";
    std::string cmd = std::string("exec '") + TRNSIM_BIN + "' serve --once --quiet --te tlm --socket " + sock +
                      " --config " + spec.config + (spec.checks ? " --check-hazards --check-uninit" : "");
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      std::ifstream in(out);
      std::stringstream s;
      s << in.rdbuf();
      if (s.str().find("listening on " + sock) != std::string::npos) break;
      if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(60)) {
        throw std::runtime_error("trnsim serve did not come up: " + cmd);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    remote_ = std::make_unique<driver::RemoteDevice>(sock);
  }
  ~ServedDevice() {
    remote_.reset();  // bye: the --once server exits
    for (int i = 0; i < 500; ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  driver::Device& device() { return *remote_; }

 private:
  std::string dir_;
  pid_t pid_ = -1;
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
