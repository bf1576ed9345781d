// trnsim: command-line entry point. Argument parsing, dispatch and exit codes only; the work is in the libraries.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include "cosim/mpi/mpi_system.h"
#include "tools/trnsim/commands.h"

namespace {

/// An option given an empty value ("--report ''") is bad input, checked here once for every command: CLI11 takes
/// "" as a value, and the commands would read an empty name as "not given" and silently write nothing.
void check_no_empty_values(const CLI::App& cmd) {
  static const std::set<std::string> kFiles = {"--wave",   "--report", "--timeline",        "--program", "--vectors",
                                               "--stationary", "--moving", "--accumulate-into", "--out",
                                               "--output", "file", "--socket", "--connect", "socket"};
  static const std::set<std::string> kDirectories = {"--inputs", "--outputs"};
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->get_type_size() == 0 || opt->count() == 0) continue;  // flags take no value
    for (const std::string& value : opt->results()) {
      if (!value.empty()) continue;
      const std::string name = opt->get_name();
      const char* what = kFiles.count(name)         ? "file name"
                         : kDirectories.count(name) ? "directory name"
                         : name == "--wave-scope"   ? "hierarchy path"
                                                    : "value";
      throw trnsim::tool::BadInput(fmt::format("{}: empty {}", name, what));
    }
  }
}

/// An output of one command on the path of another output or of an input ("--out r.npy --timeline r.npy",
/// "asm p.s -o p.s") is bad input: the file written last would silently replace the other, or the input.
void check_distinct_outputs(const CLI::App& cmd) {
  static const std::set<std::string> kOutputs = {"--wave", "--report", "--timeline", "--out", "--output"};
  static const std::set<std::string> kInputs = {"--program", "--vectors", "--stationary", "--moving",
                                                "--accumulate-into", "file"};
  const auto resolve = [](const std::string& value) {
    std::error_code ec;
    const std::filesystem::path resolved = std::filesystem::weakly_canonical(value, ec);
    return ec ? value : resolved.string();
  };
  std::map<std::string, std::string> seen;  // path as the file system resolves it -> the option that gave it
  for (const bool outputs : {false, true}) {  // the inputs first, so that an output names the input it would replace
    for (const CLI::Option* opt : cmd.get_options()) {
      if (opt->count() == 0 || !(outputs ? kOutputs : kInputs).count(opt->get_name())) continue;
      for (const std::string& value : opt->results()) {
        const auto [it, fresh] = seen.emplace(resolve(value), opt->get_name());
        if (!fresh && outputs) {
          throw trnsim::tool::BadInput(fmt::format("{} {}: the same file as {}; give each output its own path",
                                                   opt->get_name(), value, it->second));
        }
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace trnsim::tool;
  // Started by mpirun / srun: MPI_Init here, MPI_Finalize on return (docs/distributed.md). Only rank 0 prints; the
  // other ranks' standard output is discarded and their errors are rank 0's too (every rank parses the same flags).
  trnsim::cosim::mpi::Session mpi(&argc, &argv);
  const bool quiet = mpi.rank() != 0;
  if (quiet && !std::freopen("/dev/null", "w", stdout)) return kExitBadInput;
  CLI::App app{"trnsim: RTL-level model of a Trainium2-class accelerator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "trnsim 0.1.0");

  std::map<const CLI::App*, Action> actions;
  for (const auto& add : {add_fpcheck, add_run, add_matmul, add_asm, add_disasm, add_noc, add_serve, add_attach, add_qemu}) {
    Action action = add(app);
    actions[app.get_subcommands({}).back()] = std::move(action);
  }

  // A first word that is no command: CLI11 would say only "A subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || sub->check_name(argv[1]);
    }
    if (!known) {
      if (!quiet) {
        fmt::print(stderr, "trnsim: error: unknown command '{}' (commands: {}; see 'trnsim --help')\n", argv[1],
                   names);
      }
      return kExitBadInput;
    }
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
    // One line naming the problem, then exit 2 (usage error), in the form of every other error.
    if (!quiet) fmt::print(stderr, "trnsim: error: {} (see 'trnsim --help')\n", e.what());
    return kExitBadInput;
  }

  try {
    for (const auto& [sub, action] : actions) {
      if (!sub->parsed()) continue;
      check_no_empty_values(*sub);
      check_distinct_outputs(*sub);
      if (mpi.ranks() > 1 && sub->get_name() != "run") {
        throw BadInput(fmt::format("trnsim {} runs in one process: only `trnsim run` of a collective workload "
                                   "splits over MPI ranks (start it without mpirun, or with -np 1)",
                                   sub->get_name()));
      }
      return action();
    }
  } catch (const BadInput& e) {
    if (!quiet) fmt::print(stderr, "trnsim: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    if (!quiet) fmt::print(stderr, "trnsim: error: {}\n", e.what());
    return kExitBadInput;
  }
  return kExitBadInput;
}
