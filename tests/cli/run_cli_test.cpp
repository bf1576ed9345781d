// `trnsim run` as a user runs it: workloads pass on every TE datapath and write their report; program files run
// or stop with the device's error; bad flags and unwritable output paths exit 2 with a one-line reason naming
// the flag (BRIEF section 4).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/cli/cli_runner.h"

namespace {

using namespace trnsim::test;

TEST(RunCli, SmallGemmPassesOnTheRtlAndWritesReport) {
  const std::string report = scratch(".json");
  const Result r = run("run --workload gemm -m 5 -k 19 -n 3 --dtype fp16 --report " + report);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  const std::string json = slurp(report);
  EXPECT_NE(json.find("\"pass\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"k\": 19"), std::string::npos) << json;
  EXPECT_NE(json.find("\"te\": \"rtl\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"cycles\""), std::string::npos) << json;
}

TEST(RunCli, RaggedGemmPassesOnTlmAndLockstep) {
  for (const std::string te : {"tlm", "lockstep"}) {
    const Result r = run("run --workload gemm -m 33 -k 40 -n 17 --dtype fp8e4m3 --seed 7 --te " + te);
    EXPECT_EQ(r.exit_code, 0) << te << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(te + " datapath"), std::string::npos) << r.out;
  }
}

TEST(RunCli, Trn2ConfigRunsOnTheTlmDatapath) {
  const Result r = run("run --config trn2 --te tlm --workload gemm -m 130 -k 129 -n 5 --dtype bf16");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("128x128"), std::string::npos) << r.out;
}

TEST(RunCli, ProgramFileRunsToItsHalts) {
  const std::string prog = write_file(
      ".queue te\nsem_wait sem=1 value=1\nhalt\n.queue dma\nsem_signal sem=1 value=1\nhalt\n");
  const Result r = run("run --te tlm --program " + prog);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
}

