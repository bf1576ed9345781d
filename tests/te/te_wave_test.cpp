// Tensor Engine RTL: an FST of one matmul is written when asked, reads back with fst2vcd, and the generated
// GTKWave layout names only signals that exist in it.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/te/te_rtl.h"
#include "tests/support/fst_read.h"

namespace trnsim {
namespace {

namespace fs = std::filesystem;

TEST(TeWaveform, MatmulFstReadsBackWithFst2vcdAndLayoutMatches) {
  const fs::path dir = fs::path(::testing::TempDir()) / "trnsim_te_wave";
  fs::create_directories(dir);
  const fs::path fst = dir / "te_matmul.fst";
  const fs::path gtkw = dir / "te_matmul.gtkw";
  fs::remove(fst);
  {
    cosim::TeRtlOptions opts;
    opts.wave_path = fst.string();
    auto te = cosim::TeRtl::create(4, 4, opts);
    te->matmul(isa::Dtype::kBf16, 4, 4, 6, std::vector<uint16_t>(16, 0x3F80), std::vector<uint16_t>(24, 0x4000));
  }  // the engine closes the file
  ASSERT_TRUE(fs::exists(fst));
  EXPECT_GT(fs::file_size(fst), 200u);
  cosim::write_te_gtkw(gtkw.string(), fst.string(), 4, 4);

  const test::VcdDump dump = test::read_fst(fst.string());
  const std::string& vcd = dump.text;
  const std::set<std::string>& signals = dump.signals;
  ASSERT_FALSE(signals.empty()) << "fst2vcd printed:\n" << vcd.substr(0, 2000);
  EXPECT_TRUE(signals.count("TOP.trn_te.out_data_o")) << "top-level ports missing";
  EXPECT_TRUE(signals.count("TOP.trn_te.cmd_acc_i") && signals.count("TOP.trn_te.out_acc_o"))
      << "PSUM write-back mode ports missing";
  // Value changes after the header: the clock alone toggles twice a cycle.
  EXPECT_GT(std::count(vcd.begin(), vcd.end(), '#'), 40);

  // Every signal line of the layout ('+{alias} path' or a plain path) must exist in the dump.
  std::ifstream layout(gtkw);
  std::string line;
  int checked = 0;
  bool has_dumpfile = false;
  while (std::getline(layout, line)) {
    if (line.rfind("[dumpfile]", 0) == 0) has_dumpfile = line.find(fst.filename().string()) != std::string::npos;
    if (line.empty() || line[0] == '[' || line[0] == '@' || line[0] == '-' || line[0] == '*') continue;
    std::string path = line;
    if (path[0] == '+') path = path.substr(path.find('}') + 2);
    // 'a.g_row[0].sig[31:0]' -> 'a.g_row[0].sig': drop a trailing bit range only.
    const size_t range = path.rfind('[');
    const bool has_range = range != std::string::npos && path.find(':', range) != std::string::npos;
    const std::string base = has_range ? path.substr(0, range) : path;
    EXPECT_TRUE(signals.count(base)) << "layout names a signal that is not in the FST: " << path;
    ++checked;
  }
  EXPECT_TRUE(has_dumpfile);
  EXPECT_GT(checked, 20);
  // The PSUM write-back mode sits with its stream: cmd_acc_i in the Command stream, out_acc_o in the Result stream.
  std::ifstream again(gtkw);
  const std::string text((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
  const size_t cmd_group = text.find("-Command stream"), stat_group = text.find("-Stationary stream");
  const size_t out_group = text.find("-Result stream");
  const size_t cmd_acc = text.find("cmd_acc_i"), out_acc = text.find("out_acc_o");
  EXPECT_TRUE(cmd_group < cmd_acc && cmd_acc < stat_group) << text.substr(0, 3000);
  EXPECT_TRUE(out_group < out_acc && out_acc != std::string::npos) << text.substr(0, 3000);
}

}  // namespace
}  // namespace trnsim
