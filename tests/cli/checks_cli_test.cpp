// `trnsim run --timeline`, the per-engine utilization report, `--check-hazards`, `--check-uninit` and the wrong
// programs of issue 4 (misaligned partition start, PSUM accumulate from a non-TE engine, uninitialised reads, a
// missing semaphore), as a user runs them. Expected cycle counts come from the cost table of docs/isa.md "Costs" and
// docs/architecture.md "Time and cycles" (1 issue cycle per instruction; multiply_moving N + R + C + 2; Vector
// max(64, n) cycles at 0.96 GHz = x 2.5 TE cycles; Scalar max(64, n) at 1.2 GHz = x 2), not from the model.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_runner.h"

namespace trnsim::test {
namespace {

using nlohmann::json;

json load_json(const std::string& path) {
  json j = json::parse(slurp(path), nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << path << " is not JSON";
  return j;
}

std::string program_file(const std::string& text) {
  const std::string path = next_scratch(".s");
  std::ofstream(path) << text;
  return path;
}

// The complete ("X") events of a trace, per track id, sorted by start time.
std::map<int, std::vector<json>> tracks_of(const json& trace) {
  std::map<int, std::vector<json>> tracks;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "X") tracks[e.at("tid").get<int>()].push_back(e);
  }
  for (auto& [tid, events] : tracks) {
    std::stable_sort(events.begin(), events.end(),
                     [](const json& a, const json& b) { return a.at("ts").get<double>() < b.at("ts").get<double>(); });
  }
  return tracks;
}

constexpr int kTe = 0, kDma = 1, kAct = 2, kVec = 3, kFirstDmaEngine = 10, kLaunches = 100;
constexpr double kTeCycleUs = 417e-6;  // one 2.4 GHz TE cycle on SystemC's 1 ps grid (docs/architecture.md)

TEST(TimelineCli, SmallGemmTraceHasOneSlicePerRetiredInstructionInOrderWithoutOverlap) {
  const std::string trace_path = scratch(".json"), report_path = scratch(".report.json");
  // K = 40, M = 24, N = 100 on the 16x16 tiny TE: ceil(40/16) x ceil(24/16) x ceil(100/512) = 3 x 2 x 1 = 6 passes.
  const Result r = run("run --te tlm --cores 1 --workload gemm -k 40 -m 24 -n 100 --timeline " + trace_path +
                       " --report " + report_path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("timeline          " + trace_path), std::string::npos) << r.out;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << "the timeline line comes before PASS:\n" << r.out;
  const json trace = load_json(trace_path);
  const json report = load_json(report_path);

  // Track names: one per queue, one per DMA engine, one for launches.
  std::map<int, std::string> names;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "thread_name") names[e.at("tid")] = e.at("args").at("name");
  }
  EXPECT_EQ(names[kTe].rfind("te queue", 0), 0u);
  EXPECT_EQ(names[kDma].rfind("dma queue", 0), 0u);
  EXPECT_EQ(names[kAct].rfind("act queue", 0), 0u);
  EXPECT_EQ(names[kVec].rfind("vec queue", 0), 0u);
  EXPECT_EQ(names[kFirstDmaEngine + 15], "DMA engine 15");  // 16 DMA engines (BRIEF section 2)
  EXPECT_FALSE(names[kLaunches].empty());

  auto tracks = tracks_of(trace);
  const size_t queue_slices = tracks[kTe].size() + tracks[kDma].size() + tracks[kAct].size() + tracks[kVec].size();
  // Every instruction of the program retires once: one slice each.
  EXPECT_EQ(queue_slices, report.at("instructions").get<size_t>());
  EXPECT_EQ(trace.at("otherData").at("instructions").get<size_t>(), queue_slices);
  EXPECT_EQ(report.at("engines").at("te").at("instructions").get<size_t>(), tracks[kTe].size());

  int multiplies = 0, loads = 0, waits = 0;
  double last_end = 0;
  for (auto& [tid, events] : tracks) {
    if (tid == kLaunches) continue;
    for (size_t i = 0; i < events.size(); ++i) {
      const json& e = events[i];
      const double ts = e.at("ts"), dur = e.at("dur");
      EXPECT_GE(dur, 0.0);
      last_end = std::max(last_end, ts + dur);
      if (i + 1 < events.size()) {
        EXPECT_LE(ts + dur, events[i + 1].at("ts").get<double>() + 1e-6)
            << "track " << tid << ": slice " << i << " (" << e.at("name") << ") overlaps the next";
      }
      if (tid < kFirstDmaEngine) {
        // Queue slices come in program order: instruction indices 0, 1, 2, ...
        EXPECT_EQ(e.at("args").at("index").get<size_t>(), i) << "track " << tid;
      } else {
        EXPECT_GE(dur, 1.3 - 1e-9) << "a DMA copy pays the 1.3 us start latency";
        EXPECT_GT(e.at("args").at("bytes").get<int>(), 0);
      }
    }
  }
  for (const json& e : tracks[kTe]) {
    if (e.at("name") == "multiply_moving") {
      ++multiplies;
      // A multiply retires when the engine takes its command (docs/architecture.md): an issue cycle and the
      // handshake at least; at most behind the columns of the multiply before it, 1 + N = 101 of them.
      const int te_cycles = e.at("args").at("te_cycles").get<int>();
      EXPECT_GE(te_cycles, 2) << e.dump();
      EXPECT_LE(te_cycles, 102) << e.dump();
      EXPECT_EQ(e.at("args").at("cycles").get<int>(), te_cycles) << "TE: its own clock is the TE clock";
      EXPECT_NE(e.at("args").at("operands").get<std::string>().find("n=100"), std::string::npos);
    }
    if (e.at("name") == "load_stationary") ++loads;
    if (e.at("name") == "sem_wait") {
      ++waits;
      EXPECT_EQ(e.at("cat"), "semaphore");
    }
  }
  EXPECT_EQ(multiplies, 6);
  EXPECT_EQ(loads, 6);
  EXPECT_GT(waits, 0);
  // Simulated microseconds: the last slice ends with the run (cycle counter x 417 ps).
  EXPECT_NEAR(last_end, report.at("cycles").get<double>() * kTeCycleUs, 2 * kTeCycleUs);
  ASSERT_EQ(tracks[kLaunches].size(), 1u);
}

