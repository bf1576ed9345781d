// One NeuronCore: a top that only wires. Its memories (SBUF, PSUM; the chip's HBM, shared, is bound in), the MMIO
// register block, the interconnect, the host bridge, the bus-master port into host memory and the engines' queues
// (TE, DMA, Scalar/act, Vector, collective), bound on the core's device address map (docs/registers.md). The chip
// (chip.h) holds the cores.
#pragma once

#include <memory>

#include <systemc>

#include "model/bus/interconnect.h"
#include "model/config/chip_config.h"
#include "model/core/collective_engine.h"
#include "model/core/core_control.h"
#include "model/core/dma_engine.h"
#include "model/core/host_bridge.h"
#include "model/core/host_port.h"
#include "model/core/scalar_engine.h"
#include "model/core/tensor_engine.h"
#include "model/core/vector_engine.h"
#include "model/mem/hbm_model.h"
#include "model/mem/memory.h"

namespace trnsim::model {

class NeuronCore : public sc_core::sc_module {
 public:
  /// Core `index` of its chip (CORE_ID), on the chip's `hbm` and its bandwidth model (both outlive the core).
  /// `te` is the Tensor Engine datapath; its size must equal the config's (std::invalid_argument otherwise).
  NeuronCore(const sc_core::sc_module_name& name, const ChipConfig& config, int index, Memory& hbm,
             HbmModel& hbm_model, std::unique_ptr<TeCompute> te);

  const ChipConfig& config() const { return control.config(); }
  int index() const { return index_; }

  CoreControl control;
  Memory& hbm;  ///< the chip's
  Memory sbuf, psum;
  Interconnect bus;
  HostBridge host;
  HostPort host_port;  ///< bus-master DMA into host memory (space host), once the host side attach()es some
  TensorEngine te;
  DmaEngine dma;
  ScalarEngine act;
  VectorEngine vec;
  CollectiveEngine cc;  ///< queue 4; a 1-chip system until attach()ed to a CollectiveHub

 private:
  int index_;
};

}  // namespace trnsim::model
