// `trnsim serve`: one simulated device in this process, served over a UNIX-domain socket (wire::DeviceServer,
// docs/driver.md "Wire protocol") to drivers in other processes (`trnsim run|matmul --connect PATH`) and debug
// clients (`trnsim attach PATH`); or a multi-chip system, chip r on socket PATH.r.
#include <fmt/core.h>

#include <csignal>
#include <functional>
#include <vector>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "cosim/device/sim_device.h"
#include "cosim/device/sim_system.h"
#include "cosim/pcie/qemu_server.h"
#include "firmware/driver/device_server.h"
#include "firmware/driver/serialized_device.h"
#include "model/config/chip_config.h"
#include "spec/trn_regs.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/device_session.h"

namespace trnsim::tool {
namespace {

struct ServeOptions {
  DeviceFlags device;
  std::string socket;
  std::string qemu;  ///< --qemu: the QEMU multi-process socket (then --socket, if given, serves attach only)
  bool once = false;
  bool quiet = false;
  uint64_t window_mib = wire::kDefaultWindowBytes >> 20;
};

wire::DeviceServer* g_server = nullptr;  // the signal handler's target (one server per process)
pcie::QemuServer* g_qemu = nullptr;

extern "C" void on_stop_signal(int) {
  if (g_server != nullptr) g_server->stop();
  if (g_qemu != nullptr) g_qemu->stop();
}

wire::DeviceServer::Options server_options(const ServeOptions& o) {
  wire::DeviceServer::Options so;
  so.window_bytes = o.window_mib << 20;
  so.once = o.once;
  if (!o.quiet) so.log = [](const std::string& line) { fmt::print(stderr, "trnsim serve: {}\n", line); };
  return so;
}

/// SIGINT and SIGTERM stop the servers (g_server, g_qemu); a client gone mid-write is an error, not a SIGPIPE.
void install_stop_signals() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);
}

/// Serves until SIGINT/SIGTERM (or --once); `ready` prints what is served once every socket listens.
void run_server(std::vector<wire::DeviceServer::Endpoint> endpoints, const ServeOptions& o,
                const std::function<void()>& ready) {
  std::unique_ptr<wire::DeviceServer> server;
  try {
    server = std::make_unique<wire::DeviceServer>(std::move(endpoints), server_options(o));
  } catch (const wire::WireError& e) {
    throw BadInput(fmt::format("--socket {}", e.what()));
  }
  g_server = server.get();
  install_stop_signals();
  ready();
  std::fflush(stdout);
  server->serve();
  g_server = nullptr;
}

/// A multi-chip system: chip r on PATH.r, the TLM datapath, the message-level link model (docs/driver.md).
int serve_system(const model::ChipConfig& cfg, const ServeOptions& o, const CLI::App& cmd) {
  for (const char* opt : {"--wave", "--wave-from", "--wave-to", "--wave-scope", "--timeline", "--check-hazards",
                          "--check-uninit"}) {
    if (cmd.count(opt) > 0) {
      throw BadInput(fmt::format("{} applies to a single-chip device; --config {} is a {}-chip system", opt,
                                 cfg.name, cfg.chips));
    }
  }
  if (cmd.count("--te") > 0 && o.device.te != "tlm") {
    throw BadInput(fmt::format("--te {}: a multi-chip system (--config {}) is served with the TLM datapath only "
                               "(--te tlm)", o.device.te, cfg.name));
  }
  cosim::SimSystem system(cfg);
  std::vector<wire::DeviceServer::Endpoint> endpoints;
  for (int r = 0; r < system.chips(); ++r) endpoints.push_back({&system.device(r), fmt::format("{}.{}", o.socket, r)});
  run_server(endpoints, o, [&] {
    fmt::print("listening on {}.0 .. {}.{} ({} chips of {}, chip r on {}.r)\n", o.socket, o.socket,
               system.chips() - 1, system.chips(), cfg.name, o.socket);
    fmt::print("  system {}: {} chips ({}x{} Tensor Engine each, tlm datapath, message-level link model), shared "
               "window {} MiB per owner{}\n", cfg.name, system.chips(), cfg.te_rows, cfg.te_cols, o.window_mib,
               o.once ? ", until the last owner leaves (--once)" : "");
  });
  fmt::print("trnsim serve: stopped\n");
  return kExitOk;
}

