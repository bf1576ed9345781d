// scripts/wave and its layout tool (tools/regress/wave_layout.cpp): the generated GTKWave layout of a Tensor Engine
// FST and of a NeuronLink torus FST groups the signals per block and names only signals in the file, and GTKWave
// renders the layout headless (Xvfb) to a PNG that is not blank. The render test skips, saying why, when the
// display tooling (xvfb-run, xauth, gtkwave) or a PNG reader (`convert`, ImageMagick) is missing.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cosim/noc/noc_rtl.h"
#include "cosim/noc/noc_traffic.h"
#include "cosim/te/te_rtl.h"

namespace trnsim {
namespace {

namespace fs = std::filesystem;

struct Output {
  int status = -1;
  std::string text;
};

Output run(const std::string& cmd) {
  Output o;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (!pipe) return o;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, pipe)) > 0) o.text.append(buf, got);
  const int st = pclose(pipe);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

fs::path temp_dir() {
  const fs::path dir = fs::path(::testing::TempDir()) / "trnsim_wave_layout";
  fs::create_directories(dir);
  return dir;
}

std::string wave_script(const fs::path& fst, const std::string& args) {
  return std::string("TRNSIM_BUILD_DIR='") + WAVE_BUILD_DIR + "' '" + WAVE_SCRIPT + "' '" + fst.string() + "' " + args;
}

fs::path te_fst() {
  const fs::path fst = temp_dir() / "te.fst";
  if (!fs::exists(fst)) {
    cosim::TeRtlOptions opts;
    opts.wave_path = fst.string();
    auto te = cosim::TeRtl::create(4, 4, opts);
    te->matmul(isa::Dtype::kBf16, 4, 4, 12, std::vector<uint16_t>(16, 0x3F80), std::vector<uint16_t>(48, 0x4000));
  }
  return fst;
}

// Group names ('-Name' after a group start) and signal lines of a .gtkw.
struct Layout {
  std::vector<std::string> groups;
  std::vector<std::string> signals;
};

Layout read_layout(const fs::path& gtkw) {
  Layout l;
  std::ifstream in(gtkw);
  std::string line, prev;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '-' && (prev == "@800200" || prev == "@c00200")) l.groups.push_back(line.substr(1));
    if (!line.empty() && line[0] != '[' && line[0] != '@' && line[0] != '-') l.signals.push_back(line);
    prev = line;
  }
  return l;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  for (const std::string& x : v)
    if (x == s) return true;
  return false;
}

TEST(WaveLayout, TensorEngineGroupsStreamsRowsAndColumns) {
  const fs::path fst = te_fst(), gtkw = temp_dir() / "te.gtkw";
  const Output o = run(wave_script(fst, "--layout-only --gtkw '" + gtkw.string() + "'"));
  ASSERT_EQ(o.status, 0) << o.text;
  const Layout l = read_layout(gtkw);
  for (const char* g : {"Control", "Command stream", "Stationary stream", "Moving stream", "Result stream",
                        "PE row 0 (partition 0)", "PE row 3 (partition 3)", "Output de-skew", "Column 3"}) {
    EXPECT_TRUE(has(l.groups, g)) << "no group " << g;
  }
  // Control comes first, clock first in it; streams before PE rows.
  ASSERT_FALSE(l.groups.empty());
  EXPECT_EQ(l.groups.front(), "Control");
  ASSERT_FALSE(l.signals.empty());
  EXPECT_EQ(l.signals.front(), "TOP.trn_te.clk_i");
  EXPECT_TRUE(has(l.signals, "TOP.trn_te.out_data_o[127:0]"));
  EXPECT_TRUE(has(l.signals, "TOP.trn_te.u_array.g_row[2].u_row.g_col[1].u_pe.psum_q[31:0]"));
}

TEST(WaveLayout, TorusGroupsRoutersPortsAndVcs) {
  const fs::path fst = temp_dir() / "noc.fst", gtkw = temp_dir() / "noc.gtkw";
  {
    cosim::noc::NocOptions o;
    o.ndim = 2;
    o.size = {2, 2, 1};
    o.wave_path = fst.string();
    cosim::noc::NocNetwork net(o);
    cosim::noc::TrafficOptions t;
    t.rate = 0.2;
    t.inject_cycles = 60;
    cosim::noc::run_traffic(net, t);
  }
  const Output o = run(wave_script(fst, "--layout-only --gtkw '" + gtkw.string() + "'"));
  ASSERT_EQ(o.status, 0) << o.text;
  const Layout l = read_layout(gtkw);
  for (const char* g : {"Router node_0_0", "Router node_1_1", "Local port and straps", "Links (every link port)",
                        "Input port 0 (local)", "Input port 4 (link 3)", "VC 1", "Link port 2 (credits, bring-up)"}) {
    EXPECT_TRUE(has(l.groups, g)) << "no group " << g;
  }
  EXPECT_EQ(l.groups.front(), "Router node_0_0");
}

