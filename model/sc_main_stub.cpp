// libsystemc.so defines main() and needs an sc_main() to link, but trnsim programs have their own main() and
// start the simulation through the in-process device (cosim/device/sim_device.h). This sc_main only satisfies the
// linker; it is never called.
#include <cstdio>

extern "C" int sc_main(int /*argc*/, char* /*argv*/[]) {
  std::fputs("trnsim: sc_main is not an entry point of this program\n", stderr);
  return 2;
}
