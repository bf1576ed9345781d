#include "tools/trnsim/device_session.h"

#include <algorithm>
#include <filesystem>

#include <fmt/core.h>
#include <fmt/format.h>

#include "cosim/te/te_rtl.h"
#include "model/mmio/trn_regs.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {

DeviceSession open_device(const DeviceFlags& flags) {
  DeviceSession s;
  try {
    s.config = model::chip_config(flags.config);
  } catch (const std::invalid_argument& e) {
    throw BadInput(fmt::format("--config: {}", e.what()));
  }
  if (s.config.chips > 1) {
    throw BadInput(fmt::format("--config {}: multi-chip systems ({} chips) are not modelled yet; use tiny or trn2",
                               flags.config, s.config.chips));
  }
  const auto mode = cosim::parse_te_mode(flags.te);
  if (!mode) throw BadInput(fmt::format("--te {}: unknown (rtl, tlm, lockstep)", flags.te));
  if (*mode != cosim::TeMode::kTlm) {
    const std::string size = fmt::format("{}x{}", s.config.te_rows, s.config.te_cols);
    const auto built = cosim::TeRtl::built_sizes();
    if (std::find(built.begin(), built.end(), size) == built.end()) {
      throw BadInput(fmt::format("--config {} needs a {} RTL Tensor Engine, which this build does not have (built: "
                                 "{}); use --te tlm, or build the large sizes with `make test-long`",
                                 flags.config, size, fmt::join(built, ", ")));
    }
  }
  if (!flags.wave.empty()) {
    if (*mode == cosim::TeMode::kTlm) {
      throw BadInput("--wave records the RTL Tensor Engine's signals: use it with --te rtl or --te lockstep");
    }
    if (std::filesystem::path(flags.wave).extension() != ".fst") {
      throw BadInput(fmt::format("--wave {}: waveforms are written as FST; give a file name ending in .fst",
                                 flags.wave));
    }
  }
  cosim::SimDeviceOptions o;
  o.te = *mode;
  o.wave_path = flags.wave;
  const auto rows = s.config.te_rows, cols = s.config.te_cols;
  o.progress = [rows, cols](const cosim::SimProgress& p) {
    const double util = p.cycles ? double(p.te_macs) / (double(p.cycles) * rows * cols) : 0.0;
    fmt::print(stderr, "  ... {} cycles simulated, {:.2f} G MACs, TE utilization so far {:.1f}%\n", p.cycles,
               double(p.te_macs) / 1e9, 100.0 * util);
  };
  try {
    s.device = std::make_unique<cosim::SimDevice>(s.config, o);
  } catch (const cosim::TeRtlError& e) {
    throw BadInput(fmt::format("--wave {}: {}", flags.wave, e.what()));
  }
  s.driver = std::make_unique<driver::Driver>(*s.device);
  return s;
}

int run_on_device(DeviceSession& session, const std::function<int()>& body) {
  try {
    return body();
  } catch (const driver::DeviceFault& e) {
    const std::string detail = session.device->fault_detail();
    if (e.code() == regs::ERR_ENGINE_FAULT) {
      fmt::print("FAIL: {}{}{}\n", e.what(), detail.empty() ? "" : ": ", detail);
      return kExitFail;
    }
    throw BadInput(fmt::format("{}{}{}", e.what(), detail.empty() ? "" : " (", detail.empty() ? "" : detail + ")"));
  } catch (const driver::DriverTimeout& e) {
    throw BadInput(e.what());
  }
}

}  // namespace trnsim::tool
