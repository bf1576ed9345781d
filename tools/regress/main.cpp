// trnsim_regress: command line (scripts/regress is its entry point). Exit codes: 0 every run passed, 1 any run
// failed (or timed out, crashed, was interrupted), 2 bad usage (one line on stderr).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tools/regress/regress.h"

#ifndef TRNSIM_REGRESS_LISTS
#define TRNSIM_REGRESS_LISTS "tests/regress/lists.txt"
#endif

namespace trnsim::regress {
namespace {

namespace fs = std::filesystem;

const char* kUsage = R"(usage: scripts/regress [options]                 run a regression list, seeded, in parallel
       scripts/regress --slurm DIR [options]       write it as a Slurm array job instead (regress.sbatch,
                                                   merge.sbatch, submit.sh in DIR)
       scripts/regress merge --out FILE [--expect N] JUNIT_FILE_OR_DIR...
                                                   merge JUnit files (DIR: its *.xml, or task-0..N-1.xml)
       scripts/regress lists                       the lists and their tests
       scripts/regress targets [--list NAME]       the test binaries a list needs (to build them)

options:
  --list NAME       smoke (default), full, long, or any list of the lists file
  --seed BASE       base seed (default 1); seed 0 of each test is BASE itself, the others derive from it
  --seeds N         seeds per test (default: the list's seeds=)
  -j, --jobs N      runs at a time (default: the CPUs this process may use)
  --junit FILE      write JUnit XML (Jenkins, GitLab)
  --out DIR         one log per run (default: BIN_DIR/../regress/LIST)
  --only A,B        only these tests of the list
  --timeout S       per-run limit in seconds for every test (default: each test's timeout=, else 600)
  --dry-run         print the runs and their commands, run nothing
  --lists FILE      lists file (default: tests/regress/lists.txt of the source tree)
  --bin-dir DIR     where the test binaries are (default: the directory of this runner)
  --chunk C --array-task I   run only Slurm array task I: test x chunk of C seeds (what regress.sbatch does)
  --cpus-per-task N, --time T, --partition P, --account A   with --slurm (defaults: N = chunk, T from timeouts)
Each run gets its seed as TRNSIM_SEED; a failure prints the one command that re-runs that seed.
Exit codes: 0 all passed, 1 any failure, 2 bad usage.
)";

struct Args {
  std::string cmd = "run";
  std::map<std::string, std::string> opt;
  std::set<std::string> flags;
  std::vector<std::string> positional;
};

Args parse(int argc, char** argv) {
  static const std::set<std::string> with_value = {
      "--list",  "--seed",          "--seeds", "-j",        "--jobs",      "--junit",   "--out",
      "--only",  "--timeout",       "--lists", "--bin-dir", "--chunk",     "--array-task", "--slurm",
      "--time",  "--cpus-per-task", "--partition", "--account", "--expect"};
  static const std::set<std::string> flags = {"--dry-run", "--help", "-h"};
  Args a;
  int i = 1;
  if (argc > 1 && argv[1][0] != '-') {
    a.cmd = argv[1];
    if (a.cmd != "run" && a.cmd != "merge" && a.cmd != "lists" && a.cmd != "targets")
      throw UsageError("unknown command '" + a.cmd + "' (expected run, merge, lists, targets; --help)");
    i = 2;
  }
  for (; i < argc; ++i) {
    std::string w = argv[i];
    std::string value;
    bool has_value = false;
    if (w.rfind("--", 0) == 0 && w.find('=') != std::string::npos) {
      value = w.substr(w.find('=') + 1);
      w = w.substr(0, w.find('='));
      has_value = true;
    }
    if (flags.count(w)) {
      if (has_value) throw UsageError(w + " takes no value");
      a.flags.insert(w);
    } else if (with_value.count(w)) {
      if (!has_value) {
        if (i + 1 >= argc) throw UsageError(w + " needs a value");
        value = argv[++i];
      }
      if (w == "-j") w = "--jobs";
      if (a.opt.count(w)) throw UsageError(w + " given twice");
      a.opt[w] = value;
    } else if (w.size() > 2 && w.rfind("-j", 0) == 0 && w[2] != '-') {
      a.opt["--jobs"] = w.substr(2);  // -j8
    } else if (!w.empty() && w[0] == '-') {
      throw UsageError("unknown option '" + w + "' (see --help)");
    } else {
      a.positional.push_back(w);
    }
  }
  return a;
}

uint64_t to_u64(const std::string& flag, const std::string& v) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || v.size() > 20)
    throw UsageError(flag + " " + v + ": expected a non-negative integer");
  try {
    return std::stoull(v);
  } catch (...) {
    throw UsageError(flag + " " + v + ": out of range");
  }
}

int to_positive(const std::string& flag, const std::string& v, int max = 1000000) {
  const uint64_t x = to_u64(flag, v);
  if (x < 1 || x > uint64_t(max)) throw UsageError(flag + " " + v + ": expected 1.." + std::to_string(max));
  return int(x);
}

int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

std::string self_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

std::string absolute(const std::string& p) { return fs::absolute(p).lexically_normal().string(); }

std::string get(const Args& a, const std::string& k, const std::string& def = "") {
  auto it = a.opt.find(k);
  return it == a.opt.end() ? def : it->second;
}

void only_options(const Args& a, const std::set<std::string>& allowed) {
  for (const auto& [k, v] : a.opt)
    if (!allowed.count(k)) throw UsageError(k + " does not apply to '" + a.cmd + "'");
}

// Runs `bin --gtest_list_tests --gtest_filter=F`; returns how many tests the filter selects, -1 if it failed.
int count_matching(const std::string& bin, const std::string& filter) {
  const std::string cmd = shell_quote(bin) + " --gtest_list_tests " + shell_quote("--gtest_filter=" + filter) +
                          " 2>/dev/null </dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  int n = 0;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) {
    if (buf[0] == ' ' && buf[1] == ' ' && buf[2] != ' ' && buf[2] != '\n' && buf[2] != '\0') ++n;
  }
  const int st = pclose(p);
  return st == 0 ? n : -1;
}

