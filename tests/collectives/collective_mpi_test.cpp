// `mpirun -np N trnsim run --workload allreduce|allgather|reducescatter` (docs/distributed.md): the same report, bits
// and cycle counts at 1, 2 and 4 ranks as in one process without MPI; bad uses exit 2 naming the problem; a rank that
// fails ends the job naming the rank and its chips, never a hang. Ranks run on this machine (loopback); as root,
// OpenMPI needs its run-as-root variables, which every command here sets.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

#include "tests/cli/cli_runner.h"

namespace trnsim::test {
namespace {

/// The shell prefix that starts `trnsim` on `ranks` MPI ranks of this machine.
std::string mpirun(int ranks, const std::string& env = "") {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 " + env +
         " mpirun --oversubscribe -np " + std::to_string(ranks) + " ";
}

/// The report's lines without the host's own figures (wall time, peak memory, the ranks, the report's path).
std::vector<std::string> simulated_lines(const std::string& out) {
  std::vector<std::string> kept;
  for (const std::string& l : lines_of(out)) {
    if (l.rfind("  host ", 0) == 0 || l.rfind("  MPI ranks", 0) == 0 || l.rfind("  report ", 0) == 0) continue;
    kept.push_back(l);
  }
  return kept;
}

/// The JSON report without the host's figures.
nlohmann::json simulated_json(const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(slurp(path));
  for (const char* k : {"wall_s", "collective_wall_s", "peak_rss_gib", "mpi_ranks"}) j.erase(k);
  return j;
}

void expect_same_at(const std::string& args, const std::vector<int>& rank_counts = {1, 2, 4}) {
  const std::string one = next_scratch(".json");
  const Result single = run(args + " --report " + one);
  ASSERT_EQ(single.exit_code, 0) << args << "\n" << single.out << single.err;
  ASSERT_NE(single.out.find("\nPASS: "), std::string::npos) << single.out;
  for (const int ranks : rank_counts) {
    const std::string report = next_scratch(".json");
    const Result r = run(args + " --report " + report, mpirun(ranks));
    ASSERT_EQ(r.exit_code, 0) << ranks << " ranks: " << args << "\n" << r.out << r.err;
    // PASS against the golden collective: the same bits; every simulated figure (cycles, messages, link traffic,
    // busbw) line for line and in the JSON report.
    EXPECT_EQ(simulated_lines(r.out), simulated_lines(single.out)) << ranks << " ranks: " << args << "\n" << r.out;
    EXPECT_EQ(simulated_json(report), simulated_json(one)) << ranks << " ranks: " << args;
    EXPECT_EQ(nlohmann::json::parse(slurp(report))["mpi_ranks"], ranks);
    EXPECT_NE(r.out.find("  MPI ranks         " + std::to_string(ranks) + ", window "), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "") << ranks << " ranks: " << args;
  }
}

TEST(CollectiveMpi, AllReduceRingOnTrn2x16IsTheSameAt1And2And4Ranks) {
  expect_same_at("run --workload allreduce --config trn2-16 --bytes 256K --dtype fp32 --seed 5");
}

TEST(CollectiveMpi, ReduceScatterRhdOfAnOddSizeIsTheSameAt1To4Ranks) {
  // 1002 bytes of BF16: 501 elements, blocks of different sizes; 3 ranks own 5, 5 and 6 chips.
  expect_same_at("run --workload reducescatter --config trn2-16 --algo rhd --bytes 1002 --dtype bf16", {1, 2, 3, 4});
}

TEST(CollectiveMpi, AllGatherOnTrn2x64IsTheSameAt1And2And4Ranks) {
  expect_same_at("run --workload allgather --config trn2-64 --bytes 8K --dtype bf16 --seed 9");
}

TEST(CollectiveMpi, Trn2x256ReduceScatterIsTheSameAt1And2Ranks) {
  // Four UltraServers over EFA: the rank cut (chips 0..127, 128..255) falls between UltraServers.
  expect_same_at("run --workload reducescatter --config trn2-256 --bytes 2050 --dtype bf16", {1, 2});
}

TEST(CollectiveMpi, TheReportNamesEveryRanksChips) {
  const Result r = run("run --workload allreduce --config trn2-16 --bytes 4K", mpirun(2));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("  MPI ranks         2, window 1.500 us (the hop latency); peak memory rank 0 chips 0..7 "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", rank 1 chips 8..15 "), std::string::npos) << r.out;
}

TEST(CollectiveMpi, RankProgressPrintsEveryRanksLineOnStderr) {
  // Progress at most every millisecond of host time: a line after nearly every window, from both ranks.
  const Result r = run("run --workload allreduce --config trn2-16 --bytes 4K --rank-progress 0.001", mpirun(2));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  int lines[2] = {0, 0};
  for (const std::string& l : lines_of(r.err)) {
    const bool rank0 = l.rfind("trnsim: rank 0 (chips 0..7): ", 0) == 0;
    EXPECT_TRUE(rank0 || l.rfind("trnsim: rank 1 (chips 8..15): ", 0) == 0) << l;
    EXPECT_NE(l.find(" us simulated, "), std::string::npos) << l;
    ++lines[rank0 ? 0 : 1];
  }
  EXPECT_GT(lines[0], 0) << r.err;
  EXPECT_GT(lines[1], 0) << r.err;
  EXPECT_EQ(simulated_lines(r.out), simulated_lines(run("run --workload allreduce --config trn2-16 --bytes 4K").out));
}

TEST(CollectiveMpi, WhatDoesNotSplitOverRanksExitsTwoNamingIt) {
  struct Bad {
    const char* args;
    const char* reason;
  };
  for (const Bad& b :
       {Bad{"run --workload gemm --te tlm", "--workload gemm runs on one chip: MPI ranks split multi-chip systems"},
        Bad{"run --workload allreduce --config trn2-16 --fabric tlm",
            "--fabric tlm: the router networks are not split across MPI ranks"},
        Bad{"fpcheck --op f32_add --vectors /dev/null", "trnsim fpcheck runs in one process"},
        Bad{"run --workload allreduce --config trn2-16 --bytes 6 --dtype fp32", "not a multiple of the fp32"}}) {
    const Result r = run(b.args, mpirun(2));
    EXPECT_EQ(r.exit_code, 2) << b.args << "\n" << r.out << r.err;
    EXPECT_NE(r.err.find(b.reason), std::string::npos) << b.args << "\n" << r.err;
    // One line from rank 0, none from the other rank (mpirun adds its own note of the exit code).
    size_t ours = 0;
    for (const std::string& l : lines_of(r.err)) ours += l.rfind("trnsim:", 0) == 0;
    EXPECT_EQ(ours, 1u) << b.args << "\n" << r.err;
  }
}

TEST(CollectiveMpi, ABadTimeoutIsBadInput) {
  const Result r = run("run --workload allreduce --config trn2-16 --bytes 4K", mpirun(2, "TRNSIM_MPI_TIMEOUT_S=soon"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("TRNSIM_MPI_TIMEOUT_S=soon: not a positive number of seconds"), std::string::npos) << r.err;
}

TEST(CollectiveMpi, ARankThatFailsEndsTheJobNamingTheRankAndItsChips) {
  for (const int failing : {0, 1}) {
    const Result r = run("run --workload allreduce --config trn2-16 --bytes 4K",
                         mpirun(2, "TRNSIM_MPI_TIMEOUT_S=60 TRNSIM_MPI_FAIL_RANK=" + std::to_string(failing)));
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    const std::string want = "trnsim: rank " + std::to_string(failing) + " (chips " +
                             (failing == 0 ? "0..7" : "8..15") + "): a failure injected by TRNSIM_MPI_FAIL_RANK=" +
                             std::to_string(failing);
    EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("PASS"), std::string::npos) << r.out;
  }
}

/// `scripts/slurm-run ARGS` (TRNSIM_SOURCE_DIR: the tree), its stdout, stderr and exit code.
Result slurm_run(const std::string& args) { return run_command("'" TRNSIM_SOURCE_DIR "/scripts/slurm-run' " + args); }

TEST(CollectiveMpi, TheSlurmScriptIsAnSbatchFileWhoseSrunLineRunsTheSystem) {
  const Result r = slurm_run("--dry-run --nodes 2 --ntasks-per-node 2 --time 00:20:00 --partition compute "
                             "--job-name ar64 --bin '" TRNSIM_BIN "' -- run --workload allreduce --config trn2-16 "
                             "--bytes 8K --dtype fp32");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.front(), "#!/bin/bash");
  // sbatch reads "#SBATCH --option=value" lines before the first command (sbatch(1), "DESCRIPTION").
  std::map<std::string, std::string> sbatch;
  std::string srun;
  bool commands = false;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("#SBATCH ", 0) == 0) {
      EXPECT_FALSE(commands) << "an #SBATCH line after a command is ignored by sbatch: " << l;
      const size_t eq = l.find('=');
      ASSERT_EQ(l.compare(8, 2, "--"), 0) << l;
      ASSERT_NE(eq, std::string::npos) << l;
      sbatch[l.substr(10, eq - 10)] = l.substr(eq + 1);
    } else if (!l.empty() && l[0] != '#') {
      commands = true;
      if (l.rfind("srun ", 0) == 0) srun = l;
    }
  }
  EXPECT_EQ(sbatch, (std::map<std::string, std::string>{{"job-name", "ar64"}, {"nodes", "2"},
                                                        {"ntasks-per-node", "2"}, {"time", "00:20:00"},
                                                        {"output", "trnsim-%j.out"}, {"partition", "compute"}}));
  ASSERT_EQ(srun.rfind("srun --mpi=pmix ", 0), 0u) << srun;
  // The srun line's command, started by mpirun on 4 ranks of this machine instead: the run it asks for.
  const Result ran = run_command(mpirun(4) + srun.substr(std::string("srun --mpi=pmix ").size()));
  EXPECT_EQ(ran.exit_code, 0) << ran.out << ran.err;
  EXPECT_NE(ran.out.find("PASS: 32768 elements on 16 chips"), std::string::npos) << ran.out;
  EXPECT_NE(ran.out.find("  MPI ranks         4, "), std::string::npos) << ran.out;
}

TEST(CollectiveMpi, TheSlurmScriptRefusesBadUsage) {
  for (const char* bad : {"--nodes 0 -- run", "--time 90 -- run", "-- fpcheck --op f32_add", "--nodes 2", "--bogus"}) {
    const Result r = slurm_run(bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(r.err.rfind("scripts/slurm-run: ", 0), 0u) << bad << ": " << r.err;
    EXPECT_EQ(r.out, "") << bad;
  }
}

}  // namespace
}  // namespace trnsim::test