/// One device as the PCI function of a QEMU guest (docs/linux-driver.md); with --socket too, `trnsim attach` beside
/// the guest on that socket (a second thread; the device serialized between the two).
int serve_qemu(const ServeOptions& o) {
  DeviceSession s = open_device(o.device);
  driver::SerializedDevice shared(*s.device);
  pcie::QemuServer::Options qo;
  qo.once = o.once;
  if (!o.quiet) qo.log = [](const std::string& line) { fmt::print(stderr, "trnsim serve: {}\n", line); };
  std::unique_ptr<pcie::QemuServer> server;
  std::unique_ptr<wire::DeviceServer> attach;
  try {
    server = std::make_unique<pcie::QemuServer>(shared, o.qemu, qo);
  } catch (const wire::WireError& e) {
    throw BadInput(fmt::format("--qemu {}", e.what()));
  }
  if (!o.socket.empty()) {
    wire::DeviceServer::Options ao = server_options(o);
    ao.once = false;
    ao.owned_by = fmt::format("a QEMU guest (trnsim serve --qemu {})", o.qemu);
    try {
      attach = std::make_unique<wire::DeviceServer>(shared, o.socket, ao);
    } catch (const wire::WireError& e) {
      throw BadInput(fmt::format("--socket {}", e.what()));
    }
  }
  // Bus mastering: the model's DMA reaches the guest's RAM (space host) through the function.
  auto* sim = dynamic_cast<cosim::SimDevice*>(s.device.get());
  if (sim == nullptr) throw std::logic_error("serve --qemu: the device is not the in-process model");
  sim->attach_host_memory(&server->bus_master());
  g_qemu = server.get();
  g_server = attach.get();
  install_stop_signals();
  std::thread attach_thread;
  if (attach) attach_thread = std::thread([&] { attach->serve(); });
  fmt::print("listening on {} (QEMU x-pci-proxy-dev)\n", o.qemu);
  if (attach) fmt::print("listening on {} (trnsim attach beside the guest)\n", o.socket);
  fmt::print("  device {} ({}x{} Tensor Engine, {} datapath) as PCI function {:04x}:{:04x}{}\n", s.info().config_name,
             s.info().te_rows, s.info().te_cols, s.info().te_backend, regs::PCI_VENDOR_ID, regs::PCI_DEVICE_ID,
             o.once ? ", one guest (--once)" : "");
  std::fflush(stdout);
  server->serve();
  if (attach) {
    attach->stop();
    attach_thread.join();
  }
  g_qemu = nullptr;
  g_server = nullptr;
  sim->attach_host_memory(nullptr);
  s.write_timeline();
  fmt::print("trnsim serve: stopped\n");
  return kExitOk;
}

int serve(const ServeOptions& o, const CLI::App& cmd) {
  if (o.socket.empty() && o.qemu.empty()) {
    throw BadInput("give --socket PATH (the trnsim wire protocol) or --qemu PATH (a QEMU guest's PCI function; "
                   "with --socket too for `trnsim attach` beside the guest)");
  }
  if (o.window_mib < 1 || o.window_mib > 4096) {
    throw BadInput(fmt::format("--window-mib {}: must be 1 .. 4096", o.window_mib));
  }
  model::ChipConfig cfg;
  try {
    cfg = model::chip_config(o.device.config);
  } catch (const std::invalid_argument& e) {
    throw BadInput(fmt::format("--config: {}", e.what()));
  }
  if (cfg.chips > 1) {
    if (!o.qemu.empty()) {
      throw BadInput(fmt::format("--qemu serves one chip as one PCI function; --config {} is a {}-chip system",
                                 cfg.name, cfg.chips));
    }
    return serve_system(cfg, o, cmd);
  }
  if (!o.qemu.empty()) return serve_qemu(o);
  DeviceSession s = open_device(o.device);
  run_server({{s.device.get(), o.socket}}, o, [&] {
    fmt::print("listening on {}\n", o.socket);
    fmt::print("  device {} ({}x{} Tensor Engine, {} datapath), shared window {} MiB{}\n", s.info().config_name,
               s.info().te_rows, s.info().te_cols, s.info().te_backend, o.window_mib,
               o.once ? ", one client (--once)" : "");
  });
  s.write_timeline();
  fmt::print("trnsim serve: stopped\n");
  return kExitOk;
}

}  // namespace

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd =
      app.add_subcommand("serve", "Serve a simulated device over a UNIX-domain socket (for --connect and attach, or a "
                                  "QEMU guest with --qemu)");
  cmd->add_option("--socket", o->socket,
                  "Socket path to listen on for drivers (--connect) and attach (a stale socket file there is "
                  "replaced)");
  cmd->add_option("--qemu", o->qemu,
                  "Serve the device as the PCI function of a QEMU guest on this socket (QEMU's multi-process "
                  "protocol, -device x-pci-proxy-dev; docs/linux-driver.md); with --socket too, that socket serves "
                  "`trnsim attach` beside the guest");
  cmd->add_option("--config", o->device.config,
                  "Machine configuration: tiny, trn2 or trn3 (one socket), or a multi-chip system trn2-16, trn2-64 or "
                  "trn2-256 (one socket per chip: PATH.0, PATH.1, ...; TLM datapath)")
      ->capture_default_str();
  cmd->add_option("--te", o->device.te, "Tensor Engine datapath: rtl, tlm or lockstep")->capture_default_str();
  cmd->add_option("--wave", o->device.wave, "Write an FST waveform of the RTL Tensor Engine (when the server stops)");
  add_wave_window_flags(*cmd, o->device);
  add_trace_flags(*cmd, o->device);
  cmd->add_flag("--once", o->once, "Stop when the first driver (owner), or with --qemu the QEMU, disconnects");
  cmd->add_flag("--quiet", o->quiet, "No connection log on stderr");
  cmd->add_option("--window-mib", o->window_mib, "Shared memory window per driver connection, MiB")
      ->check(kNonNegative)
      ->capture_default_str();
  return [o, cmd] { return serve(*o, *cmd); };
}

}  // namespace trnsim::tool