// Every binary exists and every filter selects at least one test.
void check_entries(const std::vector<const Entry*>& entries, const std::string& bin_dir, const ListsFile& lf) {
  std::map<std::string, bool> seen;
  for (const Entry* e : entries) {
    const std::string bin = bin_dir + "/" + e->binary;
    if (!seen.count(bin)) {
      if (access(bin.c_str(), X_OK) != 0) {
        const std::string build = display_path(fs::path(bin_dir).parent_path().string());
        throw UsageError(e->binary + ": not found in " + display_path(bin_dir) + " (test '" + e->name +
                         "'; build it: cmake --build " + build + " --target " + e->binary + ")");
      }
      seen[bin] = true;
    }
    const int n = count_matching(bin, e->filter);
    if (n < 0) throw UsageError(e->binary + " --gtest_list_tests failed (test '" + e->name + "')");
    if (n == 0)
      throw UsageError(lf.path + ":" + std::to_string(e->line) + ": filter '" + e->filter + "' selects no test of " +
                       e->binary);
  }
}

int cmd_lists(const Args& a) {
  only_options(a, {"--lists"});
  const ListsFile lf = read_lists(get(a, "--lists", TRNSIM_REGRESS_LISTS));
  for (const ListDecl& l : lf.lists) {
    const auto es = lf.entries_of(l.name);
    std::printf("%s (%zu tests x %d seeds)\n", l.name.c_str(), es.size(), l.seeds);
    for (const Entry* e : es)
      std::printf("  %-28s %s --gtest_filter=%s\n", e->name.c_str(), e->binary.c_str(), e->filter.c_str());
  }
  return kExitPass;
}

const ListDecl& pick_list(const ListsFile& lf, const std::string& name) {
  const ListDecl* l = lf.find_list(name);
  if (!l) throw UsageError("unknown list '" + name + "' (lists in " + lf.path + ": " + lf.list_names() + ")");
  return *l;
}

int cmd_targets(const Args& a) {
  only_options(a, {"--lists", "--list"});
  const ListsFile lf = read_lists(get(a, "--lists", TRNSIM_REGRESS_LISTS));
  const ListDecl& l = pick_list(lf, get(a, "--list", "smoke"));
  std::set<std::string> done;
  for (const Entry* e : lf.entries_of(l.name))
    if (done.insert(e->binary).second) std::printf("%s\n", e->binary.c_str());
  return kExitPass;
}

int cmd_merge(const Args& a) {
  only_options(a, {"--out", "--expect"});
  const std::string out = get(a, "--out");
  if (out.empty()) throw UsageError("merge needs --out FILE");
  if (a.positional.empty()) throw UsageError("merge needs JUnit files or directories to merge");
  const int expect = a.opt.count("--expect") ? int(to_u64("--expect", get(a, "--expect"))) : -1;
  const MergeSummary s = merge_junit(a.positional, out, expect);
  std::printf("merged %d JUnit file(s) into %s: %d runs, %d failures, %d errors, %d skipped", s.files, out.c_str(),
              s.tests, s.failures, s.errors, s.skipped);
  if (s.missing) std::printf(" (%d array task(s) wrote no file)", s.missing);
  std::printf("\n");
  for (const std::string& f : s.failure_lines) std::printf("  %s\n", f.c_str());
  return s.failures + s.errors > 0 ? kExitFail : kExitPass;
}

