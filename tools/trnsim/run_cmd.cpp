// STUB (being written): `trnsim run`.
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
Action add_run(CLI::App& app) {
  app.add_subcommand("run", "Run a workload on the simulated device and check it against golden kernels");
  return [] { return kExitFail; };
}
}  // namespace trnsim::tool
