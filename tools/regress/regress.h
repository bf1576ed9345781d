// trnsim_regress: the seeded regression runner behind scripts/regress (docs/verification.md, "Regressions").
//
// A lists file (tests/regress/lists.txt) names randomized GoogleTest runs: a test binary and a --gtest_filter, and
// the lists (smoke, full, long, ...) each belongs to. The runner runs every entry of a list over N seeds derived from
// a base seed, in parallel, passing each seed as TRNSIM_SEED (tests/support/test_seed.h); it prints a row per run as
// it finishes, a summary, one re-run command per failure, and writes JUnit XML. It also writes Slurm array jobs for
// the same list and merges their JUnit files.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace trnsim::regress {

inline constexpr int kExitPass = 0;
inline constexpr int kExitFail = 1;
inline constexpr int kExitUsage = 2;

/// Bad usage or input (flag, lists file, list name, binary): one line on stderr, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One `list NAME seeds=N` line: a list and its default number of seeds per entry.
struct ListDecl {
  std::string name;
  int seeds = 1;
  int line = 0;
};

/// One entry line: NAME LISTS BINARY GTEST_FILTER [timeout=S] [wave].
struct Entry {
  std::string name;                ///< unique; the "test" column and the JUnit testsuite name
  std::vector<std::string> lists;  ///< lists it belongs to
  std::string binary;              ///< file name in the bin directory
  std::string filter;              ///< --gtest_filter
  int timeout_s = 600;             ///< per-run limit; the run is killed and reported as TIMEOUT
  bool wave = false;               ///< the test writes an FST when TRNSIM_WAVE=FILE.fst is set
  int line = 0;                    ///< line in the lists file (for messages)
};

struct ListsFile {
  std::string path;
  std::vector<ListDecl> lists;
  std::vector<Entry> entries;

  const ListDecl* find_list(const std::string& name) const;
  /// Entries of `list`, in file order.
  std::vector<const Entry*> entries_of(const std::string& list) const;
  std::string list_names() const;  ///< "smoke, full, long"
};

/// Reads and checks a lists file; throws UsageError naming FILE:LINE and the cause.
ListsFile read_lists(const std::string& path);

/// Seed i of a regression with base seed `base`: seed 0 is `base` itself (so `--seed S --seeds 1` runs exactly
/// seed S), the others are a splitmix64 mix of (base, i) cut to 32 bits, never 0.
uint64_t derive_seed(uint64_t base, int i);

/// One run: an entry with one seed.
struct Run {
  enum class Status { kPending, kPass, kFail, kTimeout, kCrash, kSkip, kError, kNotRun };
  const Entry* entry = nullptr;
  int seed_index = 0;
  uint64_t seed = 0;
  // Filled in by the runner.
  Status status = Status::kPending;
  double seconds = 0.0;
  std::string log_path;
  std::string reason;      ///< one line: why it failed (failed test names, signal, timeout)
  std::string rerun;       ///< the command that re-runs exactly this seed (failures only)
  std::string log_excerpt; ///< the end of the log (failures only), for JUnit
};

const char* status_name(Run::Status s);
inline bool is_failure(Run::Status s) {
  return s == Run::Status::kFail || s == Run::Status::kTimeout || s == Run::Status::kCrash ||
         s == Run::Status::kError || s == Run::Status::kNotRun;
}

/// The runs of a list: entries in file order, each over `seeds` seeds. With `chunk` > 0 and `task` >= 0, only the
/// runs of Slurm array task `task`: tasks enumerate (entry, chunk of `chunk` consecutive seed indices), entry-major.
std::vector<Run> plan_runs(const std::vector<const Entry*>& entries, uint64_t base_seed, int seeds, int chunk = 0,
                           int task = -1);
/// Number of array tasks for `entries` x `seeds` in chunks of `chunk`.
int count_tasks(size_t entries, int seeds, int chunk);

struct RunOptions {
  std::string list;
  std::string bin_dir;
  std::string out_dir;
  int jobs = 1;
  int timeout_override_s = 0;  ///< 0 = each entry's own
  bool quiet_rows = false;
};

/// Runs `runs` with `opts.jobs` processes at a time, printing a row per finished run; fills in each Run.
/// Returns false when interrupted (SIGINT/SIGTERM): unfinished runs are kNotRun.
bool execute(std::vector<Run>& runs, const RunOptions& opts);

/// "12.3 s" or "4m05s".
std::string format_duration(double seconds);
/// Shell-quotes a word when needed ('...').
std::string shell_quote(const std::string& s);
/// `p` relative to the current directory when it lies below it, else as given.
std::string display_path(const std::string& p);

// ---- JUnit ----------------------------------------------------------------------------------------------------
struct JunitInfo {
  std::string suite_name;  ///< <testsuites name=...>
  std::string list;
  uint64_t base_seed = 0;
  double wall_seconds = 0.0;
};
/// Makes `path` writable before a run: creates its missing parent directories (as write_junit does) and opens it for
/// appending, removing it again if it did not exist. Throws UsageError "OPTION PATH: why" (a directory, a parent that
/// cannot be made, or a file that cannot be opened), so an unwritable report fails before any test runs.
void check_output_file(const std::string& option, const std::string& path);
/// Writes one <testsuites> with a <testsuite> per entry and a <testcase> per run. Throws UsageError if unwritable.
void write_junit(const std::string& path, const std::vector<Run>& runs, const JunitInfo& info);

struct MergeSummary {
  int files = 0, tests = 0, failures = 0, errors = 0, skipped = 0, missing = 0;
  std::vector<std::string> failure_lines;  ///< "suite name: message"
};
/// Merges JUnit files written by write_junit (and directories of them, task-*.xml) into `out`. With `expect` >= 0,
/// files task-0.xml .. task-(expect-1).xml must exist in the given directories; each missing one is recorded as an
/// error test case. Throws UsageError for unreadable or malformed input.
MergeSummary merge_junit(const std::vector<std::string>& inputs, const std::string& out, int expect);

// ---- Slurm ----------------------------------------------------------------------------------------------------
struct SlurmOptions {
  std::string dir;
  std::string runner;     ///< absolute path of trnsim_regress
  std::string lists;      ///< absolute path of the lists file
  std::string bin_dir;    ///< absolute
  std::string list;
  uint64_t base_seed = 1;
  int seeds = 1;
  int chunk = 4;
  int cpus = 0;            ///< 0 = chunk
  std::string time;        ///< empty = derived from timeouts
  std::string partition, account;
  int timeout_override_s = 0;
  std::string out_dir;     ///< logs of the runs; empty = DIR/runs
  std::string only;        ///< --only as given (the tasks enumerate only these tests); empty = all
};
/// Writes DIR/regress.sbatch (array job), DIR/merge.sbatch and DIR/submit.sh; returns the number of array tasks.
int write_slurm(const SlurmOptions& o, const std::vector<const Entry*>& entries);

}  // namespace trnsim::regress
