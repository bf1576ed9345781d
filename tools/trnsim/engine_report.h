// The per-engine utilization report of `trnsim run` (and of every workload that runs on a DeviceSession): for each
// engine queue (TE, Scalar/act, Vector, DMA queue) and the DMA engines, busy cycles and time, and where the rest of
// the simulated time went: waiting on a semaphore, waiting for DMA, idle. docs/timeline.md explains the columns.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "firmware/isa/isa.h"
#include "tools/trnsim/device_session.h"

namespace trnsim::tool {

/// Prints the table for everything the session's device ran so far (all launches since it was opened; the device's
/// performance counter registers, read through the driver) to stdout,
/// indented like the rest of the run report, and stores the same figures in the report JSON: `j["engines"]`, an
/// object keyed by queue name (te, dma, act, vec, cc), each {title, clock_mhz, instructions, busy_cycles (own clock),
/// busy_us, utilization, sem_wait_us, dma_wait_us, idle_us, te_cycles {busy, sem_wait, dma_wait, idle}};
/// `j["dma_engines"]`, an array of {engine, copies, busy_us, utilization}; `j["engine_window_us"]`, the simulated
/// time the fractions refer to. Then writes the --timeline file, if asked (DeviceSession::write_timeline).
void print_engine_report(const DeviceSession& s, nlohmann::json& j);

/// The report's `retired` line: instructions retired per queue (te, dma, act, vec, cc), summed over every core that ran.
void print_retired(const std::array<uint64_t, isa::kNumQueues>& retired);

/// With --cores N > 1: one line per core that ran (`which[i]`: its index into s.cores(), `runs[i]` its launch,
/// `te_macs[i]` its TE multiply-accumulates) with its cycles, TE MACs and utilization of its own array and its
/// retired instructions per queue, and `j["cores"]`, the same as an array. The engine table after it is core 0's.
void print_core_table(const DeviceSession& s, const std::vector<int>& which, const std::vector<driver::RunResult>& runs,
                      const std::vector<uint64_t>& te_macs, nlohmann::json& j);

}  // namespace trnsim::tool
