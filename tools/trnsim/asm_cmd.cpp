// `trnsim asm` and `trnsim disasm`: program text <-> binary program file (BRIEF section 4; formats: docs/isa.md).
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "firmware/isa/isa.h"
#include "tools/trnsim/commands.h"

namespace trnsim::tool {
namespace {

std::string read_file(const std::string& path) {
  check_input_file(path, path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput(fmt::format("{}: cannot open for reading", path));
  std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw BadInput(fmt::format("{}: read error", path));
  return data;
}

void write_file(const std::string& path, const std::string& option, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw BadInput(fmt::format("{} {}: cannot open for writing", option, path));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) throw BadInput(fmt::format("{} {}: write error", option, path));
}

struct Options {
  std::string input;
  std::string output;
};

int run_asm(const Options& opt) {
  const std::string text = read_file(opt.input);
  isa::Program program;
  try {
    program = isa::assemble(text);
  } catch (const isa::ProgramError& e) {
    throw BadInput(fmt::format("{}:{}", opt.input, e.what()));  // FILE:LINE:COL: reason
  }
  const std::vector<uint8_t> bin = isa::write_program_binary(program);
  write_file(opt.output, "-o", std::string(bin.begin(), bin.end()));
  std::string queues;  // every queue that has instructions, in queue order: "te 2 instructions, act 1 instruction, "
  for (int q = 0; q < isa::kNumQueues; ++q) {
    const auto e = static_cast<isa::Engine>(q);
    const size_t n = program.queue(e).size();
    if (n) queues += fmt::format("{} {} instruction{}, ", isa::engine_name(e), n, n == 1 ? "" : "s");
  }
  fmt::print("{}: {}{} bytes\n", opt.output, queues.empty() ? "no instructions, " : queues, bin.size());
  return kExitOk;
}

int run_disasm(const Options& opt) {
  const std::string data = read_file(opt.input);
  isa::Program program;
  try {
    program = isa::read_program_binary(std::vector<uint8_t>(data.begin(), data.end()));
  } catch (const isa::ProgramError& e) {
    throw BadInput(fmt::format("{}: {}", opt.input, e.what()));
  }
  const std::string text = isa::disassemble(program);
  if (opt.output.empty()) {
    fmt::print("{}", text);
  } else {
    write_file(opt.output, "-o", text);
  }
  return kExitOk;
}

}  // namespace

Action add_asm(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "asm",
      "Assemble program text (syntax: docs/isa.md) into a binary program file.\n"
      "Exit 0: written; 2: bad input (message names FILE:LINE:COL and the mnemonic, field or value).");
  auto opt = std::make_shared<Options>();
  sub->add_option("file", opt->input, "Program text (.s)")->required();
  sub->add_option("-o,--output", opt->output, "Binary program file to write (.bin)")->required();
  return [opt] { return run_asm(*opt); };
}

Action add_disasm(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "disasm",
      "Disassemble a binary program file into canonical program text (every field explicit), which\n"
      "'trnsim asm' turns back into the same bytes. Exit 0: done; 2: bad input (message names FILE, queue,\n"
      "instruction index and field).");
  auto opt = std::make_shared<Options>();
  sub->add_option("file", opt->input, "Binary program file (.bin)")->required();
  sub->add_option("-o,--output", opt->output, "Text file to write (default: stdout)");
  return [opt] { return run_disasm(*opt); };
}

}  // namespace trnsim::tool
