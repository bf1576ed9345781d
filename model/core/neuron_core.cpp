#include "model/core/neuron_core.h"

#include <stdexcept>

#include <fmt/core.h>

namespace trnsim::model {

namespace {
std::unique_ptr<TeCompute> checked(std::unique_ptr<TeCompute> te, const ChipConfig& c) {
  if (!te || te->rows() != c.te_rows || te->cols() != c.te_cols) {
    throw std::invalid_argument(fmt::format("NeuronCore: the TE datapath is {}x{} but config {} needs {}x{}",
                                            te ? te->rows() : 0, te ? te->cols() : 0, c.name, c.te_rows,
                                            c.te_cols));
  }
  return te;
}
}  // namespace

NeuronCore::NeuronCore(const sc_core::sc_module_name& name, const ChipConfig& config,
                       std::unique_ptr<TeCompute> te_datapath)
    : sc_module(name),
      control("control", config),
      hbm("hbm", config.hbm_bytes),
      sbuf("sbuf", config.sbuf_bytes()),
      psum("psum", config.psum_bytes()),
      bus("bus"),
      host("host"),
      te("te", control, checked(std::move(te_datapath), config)),
      dma("dma", control),
      act("act", control),
      vec("vec", control),
      cc("cc", control) {
  // Targets, in the order of the address map.
  bus.map("mmio", regs::MMIO_BASE, 64 * 1024);
  bus.initiator_socket.bind(control.socket);
  bus.map("sbuf", regs::SBUF_BASE, config.sbuf_bytes());
  bus.initiator_socket.bind(sbuf.socket);
  bus.map("psum", regs::PSUM_BASE, config.psum_bytes());
  bus.initiator_socket.bind(psum.socket);
  bus.map("hbm", regs::HBM_BASE, config.hbm_bytes);
  bus.initiator_socket.bind(hbm.socket);
  // Initiators.
  host.socket.bind(bus.target_socket);
  te.bus.bind(bus.target_socket);
  dma.bus.bind(bus.target_socket);
  act.bus.bind(bus.target_socket);
  vec.bus.bind(bus.target_socket);
  cc.bus.bind(bus.target_socket);
}

}  // namespace trnsim::model