TEST(RunCli, ProgramRunsOnEveryCoreAskedForWithAPerCoreTable) {
  // Each core copies 256 FP32 from HBM into its own SBUF (docs/driver.md "Cores"): 2 DMA instructions each.
  const std::string prog = write_file(".queue dma\ndma_copy src=hbm:0x0 dst=sbuf:0x0 type=fp32 count=[256]\nhalt\n");
  const std::string report = scratch(".json");
  const Result r = run("run --te tlm --cores 2 --program " + prog + " --report " + report);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("on cores 0..1 (each runs the program)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("retired te/dma/act/vec/cc"), std::string::npos) << r.out;
  const std::string json = slurp(report);
  for (const char* core : {"\"core\": 0", "\"core\": 1"}) EXPECT_NE(json.find(core), std::string::npos) << json;
  EXPECT_NE(json.find("\"dma\": 2"), std::string::npos) << json;
  // The summary line counts every core's instructions, as the workloads' does: 2 cores x (dma_copy, halt).
  EXPECT_NE(r.out.find("retired           te 0, dma 4, act 0, vec 0, cc 0\n"), std::string::npos) << r.out;
  // More cores than the chip has: a usage error naming the flag; 0 cores likewise.
  const Result many = run("run --te tlm --cores 3 --program " + prog);
  EXPECT_EQ(many.exit_code, 2) << many.out << many.err;
  EXPECT_NE(many.err.find("--cores 3: a tiny chip has 2 cores"), std::string::npos) << many.err;
  const Result none = run("run --te tlm --cores 0 --workload softmax");
  EXPECT_EQ(none.exit_code, 2) << none.out << none.err;
  EXPECT_NE(none.err.find("--cores"), std::string::npos) << none.err;
}

TEST(RunCli, CompositeWorkloadsSplitOverEveryCoreByDefaultWithTheOneCoreBits) {
  // tiny has 2 cores: without --cores the block runs on both (its GEMMs by M, the heads in waves, the row-wise
  // steps by rows); --cores 1 is the one-core sequence. Both are bit-exact against the golden block, and the
  // outputs are the same files.
  const std::string shape = " --workload transformer-block --te tlm --seq 20 --d-model 32 --heads 2 --d-ff 48";
  const std::string both = scratch(".both"), one = scratch(".one");
  const Result r2 = run("run" + shape + " --outputs " + both);
  ASSERT_EQ(r2.exit_code, 0) << r2.out << r2.err;
  EXPECT_NE(r2.out.find("split over cores 0..1"), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find("each wave of independent programs as a work list"), std::string::npos) << r2.out;
  EXPECT_NE(r2.out.find("retired te/dma/act/vec/cc"), std::string::npos) << r2.out;  // the per-core table
  const Result r1 = run("run" + shape + " --cores 1 --outputs " + one);
  ASSERT_EQ(r1.exit_code, 0) << r1.out << r1.err;
  EXPECT_EQ(r1.out.find("split over cores"), std::string::npos) << r1.out;
  for (const char* name : {"out", "h1", "qkvT", "attnT"}) {
    const std::string file = both + "/" + name + ".npy";
    EXPECT_TRUE(std::filesystem::exists(file)) << file;
    EXPECT_EQ(slurp(file), slurp(one + "/" + name + ".npy")) << name;
  }
  // g^T where both ran the MLP as two GEMM steps (a rows program keeps it on chip, docs/kernels.md "GELU MLP").
  if (std::filesystem::exists(both + "/gT.npy") && std::filesystem::exists(one + "/gT.npy")) {
    EXPECT_EQ(slurp(both + "/gT.npy"), slurp(one + "/gT.npy"));
  }
  // The row-wise standalone workloads split too, and stay bit-exact.
  for (const char* w : {"softmax", "layernorm", "rmsnorm"}) {
    const Result s = run(std::string("run --te tlm --seq 40 --d-model 24 --heads 2 --workload ") + w);
    EXPECT_EQ(s.exit_code, 0) << w << s.out << s.err;
    EXPECT_NE(s.out.find("split over cores 0..1"), std::string::npos) << w << s.out;
  }
}

TEST(RunCli, TheGemmWorkloadSplitsOverTheCoresAskedForAndStaysBitExact) {
  // M = 37 on a 16-column TE: core 0 computes 32 rows, core 1 five (docs/kernels.md "Multi-core GEMM").
  const std::string report = scratch(".json");
  const Result r = run("run --te tlm --workload gemm -m 37 -k 40 -n 45 --cores 2 --report " + report);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("split over cores 0..1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("check out      [37, 45] fp32: bit-exact"), std::string::npos) << r.out;
  const std::string json = slurp(report);
  EXPECT_NE(json.find("\"te_macs\": 57600"), std::string::npos) << "core 0: 32 x 40 x 45\n" << json;
  EXPECT_NE(json.find("\"te_macs\": 9000"), std::string::npos) << "core 1: 5 x 40 x 45\n" << json;
}

TEST(RunCli, EveryCoreComputesOnTheVerilatedTensorEngineInLockstep) {
  // --te lockstep: each core has its own verilated engine beside the TLM model (its SIM_TE_BACKEND register says so),
  // and both cores' products pass through it: core 0 computes 32 rows, core 1 five.
  const std::string report = scratch(".json");
  const Result r = run("run --te lockstep --workload gemm -m 37 -k 40 -n 45 --cores 2 --report " + report);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  const nlohmann::json j = nlohmann::json::parse(slurp(report));
  ASSERT_EQ(j.at("cores").size(), 2u) << j.dump(2);
  for (const auto& core : j.at("cores")) EXPECT_EQ(core.at("te_backend"), "lockstep") << core.dump();
  EXPECT_EQ(j.at("cores").at(1).at("te_macs"), 9000) << "core 1: 5 x 40 x 45";
}

TEST(RunCli, DeadlockedProgramIsBadInputNamingQueueInstructionAndSemaphore) {
  const std::string prog = write_file(".queue te\nnop\nsem_wait sem=4 value=2\nhalt\n.queue dma\nhalt\n");
  const Result r = run("run --te tlm --program " + prog);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("deadlock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("queue te"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("instruction 1"), std::string::npos) << r.err;
}

TEST(RunCli, ProgramWithoutHaltIsBadInput) {
  const std::string prog = write_file(".queue te\nnop\nnop\n");
  const Result r = run("run --te tlm --program " + prog);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("no_halt"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("instruction 2"), std::string::npos) << r.err;
}

TEST(RunCli, OutOfRangeSbufAddressIsBadInputNamingTheField) {
  const std::string prog = write_file(".queue te\nload_stationary dtype=bf16 sbuf=0x2FFFFFF k=16 m=16\nhalt\n");
  const Result r = run("run --te tlm --program " + prog);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("sbuf_range"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sbuf_addr"), std::string::npos) << r.err;
}

TEST(RunCli, OutOfRangePsumAndHbmCopiesAreBadInputNamingTheField) {
  // tiny: PSUM is 16 partitions x 16 KiB = 0x40000 bytes; HBM is 1 GiB.
  Result r = run("run --te tlm --program " +
                 write_file(".queue dma\ndma_copy src=hbm:0x0 dst=psum:0x3FFFC count=[2]\nhalt\n"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("psum_range"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dst_addr"), std::string::npos) << r.err;
  r = run("run --te tlm --program " +
          write_file(".queue dma\nnop\ndma_copy src=hbm:0x3FFFFFFC dst=sbuf:0x0 count=[4] type=bf16\nhalt\n"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("hbm_range"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("instruction 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("src_addr"), std::string::npos) << r.err;
}

TEST(RunCli, AHostCopyInProcessStopsWithHostAccessNamingTheField) {
  // Space host is bus-master DMA into host memory: only the PCI function (serve --qemu) attaches any.
  const Result r = run("run --te tlm --program " +
                       write_file(".queue dma\ndma_copy src=hbm:0x0 dst=host:0x1000 count=[16] type=fp32\nhalt\n"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("host_access"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dst_addr"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no host memory is attached"), std::string::npos) << r.err;
}

TEST(RunCli, TheWatchdogLetsALongCopyRunAndRunSetsOrDisablesIt) {
  // A 128 MiB copy needs ~14 M cycles with nothing retiring: progress (bytes move), not a hang.
  const std::string copy =
      write_file(".queue dma\ndma_copy src=hbm:0x0 dst=hbm:0x10000000 type=fp32 count=[32768,1024]\nhalt\n");
  Result r = run("run --te tlm --program " + copy);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  // One Vector instruction of 100,001 cycles: a 100-cycle watchdog stops it, 0 turns the watchdog off.
  const std::string busy = write_file(".queue vec\nmemset value=1 partitions=16 free=[40000] out=sbuf:0:0x0\nhalt\n");
  r = run("run --te tlm --program " + busy + " --watchdog-cycles 100");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("device error watchdog"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("queue vec at instruction 0"), std::string::npos) << r.err;
  r = run("run --te tlm --program " + busy + " --watchdog-cycles 0");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run("run --te tlm --program " + busy + " --watchdog-cycles -5");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--watchdog-cycles"), std::string::npos) << r.err;
}

TEST(RunCli, ABinaryWithABadMagicSaysBadMagicAsDisasmDoes) {
  // One loader, one message: a damaged binary is not read as program text ("unknown mnemonic 'TRNX...").
  const std::string text = write_file(".queue te\nnop\nhalt\n");
  const std::string bin = scratch(".bin");
  ASSERT_EQ(run("asm " + text + " -o " + bin).exit_code, 0);
  std::fstream f(bin, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(3);
  f.put('X');
  f.close();
  const Result r = run("run --te tlm --program " + bin);
  const Result d = run("disasm " + bin);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(d.exit_code, 2) << d.out << d.err;
  EXPECT_NE(r.err.find(bin + ": bad magic 54 52 4e 58, expected \"TRNP\""), std::string::npos) << r.err;
  EXPECT_EQ(r.err, d.err);
}

TEST(RunCli, CorruptedBinaryProgramIsBadInputNamingInstructionAndField) {
  const std::string text = write_file(".queue te\nnop\nhalt\n");
  const std::string bin = scratch(".bin");
  ASSERT_EQ(run("asm " + text + " -o " + bin).exit_code, 0);
  std::string bytes = slurp(bin);
  bytes[bytes.size() - 128] = char(0x7F);  // instruction 0's opcode byte -> no such opcode
  std::ofstream(bin, std::ios::binary) << bytes;
  const Result r = run("run --te tlm --program " + bin);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("instruction 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("opcode"), std::string::npos) << r.err;
}

TEST(RunCli, MovingFreeSizeOver512IsRejected) {
  const Result r = run("run --te tlm --program " +
                       write_file(".queue te\nmultiply_moving dtype=bf16 sbuf=0 psum=0 k=4 n=600\nhalt\n"));
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("512"), std::string::npos) << r.err;
}

TEST(RunCli, MalformedProgramTextNamesTheLine) {
  const std::string prog = write_file(".queue te\nhalt\nfrobnicate\n");
  const Result r = run("run --te tlm --program " + prog);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(prog + ":3:1: unknown mnemonic 'frobnicate'"), std::string::npos) << r.err;  // as `trnsim asm`
}

TEST(RunCli, UnwritableReportIsBadInputBeforeTheRun) {
  const Result r = run("run --workload gemm -m 4 -k 4 -n 4 --report /nonexistent-dir/r.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--report /nonexistent-dir/r.json"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("PASS"), std::string::npos) << "must fail before running: " << r.out;
}

TEST(RunCli, ARunThatFailsStillWritesItsReportWithTheReason) {
  // A deadlocked program (exit 2) and a GEMM cut short by --timeout-cycles (exit 2): the report says pass false and
  // why, with what ran, instead of an empty file; an earlier good report at the same path is replaced by it.
  const std::string report = scratch(".json");
  const Result good = run("run --te tlm --workload gemm -m 4 -k 4 -n 4 --report " + report);
  ASSERT_EQ(good.exit_code, 0) << good.out << good.err;
  const Result cut = run("run --te tlm --workload gemm -m 16 -k 16 -n 16 --timeout-cycles 10 --report " + report);
  EXPECT_EQ(cut.exit_code, 2) << cut.out << cut.err;
  nlohmann::json j = nlohmann::json::parse(slurp(report));
  EXPECT_EQ(j.at("pass"), false) << j.dump(2);
  EXPECT_EQ(j.at("workload"), "gemm") << j.dump(2);
  EXPECT_EQ(j.at("config"), "tiny") << j.dump(2);
  EXPECT_EQ(j.at("error").get<std::string>().rfind("device did not finish within 10 cycles", 0), 0u) << j.dump(2);
  const std::string prog = write_file(".queue te\nsem_wait sem=4 value=2\nhalt\n.queue dma\nhalt\n");
  const Result dead = run("run --te tlm --program " + prog + " --report " + report);
  EXPECT_EQ(dead.exit_code, 2) << dead.out << dead.err;
  j = nlohmann::json::parse(slurp(report));
  EXPECT_EQ(j.at("pass"), false) << j.dump(2);
  EXPECT_EQ(j.at("program"), prog) << j.dump(2);
  EXPECT_NE(j.at("error").get<std::string>().find("deadlock"), std::string::npos) << j.dump(2);
}

TEST(RunCli, WhenOneCoreStopsTheOtherCoresStatesArePrinted) {
  // Both cores signal core 0's semaphore 0 and wait for 2 on their own: core 0 gets both signals and finishes,
  // core 1 none (deadlock, named "(core 1)"), and core 0's end is reported beside it.
  const std::string dead = write_file(".queue dma\nsem_signal sem=0 value=1 core=0\nsem_wait sem=0 value=2\nhalt\n");
  Result r = run("run --te tlm --cores 2 --program " + dead);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("deadlock"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(core 1)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  core 0: done, "), std::string::npos) << r.err;
  // Likewise on a timeout: core 0 is still copying when the limit passes, core 1 waits on its semaphore; the error
  // is core 0's and core 1's state at that cycle is printed.
  const std::string slow = write_file(
      ".queue dma\nsem_signal sem=1 value=1 core=0\nsem_wait sem=1 value=2\n"
      "dma_copy src=hbm:0x0 dst=hbm:0x1000000 type=fp32 count=[65535,16]\nhalt\n");
  r = run("run --te tlm --cores 2 --timeout-cycles 50000 --program " + slow);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("did not finish within 50000 cycles"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("  core 1: still running: queue dma at instruction 1 of 4, waiting\n"), std::string::npos)
      << r.err;
}

TEST(RunCli, UnwritableWaveformIsBadInput) {
  const Result r = run("run --workload gemm -m 4 -k 4 -n 4 --wave /nonexistent-dir/w.fst");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--wave /nonexistent-dir/w.fst"), std::string::npos) << r.err;
}

TEST(RunCli, WaveformNeedsTheRtl) {
  const Result r = run("run --workload gemm -m 4 -k 4 -n 4 --te tlm --wave " + scratch(".fst"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--wave"), std::string::npos) << r.err;
}

TEST(RunCli, UnknownUnbuiltOrMultiChipConfigNamesIt) {
  Result r = run("run --config bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
#ifndef TRNSIM_LARGE_TE
  r = run("run --config trn2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("128x128"), std::string::npos) << r.err;
#endif
  r = run("run --config trn2-16 --te tlm");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("multi-chip"), std::string::npos) << r.err;
}

TEST(RunCli, BadDtypeDimensionsAndDatapathAreUsageErrors) {
  Result r = run("run --workload gemm --dtype fp7");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fp7"), std::string::npos) << r.err;
  r = run("run --workload gemm -n 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--n"), std::string::npos) << r.err;
  r = run("run --te gpu");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--te gpu"), std::string::npos) << r.err;
  // An unsigned value past 2^64 - 1 is refused, not clamped to 18446744073709551615.
  r = run("run --workload gemm --seed 18446744073709551616");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("18446744073709551616 is out of range"), std::string::npos) << r.err;
}

TEST(RunCli, AWorkloadsShapeIsCheckedAgainstTheOptionsItUses) {
  // LayerNorm has no weight matrix, --heads or --d-ff: a wide d_model is its to take (8192 x 4 weights would pass
  // the block's 2^28), and a refusal names only the options the workload reads.
  Result r = run("run --te tlm --workload layernorm --seq 3 --d-model 8192");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  r = run("run --te tlm --workload transformer-block --seq 16 --d-model 8192 --heads 2");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--seq 16 --d-model 8192 --heads 2 --d-ff 3072: too large"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("weights <= 2^28 elements"), std::string::npos) << r.err;
}

// Waveform problems that only the run itself (or the environment) reveals: a window after the last cycle warns
// naming it (exit 0); a --wave-scope that matches no signal is exit 2 with no file; a TRNSIM_WAVE that cannot be
// written or is not .fst is one line naming it, exit 2, also for a collective over the verilated routers (whose
// harnesses run in SystemC threads).
TEST(RunCli, WaveWindowAfterTheRunWarnsAndAnEmptyScopeIsRefused) {
  const std::string fst = scratch(".fst");
  std::remove(fst.c_str());
  const Result late = run("run --workload gemm -m 16 -k 16 -n 32 --wave " + fst + " --wave-from 1000000 --wave-to 2000000");
  EXPECT_EQ(late.exit_code, 0) << late.err;
  EXPECT_NE(late.err.find("warning: --wave-from 1000000 is after the last cycle of the run ("), std::string::npos)
      << late.err;
  EXPECT_NE(late.err.find("): " + fst + " holds no window"), std::string::npos) << late.err;
  std::remove(fst.c_str());
  const Result scope = run("run --workload gemm -m 16 -k 16 -n 32 --wave " + fst + " --wave-scope trn_te.bogus");
  EXPECT_EQ(scope.exit_code, 2) << scope.out << scope.err;
  EXPECT_NE(scope.err.find("--wave-scope trn_te.bogus: matched no signal of the 16x16 Tensor Engine"),
            std::string::npos) << scope.err;
  EXPECT_FALSE(std::ifstream(fst).good()) << "a refused scope left " << fst;
  // The scopes are read back with GTKWave's fst2vcd: where it is missing (PATH without it) they go unchecked, said
  // once on stderr, and the recording is made.
  const Result unchecked = run("run --workload gemm -m 16 -k 16 -n 32 --wave " + fst + " --wave-scope trn_te.bogus",
                               "PATH=/nonexistent ");
  EXPECT_EQ(unchecked.exit_code, 0) << unchecked.err;
  EXPECT_NE(unchecked.err.find("trnsim: warning: --wave-scope not checked against " + fst +
                               ": GTKWave's fst2vcd is not installed\n"), std::string::npos) << unchecked.err;
  EXPECT_TRUE(std::ifstream(fst).good()) << fst;
  std::remove(fst.c_str());
}

TEST(RunCli, UnusableTrnsimWaveIsOneLineNamingIt) {
  const std::string vcd = scratch(".vcd");
  std::remove(vcd.c_str());
  const std::string collective = "run --workload allreduce --config trn2-16 --bytes 1K --dtype fp32 --fabric rtl";
  const struct {
    std::string env, args, reason;
  } cases[] = {
      {"TRNSIM_WAVE=/nonexistent/c.fst", collective,
       "TRNSIM_WAVE=/nonexistent/c.fst: cannot write in directory '/nonexistent'"},
      {"TRNSIM_WAVE=" + vcd, collective, "TRNSIM_WAVE=" + vcd + ": trnsim writes waveforms as FST"},
      {"TRNSIM_WAVE=" + scratch(".fst") + " TRNSIM_WAVE_FROM=x", collective, "TRNSIM_WAVE_FROM='x' is not a cycle"},
      {"TRNSIM_WAVE=/nonexistent/c.fst", "run --workload gemm -m 16 -k 16 -n 32",
       "trnsim: error: TRNSIM_WAVE=/nonexistent/c.fst: cannot write in directory '/nonexistent'"},
  };
  for (const auto& c : cases) {
    const Result r = run(c.args, c.env + " ");
    EXPECT_EQ(r.exit_code, 2) << c.env << " " << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.reason), std::string::npos) << c.env << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.env << ": " << r.err;
    EXPECT_EQ(r.err.find("E549"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::ifstream(vcd).good()) << "a refused TRNSIM_WAVE wrote " << vcd;
}

}  // namespace
