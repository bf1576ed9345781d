// Writing the coverage counters of verilated RTL (coverage builds only, `make coverage`, docs/verification.md).
#pragma once

class VerilatedContext;

namespace trnsim::cosim {

/// Whether this binary's verilated models count line, toggle and user (cover property) coverage, i.e. it was
/// configured with -DTRNSIM_COVERAGE=ON.
bool rtl_coverage_built() noexcept;

/// In a coverage build, writes the coverage counters of `context` (all models created in it) to
/// `$TRNSIM_COVERAGE_DIR/<block>-<pid>-<n>.dat` (n counts the writes of this process), in Verilator's coverage format
/// for `verilator_coverage`. Does nothing in other builds or when TRNSIM_COVERAGE_DIR is unset or empty. Call it once
/// per context, when its models are finished (after final()). Never throws: a write failure is reported on stderr.
void write_rtl_coverage(VerilatedContext& context, const char* block) noexcept;

}  // namespace trnsim::cosim
