// --slurm DIR: the same list as a Slurm array job. One array task per (entry, chunk of seeds); each task runs its
// chunk with this runner (--array-task) and writes DIR/junit/task-<i>.xml; a merge job, submitted with
// --dependency=afterany on the array, merges them into DIR/junit.xml and names any task that wrote nothing.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "tools/regress/regress.h"

namespace trnsim::regress {
namespace {

namespace fs = std::filesystem;

std::string hms(long seconds) {
  char buf[48];
  const long d = seconds / 86400, h = (seconds % 86400) / 3600, m = (seconds % 3600) / 60, s = seconds % 60;
  if (d > 0) {
    std::snprintf(buf, sizeof buf, "%ld-%02ld:%02ld:%02ld", d, h, m, s);
  } else {
    std::snprintf(buf, sizeof buf, "%02ld:%02ld:%02ld", h, m, s);
  }
  return buf;
}

void write_script(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw UsageError(path.string() + ": cannot write");
  fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                  fs::perm_options::add);
}

}  // namespace

int write_slurm(const SlurmOptions& o, const std::vector<const Entry*>& entries) {
  const fs::path dir = fs::absolute(o.dir).lexically_normal();
  std::error_code ec;
  for (const char* sub : {"logs", "junit", "runs"}) {
    fs::create_directories(dir / sub, ec);
    if (ec) throw UsageError("--slurm " + o.dir + ": " + ec.message());
  }
  const int tasks = count_tasks(entries.size(), o.seeds, o.chunk);
  const int cpus = o.cpus > 0 ? o.cpus : std::min(o.chunk, o.seeds);
  int max_timeout = 0;
  for (const Entry* e : entries) max_timeout = std::max(max_timeout, o.timeout_override_s > 0 ? o.timeout_override_s : e->timeout_s);
  // A task runs at most `chunk` seeds, `cpus` at a time, each bounded by its timeout: that, plus 5 minutes.
  const int waves = (std::min(o.chunk, o.seeds) + cpus - 1) / cpus;
  const std::string time = !o.time.empty() ? o.time : hms(long(waves) * max_timeout + 300);
  const std::string q_runner = shell_quote(o.runner);
  const std::string job = "trnsim-regress-" + o.list;

  std::string a;
  a += "#!/bin/bash\n";
  a += "# trnsim regression, list '" + o.list + "', as a Slurm array job: " + std::to_string(tasks) +
       " tasks, one per test x chunk of up to " + std::to_string(o.chunk) + " seeds (" +
       std::to_string(entries.size()) + " tests x " + std::to_string(o.seeds) + " seeds, base seed " +
       std::to_string(o.base_seed) + ").\n";
  a += "# Written by trnsim_regress --slurm (docs/verification.md). Submit with submit.sh beside it, which also\n";
  a += "# queues merge.sbatch after this array (--dependency=afterany). Task i writes junit/task-<i>.xml.\n";
  a += "# Run one task by hand (no Slurm):  SLURM_ARRAY_TASK_ID=0 bash " + shell_quote((dir / "regress.sbatch").string()) + "\n";
  a += "#SBATCH --job-name=" + job + "\n";
  a += "#SBATCH --array=0-" + std::to_string(tasks - 1) + "\n";
  a += "#SBATCH --ntasks=1\n";
  a += "#SBATCH --cpus-per-task=" + std::to_string(cpus) + "\n";
  a += "#SBATCH --time=" + time + "\n";
  a += "#SBATCH --output=" + (dir / "logs" / "regress-%A_%a.out").string() + "\n";
  if (!o.partition.empty()) a += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.account.empty()) a += "#SBATCH --account=" + o.account + "\n";
  a += "set -u\n";
  a += "task=\"${SLURM_ARRAY_TASK_ID:?set by sbatch --array; to run one task by hand: SLURM_ARRAY_TASK_ID=0 bash $0}\"\n";
  a += "exec " + q_runner + " --lists " + shell_quote(o.lists) + " --bin-dir " + shell_quote(o.bin_dir) +
       " --list " + shell_quote(o.list) + " --seed " + std::to_string(o.base_seed) + " --seeds " +
       std::to_string(o.seeds) + (o.only.empty() ? std::string() : " --only " + shell_quote(o.only)) + " --chunk " +
       std::to_string(o.chunk) + " --array-task \"$task\"" +
       " -j \"${SLURM_CPUS_PER_TASK:-" + std::to_string(cpus) + "}\"" +
       (o.timeout_override_s > 0 ? " --timeout " + std::to_string(o.timeout_override_s) : std::string()) +
       " --out " + shell_quote(o.out_dir.empty() ? (dir / "runs").string() : o.out_dir) + " --junit " + shell_quote((dir / "junit").string()) +
       "/task-\"$task\".xml\n";
  write_script(dir / "regress.sbatch", a);

  std::string m;
  m += "#!/bin/bash\n";
  m += "# Merges the JUnit files of the " + std::to_string(tasks) + " array tasks of regress.sbatch into " +
       (dir / "junit.xml").string() + ";\n";
  m += "# a task that wrote no file (killed, time limit) becomes an error test case. Exit 1 if anything failed.\n";
  m += "#SBATCH --job-name=" + job + "-merge\n";
  m += "#SBATCH --ntasks=1\n";
  m += "#SBATCH --cpus-per-task=1\n";
  m += "#SBATCH --time=00:10:00\n";
  m += "#SBATCH --output=" + (dir / "logs" / "merge-%j.out").string() + "\n";
  if (!o.partition.empty()) m += "#SBATCH --partition=" + o.partition + "\n";
  if (!o.account.empty()) m += "#SBATCH --account=" + o.account + "\n";
  m += "exec " + q_runner + " merge --expect " + std::to_string(tasks) + " --out " +
       shell_quote((dir / "junit.xml").string()) + " " + shell_quote((dir / "junit").string()) + "\n";
  write_script(dir / "merge.sbatch", m);

  std::string s;
  s += "#!/bin/bash\n";
  s += "# Submits the regression array job, then the JUnit merge once every array task has ended (afterany).\n";
  s += "set -euo pipefail\n";
  s += "cd " + shell_quote(dir.string()) + "\n";
  s += "array=$(sbatch --parsable regress.sbatch)\n";
  s += "array=${array%%;*}\n";
  s += "merge=$(sbatch --parsable --dependency=afterany:\"$array\" merge.sbatch)\n";
  s += "merge=${merge%%;*}\n";
  s += "echo \"submitted array job $array (" + std::to_string(tasks) + " tasks) and merge job $merge\"\n";
  s += "echo \"results: " + (dir / "junit.xml").string() + " (when job $merge ends); logs: " + (dir / "logs").string() +
       "\"\n";
  write_script(dir / "submit.sh", s);
  return tasks;
}

}  // namespace trnsim::regress
