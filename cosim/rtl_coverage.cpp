// See rtl_coverage.h. Compiled into trn_rtl (rtl/CMakeLists.txt), whose sources see Verilator's VM_COVERAGE.
#include "rtl_coverage.h"  // beside this file: trn_rtl has no include path to the repository root

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include <verilated.h>
#if VM_COVERAGE
#include <verilated_cov.h>
#endif

namespace trnsim::cosim {

bool rtl_coverage_built() noexcept { return VM_COVERAGE != 0; }

void write_rtl_coverage(VerilatedContext& context, const char* block) noexcept {
#if VM_COVERAGE
  const char* dir = std::getenv("TRNSIM_COVERAGE_DIR");
  if (dir == nullptr || *dir == '\0') return;
  static std::atomic<unsigned> serial{0};
  try {
    const std::string path = std::string(dir) + "/" + block + "-" + std::to_string(::getpid()) + "-" +
                             std::to_string(serial++) + ".dat";
    // Per instance: otherwise Verilator merges the points of one source line across generate iterations (every
    // router port's and VC's cover point would become one). trnsim_coverage merges instances itself.
    context.coveragep()->forcePerInstance(true);
    context.coveragep()->write(path.c_str());
  } catch (...) {
    std::fprintf(stderr, "trnsim: could not write RTL coverage of %s to %s\n", block, dir);
  }
#else
  (void)context;
  (void)block;
#endif
}

}  // namespace trnsim::cosim
