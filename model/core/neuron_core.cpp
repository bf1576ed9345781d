#include "model/core/neuron_core.h"

#include <initializer_list>
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

NeuronCore::NeuronCore(const sc_core::sc_module_name& name, const ChipConfig& config, int index, Memory& chip_hbm,
                       HbmModel& hbm_model, std::unique_ptr<TeCompute> te_datapath)
    : sc_module(name),
      control("control", config),
      hbm(chip_hbm),
      sbuf("sbuf", config.sbuf_bytes()),
      psum("psum", config.psum_bytes()),
      bus("bus"),
      host("host"),
      host_port("host_port"),
      te("te", control, checked(std::move(te_datapath), config)),
      dma("dma", control),
      act("act", control),
      vec("vec", control),
      cc("cc", control),
      index_(index) {
  control.set_core_index(index);
  // Targets, in the order of the address map.
  bus.map("mmio", regs::MMIO_BASE, 64 * 1024);
  bus.initiator_socket.bind(control.socket);
  bus.map("sbuf", regs::SBUF_BASE, config.sbuf_bytes());
  bus.initiator_socket.bind(sbuf.socket);
  bus.map("psum", regs::PSUM_BASE, config.psum_bytes());
  bus.initiator_socket.bind(psum.socket);
  bus.map("hbm", regs::HBM_BASE, config.hbm_bytes);
  bus.initiator_socket.bind(hbm.socket);
  bus.map("host", regs::HOST_BASE, regs::HOST_SIZE);
  bus.initiator_socket.bind(host_port.socket);
  dma.use_host_port(&host_port);
  dma.use_hbm(&hbm_model);
  // Initiators.
  host.socket.bind(bus.target_socket);
  te.bus.bind(bus.target_socket);
  dma.bus.bind(bus.target_socket);
  act.bus.bind(bus.target_socket);
  vec.bus.bind(bus.target_socket);
  cc.bus.bind(bus.target_socket);
  const std::string backend = te.compute().name();
  control.set_te_backend(backend == "rtl"        ? regs::TE_BACKEND_RTL
                         : backend == "lockstep" ? regs::TE_BACKEND_LOCKSTEP
                                                 : regs::TE_BACKEND_TLM);
  // The performance counter registers read the engines' statistics.
  control.set_perf_source([this] {
    CoreControl::PerfCounters p;
    for (const QueueEngine* e : std::initializer_list<const QueueEngine*>{&te, &dma, &act, &vec, &cc}) {
      const auto& st = e->stats();
      const sc_core::sc_time waits = st.sem_wait + st.dma_wait;  // parts of active time (never more than it)
      p.queues[size_t(e->engine())] = {st.active > waits ? st.active - waits : sc_core::SC_ZERO_TIME, st.sem_wait,
                                       st.dma_wait, st.retired};
    }
    for (size_t i = 0; i < dma.engine_busy().size(); ++i) {
      p.dma.push_back({dma.engine_busy()[i], dma.engine_copies()[i]});
    }
    p.te_macs = te.macs();
    p.te_busy = te.busy_cycles();
    return p;
  });
}

}  // namespace trnsim::model
