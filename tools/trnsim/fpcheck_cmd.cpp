// STUB (being written): `trnsim fpcheck`.
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
Action add_fpcheck(CLI::App& app) {
  app.add_subcommand("fpcheck", "Run TestFloat vectors through the FP units");
  return [] { return kExitFail; };
}
}  // namespace trnsim::tool
