#include "firmware/kernels/collective_kernel.h"

#include <stdexcept>

namespace trnsim::kernels {

isa::Instruction cc_collective(isa::Opcode op, isa::DataType dtype, isa::CcAlgorithm algorithm, uint64_t hbm_addr,
                               uint64_t count) {
  if (op != isa::Opcode::kAllReduce && op != isa::Opcode::kAllGather && op != isa::Opcode::kReduceScatter) {
    throw std::invalid_argument("cc_collective: " + std::string(isa::opcode_name(op).value_or("?")) +
                                " is not all_reduce, all_gather or reduce_scatter");
  }
  isa::Instruction i;
  i.op = op;
  i.cc.dtype = dtype;
  i.cc.algorithm = algorithm;
  i.cc.hbm_addr = hbm_addr;
  i.cc.count = count;
  return i;
}

namespace {
isa::Instruction p2p(isa::Opcode op, uint32_t peer, uint64_t hbm_addr, uint64_t bytes) {
  isa::Instruction i;
  i.op = op;
  i.cc.peer = peer;
  i.cc.hbm_addr = hbm_addr;
  i.cc.count = bytes;
  return i;
}
}  // namespace

isa::Instruction cc_send(uint32_t peer, uint64_t hbm_addr, uint64_t bytes) {
  return p2p(isa::Opcode::kSend, peer, hbm_addr, bytes);
}

isa::Instruction cc_recv(uint32_t peer, uint64_t hbm_addr, uint64_t bytes) {
  return p2p(isa::Opcode::kRecv, peer, hbm_addr, bytes);
}

isa::Program make_collective_program(isa::Opcode op, isa::DataType dtype, isa::CcAlgorithm algorithm,
                                     uint64_t hbm_addr, uint64_t count) {
  isa::Program p;
  p.queue(isa::Engine::kCc) = {cc_collective(op, dtype, algorithm, hbm_addr, count), isa::Instruction::halt()};
  return p;
}

isa::Program make_gemm_allreduce_program(const driver::DeviceInfo& info, const GemmLayout& layout,
                                         isa::CcAlgorithm algorithm) {
  Pipeline pipe(info);
  const std::vector<Pipeline::OpId> drains = add_gemm(pipe, info, layout);
  pipe.add(isa::Engine::kCc,
           {cc_collective(isa::Opcode::kAllReduce, isa::DataType::kFp32, algorithm, layout.out_hbm,
                          uint64_t(layout.m) * uint64_t(layout.n))},
           drains);
  return pipe.build();
}

std::vector<ChipRun> run_on_chips(const std::vector<driver::Driver*>& drivers, uint64_t timeout_cycles,
                                  const std::function<void()>& wait_all) {
  for (driver::Driver* d : drivers) d->start();
  if (wait_all) wait_all();
  std::vector<ChipRun> out(drivers.size());
  for (size_t c = 0; c < drivers.size(); ++c) {
    try {
      out[c].result = drivers[c]->wait(timeout_cycles);
    } catch (const driver::DeviceFault& f) {
      out[c].error = f.what();
      out[c].err_code = f.code();
      out[c].err_queue = f.queue();
      out[c].err_index = f.index();
      out[c].err_info = f.info();
    } catch (const driver::DriverError& e) {
      out[c].error = e.what();
    }
  }
  return out;
}

}  // namespace trnsim::kernels
