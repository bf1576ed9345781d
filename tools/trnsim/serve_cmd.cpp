// `trnsim serve`: one simulated device in this process, served over a UNIX-domain socket (wire::DeviceServer,
// docs/driver.md "Wire protocol") to drivers in other processes (`trnsim run|matmul --connect PATH`) and debug
// clients (`trnsim attach PATH`).
#include <fmt/core.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "firmware/driver/device_server.h"
#include "model/config/chip_config.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/device_session.h"

namespace trnsim::tool {
namespace {

struct ServeOptions {
  DeviceFlags device;
  std::string socket;
  bool once = false;
  bool quiet = false;
  uint64_t window_mib = wire::kDefaultWindowBytes >> 20;
};

wire::DeviceServer* g_server = nullptr;  // the signal handler's target (one server per process)

extern "C" void on_stop_signal(int) {
  if (g_server != nullptr) g_server->stop();
}

int serve(const ServeOptions& o) {
  if (o.window_mib < 1 || o.window_mib > 4096) {
    throw BadInput(fmt::format("--window-mib {}: must be 1 .. 4096", o.window_mib));
  }
  try {
    if (model::chip_config(o.device.config).chips > 1) {
      throw BadInput(
          fmt::format("--config {}: `trnsim serve` serves one chip; multi-chip systems are not served yet "
                      "(docs/driver.md)",
                      o.device.config));
    }
  } catch (const std::invalid_argument& e) {
    throw BadInput(fmt::format("--config: {}", e.what()));
  }
  DeviceSession s = open_device(o.device);
  wire::DeviceServer::Options so;
  so.window_bytes = o.window_mib << 20;
  so.once = o.once;
  if (!o.quiet) so.log = [](const std::string& line) { fmt::print(stderr, "trnsim serve: {}\n", line); };
  std::unique_ptr<wire::DeviceServer> server;
  try {
    server = std::make_unique<wire::DeviceServer>(*s.device, o.socket, so);
  } catch (const wire::WireError& e) {
    throw BadInput(fmt::format("--socket {}", e.what()));
  }
  g_server = server.get();
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::signal(SIGPIPE, SIG_IGN);
  fmt::print("listening on {}\n", o.socket);
  fmt::print("  device {} ({}x{} Tensor Engine, {} datapath), shared window {} MiB{}\n", s.info().config_name,
             s.info().te_rows, s.info().te_cols, s.info().te_backend, o.window_mib,
             o.once ? ", one client (--once)" : "");
  std::fflush(stdout);
  server->serve();
  g_server = nullptr;
  server.reset();  // removes the socket file
  s.write_timeline();
  fmt::print("trnsim serve: stopped\n");
  return kExitOk;
}

}  // namespace

Action add_serve(CLI::App& app) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd =
      app.add_subcommand("serve", "Serve a simulated device over a UNIX-domain socket (for --connect and attach)");
  cmd->add_option("--socket", o->socket, "Socket path to listen on (a stale socket file there is replaced)")
      ->required();
  cmd->add_option("--config", o->device.config, "Machine configuration: tiny or trn2")->capture_default_str();
  cmd->add_option("--te", o->device.te, "Tensor Engine datapath: rtl, tlm or lockstep")->capture_default_str();
  cmd->add_option("--wave", o->device.wave, "Write an FST waveform of the RTL Tensor Engine (when the server stops)");
  add_wave_window_flags(*cmd, o->device);
  add_trace_flags(*cmd, o->device);
  cmd->add_flag("--once", o->once, "Stop when the first driver (owner) disconnects");
  cmd->add_flag("--quiet", o->quiet, "No connection log on stderr");
  cmd->add_option("--window-mib", o->window_mib, "Shared memory window per driver connection, MiB")
      ->check(kNonNegative)
      ->capture_default_str();
  return [o] { return serve(*o); };
}

}  // namespace trnsim::tool