TEST(WaveLayout, BadInputExitsTwoWithOneLine) {
  const Output missing = run(wave_script(temp_dir() / "none.fst", "--layout-only"));
  EXPECT_EQ(missing.status, 2);
  EXPECT_NE(missing.text.find("none.fst: no such file"), std::string::npos) << missing.text;
  const Output bad = run(wave_script(te_fst(), "--frobnicate"));
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.text.find("unknown option --frobnicate"), std::string::npos) << bad.text;
  // A file that is not an FST: the layout tool's error alone, no usage line after it.
  const fs::path junk = temp_dir() / "junk.fst";
  std::ofstream(junk) << "not a waveform\n";
  const Output not_fst = run(wave_script(junk, "--layout-only"));
  EXPECT_EQ(not_fst.status, 2);
  EXPECT_NE(not_fst.text.find("no signals in " + junk.string()), std::string::npos) << not_fst.text;
  EXPECT_EQ(not_fst.text.find("usage:"), std::string::npos) << not_fst.text;
  // --png into a directory that does not exist: refused naming it, nothing written elsewhere.
  fs::remove("/x-trnsim-wave-test.png");
  const Output png = run(wave_script(te_fst(), "--png /nonexistent/x-trnsim-wave-test.png"));
  EXPECT_EQ(png.status, 2) << png.text;
  EXPECT_NE(png.text.find("--png /nonexistent/x-trnsim-wave-test.png: no directory /nonexistent"), std::string::npos)
      << png.text;
  EXPECT_FALSE(fs::exists("/x-trnsim-wave-test.png"));
}

// Reads a binary PPM (P6) as `convert FILE.png ppm:-` prints it.
bool read_ppm(const std::string& data, int& w, int& h, std::vector<unsigned char>& rgb) {
  std::istringstream in(data);
  std::string magic;
  int maxval = 0;
  if (!(in >> magic >> w >> h >> maxval) || magic != "P6" || maxval != 255 || w <= 0 || h <= 0) return false;
  in.get();
  rgb.resize(static_cast<size_t>(w) * h * 3);
  in.read(reinterpret_cast<char*>(rgb.data()), static_cast<std::streamsize>(rgb.size()));
  return in.gcount() == static_cast<std::streamsize>(rgb.size());
}

TEST(WaveLayout, GtkwaveRendersTheLayoutHeadlessAndItIsNotBlank) {
  const fs::path png = temp_dir() / "te.png";
  fs::remove(png);
  const Output o = run(wave_script(te_fst(), "--gtkw '" + (temp_dir() / "te_render.gtkw").string() + "' --png '" +
                                                 png.string() + "'"));
  if (o.status == 3) GTEST_SKIP() << "no headless display tooling: " << o.text;
  ASSERT_EQ(o.status, 0) << o.text;
  ASSERT_TRUE(fs::exists(png));
  const Output ppm = run("convert '" + png.string() + "' ppm:- 2>/dev/null");
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;
  if (ppm.status != 0 || !read_ppm(ppm.text, w, h, rgb)) {
    GTEST_SKIP() << "cannot decode the PNG (needs ImageMagick's convert): " << ppm.text.substr(0, 200);
  }
  EXPECT_GE(w, 800);
  EXPECT_GE(h, 400);
  // Not blank: many colours (text, traces, grid), and a good share of pixels differ from the most common one.
  std::set<unsigned> colours;
  std::map<unsigned, size_t> count;
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) {
    const unsigned c = (unsigned{rgb[i]} << 16) | (unsigned{rgb[i + 1]} << 8) | rgb[i + 2];
    colours.insert(c);
    ++count[c];
  }
  size_t background = 0;
  for (const auto& [c, n] : count) background = std::max(background, n);
  const size_t pixels = rgb.size() / 3;
  EXPECT_GT(colours.size(), 16u) << "only " << colours.size() << " colours";
  EXPECT_GT(pixels - background, pixels / 20) << "fewer than 5% of the pixels differ from the background";
}

}  // namespace
}  // namespace trnsim