TEST(TimelineCli, ReportAndTraceShowBusySemaphoreWaitAndIdleTimePerEngine) {
  // vec: memset of 1000 elements per partition = 1 + 1000 x 2.5 = 2501 TE cycles, then sem_signal (1), halt (1).
  // act: sem_wait blocks from cycle 1 until the signal lands at cycle 2502, then activation of 1000 elements =
  // 1 + 1000 x 2 = 2001 cycles, halt (1): the run ends at 2502 + 2001 + 1 = 4504 TE cycles.
  const std::string prog = program_file(
      ".queue vec\n"
      "memset value=1 partitions=16 free=[1000] out=sbuf:0:0x0\n"
      "sem_signal sem=0 value=1\n"
      "halt\n"
      ".queue act\n"
      "sem_wait sem=0 value=1\n"
      "activation func=identity partitions=16 free=[1000] out=sbuf:0:0x1000 in0=sbuf:0:0x0\n"
      "halt\n");
  const std::string trace_path = scratch(".json"), report_path = scratch(".report.json");
  const Result r = run("run --te tlm --program " + prog + " --timeline " + trace_path + " --report " + report_path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const char* line : {"te (Tensor Engine)", "act (Scalar engine)", "vec (Vector engine)", "dma (DMA queue)",
                           "dma engines (0 copies)"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " missing from\n" << r.out;
  }
  const json report = load_json(report_path);
  EXPECT_EQ(report.at("cycles").get<int>(), 4504);
  // The engine window is the device's UPTIME counter in TE cycles at the 2.4 GHz clock, like "simulated time".
  EXPECT_NEAR(report.at("engine_window_us").get<double>(), 4504 / 2400.0, 1e-9);
  const json& vec = report.at("engines").at("vec");
  const json& act = report.at("engines").at("act");
  EXPECT_EQ(vec.at("te_cycles").at("busy").get<int>(), 2503);
  EXPECT_EQ(vec.at("te_cycles").at("sem_wait").get<int>(), 0);
  EXPECT_EQ(vec.at("te_cycles").at("idle").get<int>(), 4504 - 2503);
  EXPECT_EQ(vec.at("busy_cycles").get<int>(), 1001);  // 2503 TE cycles / 2.5, in the Vector clock
  EXPECT_EQ(act.at("te_cycles").at("busy").get<int>(), 1 + 2001 + 1);
  EXPECT_EQ(act.at("te_cycles").at("sem_wait").get<int>(), 2501);
  EXPECT_EQ(act.at("te_cycles").at("idle").get<int>(), 0);
  EXPECT_NEAR(act.at("utilization").get<double>(), 2003.0 / 4504, 1e-9);
  EXPECT_EQ(report.at("engines").at("te").at("te_cycles").at("idle").get<int>(), 4504);
  EXPECT_EQ(report.at("dma_engines").size(), 16u);

  auto tracks = tracks_of(load_json(trace_path));
  ASSERT_EQ(tracks[kAct].size(), 3u);
  const json& wait = tracks[kAct][0];
  EXPECT_EQ(wait.at("name"), "sem_wait");
  EXPECT_EQ(wait.at("args").at("te_cycles").get<int>(), 2502);
  EXPECT_EQ(wait.at("args").at("waited_te_cycles").get<int>(), 2501);
  EXPECT_EQ(tracks[kAct][1].at("name"), "activation");
  EXPECT_EQ(tracks[kAct][1].at("args").at("cycles").get<int>(), 1001);  // 2001 TE cycles at 1.2 GHz, rounded
  EXPECT_NEAR(tracks[kAct][1].at("ts").get<double>(), 2502 * kTeCycleUs, 1e-9);
  ASSERT_EQ(tracks[kVec].size(), 3u);
  EXPECT_EQ(tracks[kVec][0].at("args").at("te_cycles").get<int>(), 2501);
  EXPECT_EQ(tracks[kVec][0].at("args").at("cycles").get<int>(), 1000);

  // The launch's load: vec busy 2501 + 1 + 1 TE cycles, act 1 (the sem_wait's issue; its 2501 blocked cycles are
  // not busy) + 2001 + 1; the Vector engine bounds the launch of 4504 cycles. The report's engine floor line says
  // the same in microseconds: 2503 x 417 ps of 4504 x 417 ps.
  ASSERT_EQ(tracks[kLaunches].size(), 1u);
  const json& launch = tracks[kLaunches][0].at("args");
  EXPECT_NEAR(launch.at("busy_us").at("vec").get<double>(), 2503 * kTeCycleUs, 1e-9);
  EXPECT_NEAR(launch.at("busy_us").at("act").get<double>(), 2003 * kTeCycleUs, 1e-9);
  EXPECT_NEAR(launch.at("busy_us").at("te").get<double>(), 0.0, 1e-12);
  EXPECT_EQ(launch.at("dma_copies").get<int>(), 0);
  EXPECT_EQ(launch.at("bound").get<std::string>(), "vec");
  EXPECT_NEAR(launch.at("bound_us").get<double>(), 2503 * kTeCycleUs, 1e-9);
  // No copies: the bound without DMA start latencies is the same.
  EXPECT_NEAR(launch.at("bytes_bound_us").get<double>(), 2503 * kTeCycleUs, 1e-9);
  EXPECT_NE(r.out.find("engine floor      1.044 us of the launches' 1.878 us (55.6 %): each launch's busiest engine, "
                       "summed (launches bound by vec 1); 1.044 us (55.6 %) with the DMA engines' bytes at their "
                       "bandwidth and no start latency"),
            std::string::npos)
      << r.out;
}

TEST(TimelineCli, TheEngineFloorWithoutStartLatencyCountsTheCopiesBytesAtTheirBandwidth) {
  // One copy of 16 partitions x 4096 BF16 = 131,072 bytes on one of the 16 DMA engines: 1,300 ns of start latency
  // and 131,072 / 23 = 5,698.8 ns of bytes (BRIEF section 2), so the engines' mean, the launch's bound, is
  // 6,998.8 / 16 = 437.4 ns; with the bytes over all 16 engines at 23 B/ns and no start latency, 131,072 / 368 =
  // 356.2 ns.
  const std::string prog = program_file(
      ".queue dma\n"
      "dma_copy src=hbm:0x0 dst=sbuf:0x0 type=bf16 count=[4096,16] dst_stride=[2,196608]\n"
      "halt\n");
  const std::string trace_path = scratch(".json");
  const Result r = run("run --te tlm --program " + prog + " --timeline " + trace_path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto tracks = tracks_of(load_json(trace_path));
  ASSERT_EQ(tracks[kLaunches].size(), 1u);
  const json& launch = tracks[kLaunches][0].at("args");
  EXPECT_EQ(launch.at("dma_bytes").get<int>(), 131072);
  EXPECT_EQ(launch.at("bound").get<std::string>(), "dma engines");
  EXPECT_NEAR(launch.at("bound_us").get<double>(), (1300.0 + 131072.0 / 23.0) / 16.0 / 1000.0, 1e-5);
  EXPECT_NEAR(launch.at("bytes_bound_us").get<double>(), 131072.0 / (16.0 * 23.0) / 1000.0, 1e-5);
  EXPECT_NE(r.out.find("(launches bound by dma engines 1); 0.356 us"), std::string::npos) << r.out;
}

TEST(TimelineCli, MultiLaunchWorkloadGivesOneContinuousTimeline) {
  // The MLP workload runs its programs one after another (one launch each); a small shape keeps it fast.
  const std::string trace_path = scratch(".json"), report_path = scratch(".report.json");
  const Result r = run("run --te tlm --workload mlp --seq 16 --d-model 32 --heads 1 --d-ff 64 --check-hazards "
                       "--check-uninit --timeline " + trace_path + " --report " + report_path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const json trace = load_json(trace_path), report = load_json(report_path);
  auto tracks = tracks_of(trace);
  const std::vector<json>& launches = tracks[kLaunches];
  ASSERT_GE(launches.size(), 2u) << "several programs";
  EXPECT_EQ(trace.at("otherData").at("launches").get<size_t>(), launches.size());
  for (size_t i = 0; i + 1 < launches.size(); ++i) {
    // Back to back on one time axis: the next launch starts where the previous one ended.
    EXPECT_NEAR(launches[i].at("ts").get<double>() + launches[i].at("dur").get<double>(),
                launches[i + 1].at("ts").get<double>(), 1e-6);
    EXPECT_GT(launches[i + 1].at("ts").get<double>(), launches[i].at("ts").get<double>());
  }
  const auto launch_of = [&](double ts) {
    for (size_t i = 0; i < launches.size(); ++i) {
      if (ts >= launches[i].at("ts").get<double>() - 1e-9 &&
          ts < launches[i].at("ts").get<double>() + launches[i].at("dur").get<double>() - 1e-9) {
        return int(i);
      }
    }
    return -1;
  };
  size_t queue_slices = 0, reported = 0;
  for (int q : {kTe, kDma, kAct, kVec}) {
    reported += report.at("engines").at(q == kTe ? "te" : q == kDma ? "dma" : q == kAct ? "act" : "vec")
                    .at("instructions").get<size_t>();
    int launch = -1;
    size_t next_index = 0;
    for (const json& e : tracks[q]) {
      ++queue_slices;
      const int l = launch_of(e.at("ts").get<double>());
      ASSERT_GE(l, 0) << "slice outside every launch: " << e.dump();
      if (l != launch) {  // a new program: its instruction indices start again at 0
        EXPECT_GT(l, launch);
        launch = l;
        next_index = 0;
      }
      EXPECT_EQ(e.at("args").at("index").get<size_t>(), next_index++) << "queue " << q << ", launch " << l;
    }
  }
  EXPECT_EQ(queue_slices, reported);
  EXPECT_EQ(trace.at("otherData").at("instructions").get<size_t>(), queue_slices);
}

TEST(TimelineCli, TimelineFileThatCannotBeWrittenIsBadInput) {
  const Result r = run("run --te tlm --workload gemm -m 16 -k 16 -n 16 --timeline /nonexistent/dir/t.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--timeline /nonexistent/dir/t.json: cannot open for writing"), std::string::npos) << r.err;
}

TEST(TimelineCli, MatmulWritesATimelineBeforeItsPassLine) {
  // S [K=20, M=3] and M [K=20, N=5], float32 .npy written by hand (format 1.0 header, little-endian).
  const auto npy = [](int rows, int cols) {
    const std::string path = next_scratch(".npy");
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(rows) + ", " +
                         std::to_string(cols) + "), }";
    header.append(64 - (10 + header.size() + 1) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const uint16_t len = uint16_t(header.size());
    out.put(char(len & 0xFF)).put(char(len >> 8));
    out << header;
    for (int i = 0; i < rows * cols; ++i) {
      const float v = float(i % 7) * 0.25f;
      out.write(reinterpret_cast<const char*>(&v), 4);
    }
    return path;
  };
  const std::string s = npy(20, 3), m = npy(20, 5), out = scratch(".out.npy"), trace_path = scratch(".json");
  const Result r = run("matmul --te tlm --dtype bf16 --stationary " + s + " --moving " + m + " --out " + out +
                       " --timeline " + trace_path);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  auto tracks = tracks_of(load_json(trace_path));
  int multiplies = 0;
  for (const json& e : tracks[kTe]) multiplies += e.at("name") == "multiply_moving";
  EXPECT_EQ(multiplies, 2);  // K = 20 on a 16-row array: two K tiles
}

// ---- Wrong programs: a clear one-line error naming engine, instruction index and cause; exit 2.

TEST(WrongProgramCli, MisalignedPartitionStartNamesInstructionAndField) {
  // 8 partitions may start at a multiple of 32 only (the quadrant rule, docs/isa.md): partition 8 is misaligned.
  const std::string prog = program_file(
      ".queue vec\n"
      "memset value=0 partitions=16 free=[4] out=sbuf:0:0x0\n"
      "tensor_copy partitions=8 free=[4] out=sbuf:0:0x100 in0=sbuf:8:0x0\n"
      "halt\n");
  const Result r = run("run --te tlm --program " + prog);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("partition_align"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("queue vec, instruction 1, field in0_partition"), std::string::npos) << r.err;
}

TEST(WrongProgramCli, PsumAccumulateFromANonTeEngineIsRejected) {
  // Program text: `acc` is a multiply_moving flag only.
  Result r = run("run --te tlm --program " +
                 program_file(".queue vec\ntensor_copy partitions=16 free=[16] out=psum:0:0x0 in0=sbuf:0:0x0 acc\n"
                              "halt\n"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tensor_copy: unknown field 'acc'"), std::string::npos) << r.err;
  // A binary whose activation has the accumulate bit (flags bit 0) set: named by queue, instruction and field.
  const std::string text = program_file(
      ".queue act\nnop\nactivation func=relu partitions=16 free=[16] out=psum:0:0x0 in0=sbuf:0:0x0\nhalt\n");
  const std::string bin = scratch(".bin");
  ASSERT_EQ(run("asm " + text + " -o " + bin).exit_code, 0);
  std::string bytes = slurp(bin);
  const size_t instr1 = 12 + 8 * 1 + 64 * 1;  // header, one queue table entry, instruction 1
  ASSERT_GT(bytes.size(), instr1 + 1);
  bytes[instr1 + 1] = char(bytes[instr1 + 1] | 0x01);
  std::ofstream(bin, std::ios::binary) << bytes;
  r = run("run --te tlm --program " + bin);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("queue act, instruction 1: field flags"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("only the TE accumulates into PSUM"), std::string::npos) << r.err;
}

TEST(WrongProgramCli, UninitialisedReadInCheckedModeNamesEngineInstructionAndBytes) {
  // memset writes 8 FP32 per partition (bytes 0x0..0x1f); the copy reads 16 (0x0..0x3f).
  const std::string prog = program_file(
      ".queue vec\n"
      "memset value=1 partitions=16 free=[8] out=sbuf:0:0x0\n"
      "tensor_copy partitions=16 free=[16] out=sbuf:0:0x100 in0=sbuf:0:0x0\n"
      "halt\n");
  Result r = run("run --te tlm --program " + prog);
  EXPECT_EQ(r.exit_code, 0) << "without the checked mode fresh SBUF reads as 0: " << r.err;
  r = run("run --te tlm --check-uninit --program " + prog);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("uninit_read"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("queue vec, instruction 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tensor_copy reads sbuf partition 0 bytes 0x20..0x3f"), std::string::npos) << r.err;
}

TEST(WrongProgramCli, UninitialisedPsumAccumulateIsReportedForTheTensorEngine) {
  // multiply_moving acc reads what PSUM holds: nothing was written there.
  const std::string prog = program_file(
      ".queue vec\n"
      "memset value=1 partitions=16 free=[32] type=bf16 out=sbuf:0:0x0\n"
      "sem_signal sem=0 value=1\n"
      "halt\n"
      ".queue te\n"
      "sem_wait sem=0 value=1\n"
      "load_stationary dtype=bf16 sbuf=0x0 k=16 m=16\n"
      "multiply_moving dtype=bf16 sbuf=0x0 psum=0x0 k=16 n=32 acc\n"
      "halt\n");
  EXPECT_EQ(run("run --te tlm --program " + prog).exit_code, 0);
  const Result r = run("run --te tlm --check-uninit --program " + prog);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("queue te, instruction 2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("multiply_moving reads psum partition 0 bytes 0x0..0x7f"), std::string::npos) << r.err;
}

TEST(WrongProgramCli, AnOddKFp8OperandsLastPairReadsOnlyItsLowBytes) {
  // FP8 holds operand partitions 2j and 2j + 1 in one SBUF partition (docs/isa.md, load_stationary): with
  // K = 33 the last SBUF partition feeds one operand partition, and the TE reads its low bytes only. The GEMM kernel
  // writes just those, so the uninitialised-read checker has nothing to report (it named the high bytes before).
  for (const std::string dt : {"fp8e4m3", "fp8e5m2"}) {
    const Result r = run("run --te tlm --check-uninit --workload gemm -m 5 -k 33 -n 7 --dtype " + dt);
    EXPECT_EQ(r.exit_code, 0) << dt << "\n" << r.out << r.err;
    EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
  }
}

TEST(WrongProgramCli, MissingSemaphoreIsAHazardNamingBothInstructions) {
  // vec writes what act reads, with the hand-off semaphore missing.
  const std::string racy = program_file(
      ".queue vec\n"
      "memset value=1 partitions=16 free=[64] out=sbuf:0:0x0\n"
      "halt\n"
      ".queue act\n"
      "activation func=exp partitions=16 free=[64] out=sbuf:0:0x400 in0=sbuf:0:0x0\n"
      "halt\n");
  EXPECT_EQ(run("run --te tlm --program " + racy).exit_code, 0) << "without the checker the race goes unnoticed";
  const std::string trace_path = scratch(".json");
  Result r = run("run --te tlm --check-hazards --program " + racy + " --timeline " + trace_path);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("device error hazard"), std::string::npos) << r.err;
  // Both start at cycle 0: act reads at its start, vec writes when its memset ends.
  EXPECT_NE(r.err.find("queue vec, instruction 0 (memset writes sbuf partition 0 bytes 0x0..0xff, which act "
                       "instruction 0 (activation) read before"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("write-after-read"), std::string::npos) << r.err;
  // The trace, written up to the error, ends the vec track with the failing memset (1 + 64 x 2.5 = 161 TE cycles).
  EXPECT_NE(r.out.find("up to the device error"), std::string::npos) << r.out;
  auto tracks = tracks_of(load_json(trace_path));
  ASSERT_EQ(tracks[kVec].size(), 1u);
  EXPECT_EQ(tracks[kVec][0].at("name"), "memset");
  EXPECT_EQ(tracks[kVec][0].at("cat"), "error");
  EXPECT_EQ(tracks[kVec][0].at("args").at("te_cycles").get<int>(), 161);
  ASSERT_EQ(tracks[kLaunches].size(), 1u);
  EXPECT_EQ(tracks[kLaunches][0].at("name"), "launch 1 (error)");

  // The same hand-off with the semaphore: no hazard.
  const std::string ordered = program_file(
      ".queue vec\n"
      "memset value=1 partitions=16 free=[64] out=sbuf:0:0x0\n"
      "sem_signal sem=1 value=1\n"
      "halt\n"
      ".queue act\n"
      "sem_wait sem=1 value=1\n"
      "activation func=exp partitions=16 free=[64] out=sbuf:0:0x400 in0=sbuf:0:0x0\n"
      "halt\n");
  r = run("run --te tlm --check-hazards --check-uninit --program " + ordered);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(WrongProgramCli, HazardCheckerFollowsSemaphoreChainsAndDmaCompletion) {
  // dma copies into SBUF and signals (after the copy completed); te waits, loads, multiplies into PSUM, signals;
  // vec waits and reads PSUM; act waits on vec and rewrites what the DMA wrote: every pair ordered by a chain.
  const std::string chain = program_file(
      ".queue dma\n"
      "dma_copy src=hbm:0x0 dst=sbuf:0x0 type=bf16 count=[16,16] dst_stride=[2,196608]\n"
      "sem_signal sem=0 value=1\n"
      "halt\n"
      ".queue te\n"
      "sem_wait sem=0 value=1\n"
      "load_stationary dtype=bf16 sbuf=0x0 k=16 m=16\n"
      "multiply_moving dtype=bf16 sbuf=0x0 psum=0x0 k=16 n=16\n"
      "sem_signal sem=1 value=1\n"
      "halt\n"
      ".queue vec\n"
      "sem_wait sem=1 value=1\n"
      "tensor_copy partitions=16 free=[16] out=sbuf:0:0x100 in0=psum:0:0x0\n"
      "sem_signal sem=2 value=1\n"
      "halt\n"
      ".queue act\n"
      "sem_wait sem=2 value=1\n"
      "activation func=identity partitions=16 free=[16] type=bf16 out=sbuf:0:0x0 in0=sbuf:0:0x0\n"
      "halt\n");
  Result r = run("run --te tlm --check-hazards --check-uninit --program " + chain);
  EXPECT_EQ(r.exit_code, 0) << r.err;

  // Without the dma -> te semaphore the TE reads SBUF while the copy is still in flight: the copy's write lands
  // 1.3 us later, on its DMA engine.
  const std::string racy = program_file(
      ".queue dma\n"
      "dma_copy src=hbm:0x0 dst=sbuf:0x0 type=bf16 count=[16,16] dst_stride=[2,196608]\n"
      "halt\n"
      ".queue te\n"
      "load_stationary dtype=bf16 sbuf=0x0 k=16 m=16\n"
      "halt\n");
  r = run("run --te tlm --check-hazards --program " + racy);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("queue dma, instruction 0 (dma_copy on DMA engine 0 writes sbuf"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("which te instruction 0 (load_stationary) read before"), std::string::npos) << r.err;

  // Two engines only reading the same bytes is no hazard.
  const std::string readers = program_file(
      ".queue vec\n"
      "memset value=2 partitions=16 free=[32] out=sbuf:0:0x0\n"
      "sem_signal sem=0 value=2\n"
      "tensor_copy partitions=16 free=[32] out=sbuf:0:0x200 in0=sbuf:0:0x0\n"
      "halt\n"
      ".queue act\n"
      "sem_wait sem=0 value=2\n"
      "activation func=exp partitions=16 free=[32] out=sbuf:0:0x400 in0=sbuf:0:0x0\n"
      "halt\n");
  r = run("run --te tlm --check-hazards --program " + readers);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(WrongProgramCli, CheckersRunTheGemmKernelCleanly) {
  // The tiled GEMM kernel orders every hand-off with semaphores and writes before it reads.
  const Result r = run("run --te tlm --workload gemm -k 40 -m 24 -n 600 --check-hazards --check-uninit");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(last_line(r.out).rfind("PASS", 0), 0u) << r.out;
}

}  // namespace
}  // namespace trnsim::test
