// NeuronLink formats and port-interface helpers. See noc_flit.h, noc_ports.h.
#include "model/noc/noc_flit.h"

#include <ctime>

#include "model/noc/noc_ports.h"

namespace trnsim::model::noc {

std::string Coord::str(int ndim) const {
  std::string s = "(";
  for (int d = 0; d < ndim; ++d) s += (d ? "," : "") + std::to_string(c[static_cast<size_t>(d)]);
  return s + ")";
}

std::string link_port_name(int l) {
  static const char* const dims = "xyz";
  return std::string(l % 2 ? "-" : "+") + dims[(l / 2) % 3];
}

Coord NocPorts::coord(int n) const {
  Coord c;
  c[0] = n % size(0);
  c[1] = (n / size(0)) % size(1);
  c[2] = n / (size(0) * size(1));
  return c;
}

int NocPorts::node(const Coord& c) const { return c[0] + size(0) * (c[1] + size(1) * c[2]); }

std::string NocPorts::node_name(int n) const { return coord(n).str(ndim()); }

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

double step_clock_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace trnsim::model::noc
