// The regression runner (scripts/regress -> trnsim_regress) on tiny lists of a stand-in test binary
// (fake_regress_test.cpp): table and summary, JUnit XML (well-formed, element counts), an injected failure and its
// re-run command (which, run as printed, fails again), crash and timeout, interruption, bad usage (exit 2, one
// line), seeds, the Slurm array and merge scripts (one task run locally), and the real lists file.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/regress/regress_test_util.h"
#include "tests/regress/xml_check.h"

namespace trnsim::regress_test {
namespace {

namespace fs = std::filesystem;

const std::string kRunner = std::string("'") + REGRESS_RUNNER + "'";
const std::string kBinDir = REGRESS_BIN_DIR;

const char* kTinyLists = R"(# two tests, three seeds
list tiny seeds=3
list other seeds=1
list wavy seeds=1
list skips seeds=2
fake_pass     tiny   fake_regress_test  Fake.Passes
fake_seeded   tiny   fake_regress_test  Fake.FailsOnSeed
fake_crash    other  fake_regress_test  Fake.CrashesOnSeed
fake_hang     other  fake_regress_test  Fake.HangsOnSeed    timeout=3
fake_wave     wavy   fake_regress_test  Fake.ProvokesAnError:Fake.FailsOnSeed    wave
fake_skip     skips  fake_regress_test  Fake.Skips
)";

// The runner with a tiny lists file in this test's scratch directory, logs under it.
std::string runner(const std::string& lists_text = kTinyLists) {
  const std::string dir = scratch_dir();
  const std::string lists = write(dir + "/lists.txt", lists_text);
  return kRunner + " --lists '" + lists + "' --bin-dir '" + kBinDir + "' --out '" + dir + "/runs'";
}

// The attribute `name` of the first <tag ...> in `xml`.
std::string attr_of(const std::string& xml, const std::string& tag, const std::string& name) {
  const size_t p = xml.find("<" + tag + " ");
  if (p == std::string::npos) return "";
  const std::string t = xml.substr(p, xml.find('>', p) - p);
  const size_t a = t.find(" " + name + "=\"");
  if (a == std::string::npos) return "";
  const size_t b = a + name.size() + 3;
  return t.substr(b, t.find('"', b) - b);
}

// Table rows ("  3/6  fake_seeded  4242  FAIL  0.0 s") of the runner's output.
std::vector<std::string> rows(const std::string& out) {
  std::vector<std::string> r;
  static const std::regex row(R"(^\s+\d+/\d+\s+\S+\s+\d+\s+(PASS|FAIL|TIMEOUT|CRASH|SKIP|ERROR)\s+.*s$)");
  for (const std::string& l : lines_of(out))
    if (std::regex_match(l, row)) r.push_back(l);
  return r;
}

std::vector<std::string> rows_with(const std::string& out, const std::string& a, const std::string& b) {
  std::vector<std::string> r;
  for (const std::string& l : rows(out))
    if (l.find(a) != std::string::npos && l.find(b) != std::string::npos) r.push_back(l);
  return r;
}

// The commands after "re-run: " in the runner's output, each once.
std::set<std::string> rerun_commands(const std::string& out) {
  std::set<std::string> cmds;
  for (const std::string& l : lines_of(out)) {
    const size_t p = l.find("re-run: ");
    if (p != std::string::npos) cmds.insert(l.substr(p + 8));
  }
  return cmds;
}

TEST(RegressRunner, TinyListPassesAndWritesValidJunit) {
  const std::string junit = scratch_dir() + "/junit.xml";
  const Result r = sh(runner() + " --list tiny --seed 7 -j 2 --junit '" + junit + "'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(rows(r.out).size(), 6u) << r.out;
  EXPECT_EQ(rows_with(r.out, "fake_pass", "PASS").size(), 3u) << r.out;
  EXPECT_EQ(rows_with(r.out, "fake_seeded", "PASS").size(), 3u) << r.out;
  EXPECT_EQ(rows_with(r.out, " 7 ", "PASS").size(), 2u) << "seed 0 is the base seed, for both tests\n" << r.out;
  EXPECT_NE(r.out.find("tiny: 6 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("6 passed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("re-run"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");

  const std::string xml = slurp(junit);
  const XmlCheck x = check_xml(xml);
  ASSERT_EQ(x.error, "") << xml;
  EXPECT_EQ(x.root, "testsuites");
  EXPECT_EQ(x.count.at("testsuites"), 1);
  EXPECT_EQ(x.count.at("testsuite"), 2);
  EXPECT_EQ(x.count.at("testcase"), 6);
  EXPECT_EQ(x.count.count("failure"), 0u);
  EXPECT_EQ(x.count.count("error"), 0u);
  EXPECT_EQ(attr_of(xml, "testsuites", "tests"), "6");
  EXPECT_EQ(attr_of(xml, "testsuites", "failures"), "0");
  EXPECT_EQ(attr_of(xml, "testsuites", "errors"), "0");
  EXPECT_EQ(attr_of(xml, "testsuite", "name"), "fake_pass");
  EXPECT_EQ(attr_of(xml, "testsuite", "tests"), "3");
  EXPECT_EQ(attr_of(xml, "testcase", "name"), "seed=7");
  EXPECT_EQ(attr_of(xml, "testcase", "classname"), "tiny.fake_pass");
}

TEST(RegressRunner, InjectedFailureIsReportedWithTheCommandThatReproducesIt) {
  const std::string junit = scratch_dir() + "/junit.xml";
  const Result r = sh(runner() + " --list tiny --seed 4242 -j 2 --junit '" + junit + "'");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(rows(r.out).size(), 6u) << r.out;
  const auto failed = rows_with(r.out, "FAIL", "");
  ASSERT_EQ(failed.size(), 1u) << r.out;
  EXPECT_NE(failed[0].find("fake_seeded"), std::string::npos) << failed[0];
  EXPECT_NE(failed[0].find(" 4242 "), std::string::npos) << failed[0];
  EXPECT_NE(r.out.find("5 passed, 1 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failed: Fake.FailsOnSeed"), std::string::npos) << r.out;

  const std::set<std::string> cmds = rerun_commands(r.out);
  ASSERT_EQ(cmds.size(), 1u) << r.out;
  const std::string cmd = *cmds.begin();
  EXPECT_EQ(cmd.rfind("TRNSIM_SEED=4242 ", 0), 0u) << cmd;
  const std::string tail = "fake_regress_test --gtest_filter=Fake.FailsOnSeed";
  ASSERT_GE(cmd.size(), tail.size());
  EXPECT_EQ(cmd.substr(cmd.size() - tail.size()), tail) << cmd;
  // The summary repeats it under the failure.
  EXPECT_EQ(count(r.out, cmd), 2) << "under the row, and in the summary\n" << r.out;

  // Run as printed, it fails again on that seed only.
  const Result again = sh(cmd);
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("injected failure for seed 4242"), std::string::npos) << again.out;
  const Result other = sh(std::regex_replace(cmd, std::regex("^TRNSIM_SEED=4242"), "TRNSIM_SEED=4243"));
  EXPECT_EQ(other.exit_code, 0) << other.out;

  const std::string xml = slurp(junit);
  const XmlCheck x = check_xml(xml);
  ASSERT_EQ(x.error, "") << xml;
  EXPECT_EQ(x.count.at("testcase"), 6);
  EXPECT_EQ(x.count.at("failure"), 1);
  EXPECT_EQ(attr_of(xml, "testsuites", "failures"), "1");
  EXPECT_EQ(attr_of(xml, "failure", "type"), "FAIL");
  EXPECT_NE(attr_of(xml, "failure", "message").find("re-run: " + cmd), std::string::npos) << xml;
  EXPECT_NE(xml.find("injected failure for seed 4242"), std::string::npos) << "the test's output is in the failure";
  EXPECT_NE(xml.find("(UTF-8 \xC3\xA9, a stray byte ?, a control ?)"), std::string::npos)
      << "well-formed UTF-8 is kept, other bytes and control characters are replaced";
}

TEST(RegressRunner, CrashAndTimeoutAreErrorsNamingTheTestAndSignal) {
  const std::string junit = scratch_dir() + "/junit.xml";
  const Result r = sh("REGRESS_FAKE_CRASH_SEED=11 REGRESS_FAKE_HANG_SEED=11 " + runner() +
                      " --list other --seed 11 --seeds 2 -j 4 --junit '" + junit + "'");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(rows(r.out).size(), 4u) << r.out;
  EXPECT_EQ(rows_with(r.out, "fake_crash", "CRASH").size(), 1u) << r.out;
  EXPECT_EQ(rows_with(r.out, "fake_hang", "TIMEOUT").size(), 1u) << r.out;
  EXPECT_NE(r.out.find("killed by signal 6"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("timed out after 3 s in Fake.HangsOnSeed (killed)"), std::string::npos) << r.out;
  const auto cmds = rerun_commands(r.out);
  EXPECT_EQ(cmds.size(), 2u) << r.out;
  for (const std::string& c : cmds) EXPECT_EQ(c.rfind("TRNSIM_SEED=11 ", 0), 0u) << c;
  const std::string xml = slurp(junit);
  const XmlCheck x = check_xml(xml);
  ASSERT_EQ(x.error, "") << xml;
  EXPECT_EQ(attr_of(xml, "testsuites", "errors"), "2");
  EXPECT_EQ(attr_of(xml, "testsuites", "failures"), "0");
  EXPECT_EQ(x.count.at("error"), 2);
}

// The window is the failing test's own: Fake.ProvokesAnError printed another one before it and passed.
TEST(RegressRunner, WaveEntriesGetAWaveformInTheReRunCommandAndSkipsPass) {
  Result r = sh(runner() + " --list wavy --seed 4242");
  ASSERT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto cmds = rerun_commands(r.out);
  ASSERT_EQ(cmds.size(), 1u) << r.out;
  EXPECT_TRUE(std::regex_match(*cmds.begin(), std::regex(R"(TRNSIM_WAVE=\S+/fake_wave\.seed4242\.fst TRNSIM_WAVE_FROM=1034 TRNSIM_WAVE_TO=1254 TRNSIM_SEED=4242 \S+ --gtest_filter='?Fake\.ProvokesAnError:Fake\.FailsOnSeed'?)")))
      << *cmds.begin();
  r = sh(runner() + " --list skips");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(rows_with(r.out, "fake_skip", "SKIP").size(), 2u) << r.out;
}

TEST(RegressRunner, InterruptStopsTheRunningTestsAndReportsThem) {
  const std::string dir = scratch_dir();
  const std::string pid_file = dir + "/hang.pid", junit = dir + "/junit.xml";
  const Result r = sh("REGRESS_FAKE_HANG_SEED=3 REGRESS_FAKE_PID_FILE='" + pid_file + "' " + runner() +
                      " --list other --seed 3 --timeout 300 -j 1 --junit '" + junit +
                      "' & pid=$!; for i in $(seq 200); do [ -s '" + pid_file +
                      "' ] && break; sleep 0.05; done; kill -TERM $pid; wait $pid; echo rc=$?");
  EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("interrupted"), std::string::npos) << r.out;
  const int pid = std::atoi(slurp(pid_file).c_str());
  ASSERT_GT(pid, 0);
  errno = 0;
  EXPECT_EQ(kill(pid, 0), -1) << "the hanging test process " << pid << " is still there";
  EXPECT_EQ(errno, ESRCH);
  const std::string xml = slurp(junit);
  EXPECT_EQ(check_xml(xml).error, "") << xml;
  EXPECT_NE(xml.find("NOT RUN"), std::string::npos) << xml;
}

TEST(RegressRunner, AHangupStopsLikeATermAndAKilledRunnerTakesItsTestsWithIt) {
  // SIGHUP (the terminal closed): the same orderly stop as SIGTERM, JUnit written. SIGKILL (a CI job's limit) cannot
  // be handled: the kernel stops the test processes as the runner dies (PR_SET_PDEATHSIG), none is left running.
  for (const std::string sig : {"HUP", "KILL"}) {
    const std::string dir = scratch_dir() + "/" + sig;
    fs::create_directories(dir);
    const std::string pid_file = dir + "/hang.pid", junit = dir + "/junit.xml";
    const Result r = sh("REGRESS_FAKE_HANG_SEED=3 REGRESS_FAKE_PID_FILE='" + pid_file + "' " + runner() +
                        " --list other --seed 3 --timeout 300 -j 1 --junit '" + junit +
                        "' & pid=$!; for i in $(seq 200); do [ -s '" + pid_file +
                        "' ] && break; sleep 0.05; done; kill -" + sig + " $pid; wait $pid; echo rc=$?");
    const int pid = std::atoi(slurp(pid_file).c_str());
    ASSERT_GT(pid, 0) << sig << r.out << r.err;
    // Gone, or dead and not yet reaped by whoever inherited it (a zombie: state Z), within 5 s.
    const auto gone = [pid] {
      if (kill(pid, 0) == -1 && errno == ESRCH) return true;
      const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
      const size_t paren = stat.rfind(')');
      return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
    };
    bool stopped = false;
    for (int i = 0; i < 100 && !(stopped = gone()); ++i) usleep(50000);
    EXPECT_TRUE(stopped) << sig << ": the hanging test process " << pid << " is still running";
    if (sig == "HUP") {
      EXPECT_NE(r.out.find("rc=1"), std::string::npos) << r.out << r.err;
      EXPECT_NE(r.out.find("interrupted"), std::string::npos) << r.out;
      EXPECT_NE(slurp(junit).find("NOT RUN"), std::string::npos);
    }
  }
}

TEST(RegressRunner, AJunitPathItCannotWriteFailsBeforeAnyTestRuns) {
  // Under a regular file no directory can be made, not even by root (CI runs as root).
  const std::string file = write(scratch_dir() + "/a_file", "x");
  const Result r = sh(runner() + " --list tiny --seeds 1 --junit '" + file + "/junit.xml'");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.out, "") << "no test ran";
  EXPECT_NE(r.err.find("--junit " + file + "/junit.xml: cannot create its directory " + file), std::string::npos)
      << r.err;
  const Result d = sh(runner() + " --list tiny --seeds 1 --junit '" + scratch_dir() + "'");
  EXPECT_EQ(d.exit_code, 2) << d.out << d.err;
  EXPECT_NE(d.err.find(": is a directory"), std::string::npos) << d.err;
}

TEST(RegressRunner, AJunitPathInADirectoryNotMadeYetGetsItsDirectory) {
  // As `make regress` asks: --junit BUILD/regress/LIST.xml before BUILD/regress exists.
  const std::string dir = scratch_dir() + "/not/made/yet";
  const Result r = sh(runner() + " --list tiny --seeds 1 --junit '" + dir + "/junit.xml'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(slurp(dir + "/junit.xml").find("<testsuites"), std::string::npos);
}

TEST(RegressRunner, BadUsageExitsTwoWithOneLineNamingTheCause) {
  const std::string dir = scratch_dir();
  const std::string r0 = runner();
  const std::string bad_bin = write(dir + "/bad_bin.txt", "list a\nt a no_such_test X.Y\n");
  const std::string bad_filter = write(dir + "/bad_filter.txt", "list a\nt a fake_regress_test Fake.NoSuchTest\n");
  const std::string bad_line = write(dir + "/bad_line.txt", "list a\nt a fake_regress_test\n");
  const std::string undeclared = write(dir + "/undeclared.txt", "list a\nt b fake_regress_test Fake.Passes\n");
  const std::string bad_option = write(dir + "/bad_option.txt", "list a\nt a fake_regress_test Fake.Passes timeout=x\n");
  const std::string with = kRunner + " --bin-dir '" + kBinDir + "' --lists ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {r0 + " --list nosuch", "unknown list 'nosuch' (lists in "},
      {r0 + " --frobnicate", "unknown option '--frobnicate'"},
      {r0 + " --list tiny --seeds 0", "--seeds 0: expected 1.."},
      {r0 + " --list tiny --seeds many", "--seeds many: expected a non-negative integer"},
      {r0 + " --list tiny -j", "-j needs a value"},
      {r0 + " --list tiny --chunk 2 --array-task 99", "--array-task 99: this list has tasks 0-3"},
      {r0 + " --list tiny --only nosuch", "--only nosuch: no such test in list 'tiny'"},
      {r0 + " stray", "unexpected argument 'stray'"},
      {kRunner + " frobnicate", "unknown command 'frobnicate'"},
      {kRunner + " merge " + dir, "merge needs --out FILE"},
      {kRunner + " --lists /nonexistent/lists.txt", "/nonexistent/lists.txt: cannot open the lists file"},
      {with + bad_bin + " --list a", "no_such_test: not found in "},
      {with + bad_filter + " --list a", "bad_filter.txt:2: filter 'Fake.NoSuchTest' selects no test of fake_regress_test"},
      {with + bad_line + " --list a", "bad_line.txt:2: expected: NAME LISTS BINARY GTEST_FILTER"},
      {with + undeclared + " --list a", "undeclared.txt:2: list 'b' is not declared"},
      {with + bad_option + " --list a", "bad_option.txt:2: unknown entry option 'timeout=x'"},
  };
  for (const auto& [cmd, want] : cases) {
    const Result q = sh(cmd);
    EXPECT_EQ(q.exit_code, 2) << cmd << "\n" << q.out << q.err;
    EXPECT_EQ(q.out, "") << cmd;
    EXPECT_EQ(count(q.err, "\n"), 1) << cmd << "\n" << q.err;
    EXPECT_EQ(q.err.rfind("trnsim_regress: ", 0), 0u) << q.err;
    EXPECT_NE(q.err.find(want), std::string::npos) << cmd << "\nwant: " << want << "\ngot:  " << q.err;
  }
}

TEST(RegressRunner, SeedsDeriveFromTheBaseSeedTheSameWayEveryTime) {
  const Result a = sh(runner() + " --list tiny --seed 99 --seeds 4 --dry-run");
  const Result b = sh(runner() + " --list tiny --seed 99 --seeds 4 --dry-run");
  const Result c = sh(runner() + " --list tiny --seed 100 --seeds 4 --dry-run");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  const auto lines = lines_of(a.out);
  ASSERT_EQ(lines.size(), 8u) << a.out;
  std::vector<std::string> seeds;
  for (const auto& l : lines) seeds.push_back(l.substr(l.find("seed=") + 5, l.find(':') - l.find("seed=") - 5));
  EXPECT_EQ(seeds[0], "99");
  EXPECT_EQ(std::set<std::string>(seeds.begin(), seeds.begin() + 4).size(), 4u) << a.out;
  EXPECT_EQ(std::vector<std::string>(seeds.begin(), seeds.begin() + 4),
            std::vector<std::string>(seeds.begin() + 4, seeds.end()))
      << "every test runs the same seeds";
  EXPECT_NE(lines[0].find("TRNSIM_SEED=99 "), std::string::npos) << lines[0];
}

TEST(RegressRunner, SlurmArrayScriptsRunOneTaskLocallyAndMergeTheJunitFiles) {
  const std::string dir = scratch_dir();
  const std::string sdir = dir + "/slurm";
  Result r = sh(runner() + " --list tiny --seed 4242 --seeds 5 --chunk 2 --slurm '" + sdir +
                "' --time 00:20:00 --partition debug");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("array 0-5"), std::string::npos) << r.out;
  const std::string array = slurp(sdir + "/regress.sbatch");
  const std::string merge = slurp(sdir + "/merge.sbatch");
  const std::string submit = slurp(sdir + "/submit.sh");
  EXPECT_EQ(array.rfind("#!/bin/bash\n", 0), 0u);
  // 2 tests x 5 seeds in chunks of 2 -> 3 chunks per test -> 6 tasks.
  EXPECT_NE(array.find("\n#SBATCH --array=0-5\n"), std::string::npos) << array;
  EXPECT_NE(array.find("\n#SBATCH --cpus-per-task=2\n"), std::string::npos) << array;
  EXPECT_NE(array.find("\n#SBATCH --time=00:20:00\n"), std::string::npos) << array;
  EXPECT_NE(array.find("\n#SBATCH --partition=debug\n"), std::string::npos) << array;
  EXPECT_NE(array.find("\n#SBATCH --output=" + fs::absolute(sdir).lexically_normal().string() +
                       "/logs/regress-%A_%a.out\n"),
            std::string::npos)
      << array;
  EXPECT_NE(array.find("--list tiny --seed 4242 --seeds 5 --chunk 2 --array-task \"$task\" -j \"${SLURM_CPUS_PER_TASK:-2}\""),
            std::string::npos)
      << array;
  EXPECT_NE(array.find("/junit/task-\"$task\".xml"), std::string::npos) << array;
  EXPECT_NE(merge.find("\n#SBATCH --output="), std::string::npos) << merge;
  EXPECT_NE(merge.find(" merge --expect 6 --out "), std::string::npos) << merge;
  EXPECT_NE(submit.find("sbatch --parsable regress.sbatch"), std::string::npos) << submit;
  EXPECT_NE(submit.find("sbatch --parsable --dependency=afterany:\"$array\" merge.sbatch"), std::string::npos) << submit;
  for (const char* f : {"/regress.sbatch", "/merge.sbatch", "/submit.sh"}) {
    EXPECT_EQ(sh("bash -n '" + sdir + f + "'").exit_code, 0) << f;
    EXPECT_TRUE((fs::status(sdir + f).permissions() & fs::perms::owner_exec) != fs::perms::none) << f;
  }
  EXPECT_TRUE(fs::is_directory(sdir + "/logs"));

  // Task 4 = second test (fake_seeded), second chunk = seed indices 2 and 3; run it as Slurm would.
  r = sh("SLURM_ARRAY_TASK_ID=4 SLURM_CPUS_PER_TASK=2 bash '" + sdir + "/regress.sbatch'");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(array task 4)"), std::string::npos) << r.out;
  const Result plan = sh(runner() + " --list tiny --seed 4242 --seeds 5 --dry-run");
  const auto planned = lines_of(plan.out);
  ASSERT_EQ(planned.size(), 10u);
  const std::string task4 = slurp(sdir + "/junit/task-4.xml");
  EXPECT_EQ(check_xml(task4).error, "") << task4;
  EXPECT_EQ(check_xml(task4).count["testcase"], 2);
  for (int i : {7, 8}) {  // fake_seeded, seed indices 2 and 3
    const std::string seed = planned[i].substr(planned[i].find("seed=") + 5, planned[i].find(':') - planned[i].find("seed=") - 5);
    EXPECT_NE(task4.find("name=\"seed=" + seed + "\""), std::string::npos) << seed << "\n" << task4;
  }

  // The merge names the five tasks that have not run.
  r = sh("bash '" + sdir + "/merge.sbatch'");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("(5 array task(s) wrote no file)"), std::string::npos) << r.out;
  std::string merged = slurp(sdir + "/junit.xml");
  EXPECT_EQ(check_xml(merged).error, "") << merged;
  EXPECT_EQ(attr_of(merged, "testsuites", "errors"), "5");

  // Every task run: 10 runs, the injected failure (fake_seeded seed 4242, task 3) with its re-run command.
  for (int t : {0, 1, 2, 3, 5}) sh("SLURM_ARRAY_TASK_ID=" + std::to_string(t) + " bash '" + sdir + "/regress.sbatch'");
  r = sh("bash '" + sdir + "/merge.sbatch'");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("10 runs, 1 failures, 0 errors"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fake_seeded seed=4242: failed: Fake.FailsOnSeed; re-run: TRNSIM_SEED=4242 "), std::string::npos)
      << r.out;
  merged = slurp(sdir + "/junit.xml");
  const XmlCheck x = check_xml(merged);
  ASSERT_EQ(x.error, "") << merged;
  EXPECT_EQ(x.count.at("testsuite"), 2) << "the chunks of one test merge into one testsuite";
  EXPECT_EQ(x.count.at("testcase"), 10);
  EXPECT_EQ(attr_of(merged, "testsuites", "tests"), "10");
  EXPECT_EQ(attr_of(merged, "testsuites", "failures"), "1");

  // --only: the tasks enumerate only the tests asked for, and the script passes --only on.
  r = sh(runner() + " --list tiny --seeds 5 --chunk 2 --only fake_seeded --slurm '" + dir + "/slurm3'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string only = slurp(dir + "/slurm3/regress.sbatch");
  EXPECT_NE(only.find("\n#SBATCH --array=0-2\n"), std::string::npos) << only;
  EXPECT_NE(only.find(" --only fake_seeded --chunk 2 "), std::string::npos) << only;
  r = sh("SLURM_ARRAY_TASK_ID=2 bash '" + dir + "/slurm3/regress.sbatch'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(rows_with(r.out, "fake_seeded", "PASS").size(), 1u) << "task 2 = the last seed of fake_seeded\n" << r.out;

  // Without --time: at most `chunk` seeds per task on as many CPUs, each bounded by its 600 s timeout, + 5 min.
  r = sh(runner() + " --list tiny --seeds 5 --chunk 2 --slurm '" + dir + "/slurm2'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(dir + "/slurm2/regress.sbatch").find("\n#SBATCH --time=00:15:00\n"), std::string::npos);
}

TEST(RegressRunner, TheProjectListsFileDeclaresSmokeFullAndLong) {
  const Result r = sh(kRunner + " lists");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* l : {"smoke (", "full (", "long ("}) EXPECT_NE(r.out.find(l), std::string::npos) << r.out;
  const Result t = sh(kRunner + " targets --list smoke");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_FALSE(t.out.empty());
}

TEST(RegressRunner, ScriptsRegressIsTheEntryPoint) {
  const std::string env = std::string("TRNSIM_BUILD_DIR='") + REGRESS_BUILD_DIR + "' ";
  Result r = sh(env + "'" + REGRESS_SCRIPT + "' --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("usage: scripts/regress"), std::string::npos) << r.out;
  r = sh(env + "'" + REGRESS_SCRIPT + "' --list nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown list 'nosuch'"), std::string::npos) << r.err;
  r = sh("TRNSIM_BUILD_DIR=/nonexistent '" + std::string(REGRESS_SCRIPT) + "' --list smoke");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(count(r.err, "\n"), 1) << r.err;
}

}  // namespace
}  // namespace trnsim::regress_test
