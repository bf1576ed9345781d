// trnsim: command-line entry point. Argument parsing, dispatch and exit codes only; the work is in the libraries.
#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "tools/trnsim/commands.h"

int main(int argc, char** argv) {
  using namespace trnsim::tool;
  CLI::App app{"trnsim: RTL-level model of a Trainium2-class accelerator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trnsim 0.1.0");

  std::map<const CLI::App*, Action> actions;
  for (const auto& add : {add_fpcheck, add_run, add_matmul, add_asm, add_disasm, add_noc}) {
    Action action = add(app);
    actions[app.get_subcommands({}).back()] = std::move(action);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // One line naming the problem, then exit 2 (usage error).
    fmt::print(stderr, "trnsim: {} (see 'trnsim --help')\n", e.what());
    return kExitBadInput;
  }

  try {
    for (const auto& [sub, action] : actions) {
      if (sub->parsed()) return action();
    }
  } catch (const BadInput& e) {
    fmt::print(stderr, "trnsim: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    fmt::print(stderr, "trnsim: error: {}\n", e.what());
    return kExitBadInput;
  }
  return kExitBadInput;
}