int cmd_run(const Args& a) {
  if (!a.positional.empty()) throw UsageError("unexpected argument '" + a.positional[0] + "' (see --help)");
  if (a.opt.count("--expect")) throw UsageError("--expect applies only to merge");
  const ListsFile lf = read_lists(get(a, "--lists", TRNSIM_REGRESS_LISTS));
  const ListDecl& list = pick_list(lf, get(a, "--list", "smoke"));
  std::vector<const Entry*> entries = lf.entries_of(list.name);
  if (a.opt.count("--only")) {
    std::vector<const Entry*> picked;
    std::string only = get(a, "--only") + ",";
    for (size_t p; (p = only.find(',')) != std::string::npos; only.erase(0, p + 1)) {
      const std::string n = only.substr(0, p);
      if (n.empty()) continue;
      auto it = std::find_if(entries.begin(), entries.end(), [&](const Entry* e) { return e->name == n; });
      if (it == entries.end()) throw UsageError("--only " + n + ": no such test in list '" + list.name + "'");
      if (std::find(picked.begin(), picked.end(), *it) == picked.end()) picked.push_back(*it);
    }
    entries = picked;
  }
  if (entries.empty()) throw UsageError("list '" + list.name + "' has no tests");

  const uint64_t base = a.opt.count("--seed") ? to_u64("--seed", get(a, "--seed")) : 1;
  const int seeds = a.opt.count("--seeds") ? to_positive("--seeds", get(a, "--seeds")) : list.seeds;
  const int jobs = a.opt.count("--jobs") ? to_positive("--jobs", get(a, "--jobs"), 4096) : available_cpus();
  const int timeout = a.opt.count("--timeout") ? to_positive("--timeout", get(a, "--timeout")) : 0;
  const std::string bin_dir = absolute(get(a, "--bin-dir", self_dir()));
  const bool has_chunk = a.opt.count("--chunk"), has_task = a.opt.count("--array-task");
  const int chunk = has_chunk ? to_positive("--chunk", get(a, "--chunk")) : 4;
  const std::string slurm_dir = get(a, "--slurm");

  if (!slurm_dir.empty()) {
    if (has_task || a.flags.count("--dry-run") || a.opt.count("--junit"))
      throw UsageError("--slurm writes scripts; --array-task, --dry-run and --junit do not apply");
    check_entries(entries, bin_dir, lf);
    SlurmOptions so;
    so.dir = slurm_dir;
    so.runner = absolute(fs::read_symlink("/proc/self/exe").string());
    so.lists = absolute(lf.path);
    so.bin_dir = bin_dir;
    so.list = list.name;
    so.base_seed = base;
    so.seeds = seeds;
    so.chunk = chunk;
    so.cpus = a.opt.count("--cpus-per-task") ? to_positive("--cpus-per-task", get(a, "--cpus-per-task"), 4096) : 0;
    so.time = get(a, "--time");
    if (!so.time.empty() && so.time.find_first_not_of("0123456789:-") != std::string::npos)
      throw UsageError("--time " + so.time + ": expected a Slurm time such as 01:30:00 or 1-00:00:00");
    so.partition = get(a, "--partition");
    so.account = get(a, "--account");
    so.timeout_override_s = timeout;
    if (a.opt.count("--out")) so.out_dir = absolute(get(a, "--out"));
    so.only = get(a, "--only");
    const int tasks = write_slurm(so, entries);
    const std::string d = display_path(absolute(slurm_dir));
    std::printf("wrote %s/regress.sbatch (array 0-%d: %zu tests x %d seeds in chunks of %d), %s/merge.sbatch, "
                "%s/submit.sh\nsubmit with: %s/submit.sh   (JUnit: %s/junit.xml)\n",
                d.c_str(), tasks - 1, entries.size(), seeds, chunk, d.c_str(), d.c_str(), d.c_str(), d.c_str());
    if (tasks > 1000) std::printf("note: %d array tasks; clusters often limit arrays to 1001 (MaxArraySize): use a larger --chunk\n", tasks);
    return kExitPass;
  }
  for (const char* k : {"--cpus-per-task", "--time", "--partition", "--account"})
    if (a.opt.count(k)) throw UsageError(std::string(k) + " applies only with --slurm");

  int task = -1;
  if (has_task != has_chunk && has_task) throw UsageError("--array-task needs --chunk");
  if (has_task) {
    task = int(to_u64("--array-task", get(a, "--array-task")));
    const int tasks = count_tasks(entries.size(), seeds, chunk);
    if (task >= tasks)
      throw UsageError("--array-task " + std::to_string(task) + ": this list has tasks 0-" + std::to_string(tasks - 1));
  }
  std::vector<Run> runs = plan_runs(entries, base, seeds, has_task ? chunk : 0, task);
  std::vector<const Entry*> used;
  for (const Run& r : runs)
    if (std::find(used.begin(), used.end(), r.entry) == used.end()) used.push_back(r.entry);
  check_entries(used, bin_dir, lf);

  RunOptions ro;
  ro.list = list.name;
  ro.bin_dir = bin_dir;
  ro.out_dir = absolute(get(a, "--out", (fs::path(bin_dir).parent_path() / "regress" / list.name).string()));
  ro.jobs = jobs;
  ro.timeout_override_s = timeout;

  if (a.flags.count("--dry-run")) {
    for (const Run& r : runs) {
      std::printf("%s seed=%llu: TRNSIM_SEED=%llu %s --gtest_filter=%s\n", r.entry->name.c_str(),
                  static_cast<unsigned long long>(r.seed), static_cast<unsigned long long>(r.seed),
                  shell_quote(display_path(bin_dir + "/" + r.entry->binary)).c_str(),
                  shell_quote(r.entry->filter).c_str());
    }
    return kExitPass;
  }

  // A report it cannot write fails now, not after the whole list has run.
  if (a.opt.count("--junit")) check_output_file("--junit", get(a, "--junit"));

  std::printf("trnsim regress: list %s, %zu tests x %d seeds = %zu runs%s, base seed %llu, -j %d\n",
              list.name.c_str(), used.size(), seeds, runs.size(),
              task >= 0 ? (" (array task " + std::to_string(task) + ")").c_str() : "",
              static_cast<unsigned long long>(base), jobs);
  std::printf("logs in %s\n", display_path(ro.out_dir).c_str());
  std::fflush(stdout);
  const auto t0 = std::chrono::steady_clock::now();
  const bool complete = execute(runs, ro);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::map<Run::Status, int> count;
  double busy = 0.0;
  for (const Run& r : runs) {
    ++count[r.status];
    busy += r.seconds;
  }
  std::string tally;
  for (auto [st, word] : std::vector<std::pair<Run::Status, const char*>>{{Run::Status::kPass, "passed"},
                                                                         {Run::Status::kFail, "failed"},
                                                                         {Run::Status::kTimeout, "timed out"},
                                                                         {Run::Status::kCrash, "crashed"},
                                                                         {Run::Status::kError, "errors"},
                                                                         {Run::Status::kSkip, "skipped"},
                                                                         {Run::Status::kNotRun, "not run"}}) {
    if (count[st] || st == Run::Status::kPass)
      tally += (tally.empty() ? "" : ", ") + std::to_string(count[st]) + " " + word;
  }
  std::printf("\n%s: %zu runs in %s (sum of run times %s, -j %d): %s\n", list.name.c_str(), runs.size(),
              format_duration(wall).c_str(), format_duration(busy).c_str(), jobs, tally.c_str());
  int failures = 0;
  for (const Run& r : runs) failures += is_failure(r.status);
  if (failures) {
    std::printf("%d run(s) did not pass; re-run each with the command below:\n", failures);
    for (const Run& r : runs) {
      if (!is_failure(r.status)) continue;
      std::printf("  %-7s %s seed %llu: %s\n          %s\n", status_name(r.status), r.entry->name.c_str(),
                  static_cast<unsigned long long>(r.seed), r.reason.c_str(), r.rerun.c_str());
      if (!r.log_path.empty() && r.status != Run::Status::kNotRun)
        std::printf("          log: %s\n", display_path(r.log_path).c_str());
    }
  }
  if (a.opt.count("--junit")) {
    JunitInfo ji;
    ji.suite_name = "trnsim-regress." + list.name + (task >= 0 ? ".task" + std::to_string(task) : "");
    ji.list = list.name;
    ji.base_seed = base;
    ji.wall_seconds = wall;
    write_junit(get(a, "--junit"), runs, ji);
    std::printf("JUnit: %s\n", display_path(absolute(get(a, "--junit"))).c_str());
  }
  if (!complete) std::printf("interrupted: not every run finished\n");
  std::fflush(stdout);
  return failures == 0 && complete ? kExitPass : kExitFail;
}

}  // namespace
}  // namespace trnsim::regress

int main(int argc, char** argv) {
  using namespace trnsim::regress;
  try {
    const Args a = parse(argc, argv);
    if (a.flags.count("--help") || a.flags.count("-h")) {
      std::fputs(kUsage, stdout);
      return kExitPass;
    }
    if (a.cmd == "lists") return cmd_lists(a);
    if (a.cmd == "targets") return cmd_targets(a);
    if (a.cmd == "merge") return cmd_merge(a);
    return cmd_run(a);
  } catch (const UsageError& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "trnsim_regress: %s\n", e.what());
    return kExitUsage;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "trnsim_regress: %s\n", e.what());
    return kExitUsage;
  }
}
