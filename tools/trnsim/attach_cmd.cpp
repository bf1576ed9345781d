// `trnsim attach PATH`: a debug client beside the driver of a served device (`trnsim serve --socket PATH`), as a
// driver developer uses debugfs or JTAG: the device's state at a glance, registers read and written by name (the
// generated register map), memory dumped to .npy. It never resets the device and never waits for it.
#include <fmt/core.h>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "firmware/driver/driver.h"
#include "firmware/driver/register_names.h"
#include "firmware/driver/remote_device.h"
#include "firmware/golden/engine_golden.h"
#include "firmware/isa/isa.h"
#include "spec/trn_regs.h"
#include "tools/trnsim/commands.h"
#include "tools/trnsim/npy_io.h"

namespace trnsim::tool {
namespace {

struct AttachOptions {
  std::string socket;
  std::vector<std::string> reads, writes;
  std::string dump;    ///< hbm:ADDR | sbuf:P:OFF | psum:P:OFF
  uint64_t count = 0;  ///< elements to dump
  std::string dtype = "fp32";
  std::string out;
};

uint64_t parse_number(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
    const uint64_t v = std::stoull(hex ? text.substr(2) : text, &used, hex ? 16 : 10);  // never octal
    if (hex) used += 2;
    if (used == text.size() && !text.empty() && text[0] != '-') return v;
  } catch (const std::exception&) {
  }
  throw BadInput(fmt::format("{}: '{}' is not a number (decimal or 0x hex)", what, text));
}

void print_status(const driver::Driver& drv) {
  driver::Device& d = drv.device();
  const uint32_t status = d.read_reg(regs::STATUS);
  std::string flags;
  for (const auto& [mask, name] : {std::pair{regs::STATUS_BUSY_MASK, "busy"},
                                   {regs::STATUS_DONE_MASK, "done"},
                                   {regs::STATUS_ERROR_MASK, "error"}}) {
    if (status & mask) flags += flags.empty() ? name : std::string(", ") + name;
  }
  const driver::DeviceInfo& info = drv.info();
  if (info.system_chips() > 1) {
    const driver::CollectiveCounters cc = drv.read_collective_counters();
    fmt::print("  CHIP_ID           {} of {} ({} torus), {} collectives and sends/recvs completed\n", info.chip_id,
               info.system_chips(), fmt::join(info.torus, "x"), cc.ops);
  }
  fmt::print("  STATUS            0x{:08X} ({})\n", status, flags.empty() ? "idle" : flags);
  fmt::print("  CYCLE             {} (this launch), UPTIME {}\n", drv.read_reg64(regs::CYCLE_LO, regs::CYCLE_HI),
             drv.read_reg64(regs::UPTIME_LO, regs::UPTIME_HI));
  if (status & regs::STATUS_ERROR_MASK) {
    const uint32_t code = d.read_reg(regs::ERR_CODE);
    fmt::print("  ERR               {} ({}): queue {}, instruction {}, info {}\n", regs::err_code_name(code),
               regs::err_code_text(code), d.read_reg(regs::ERR_QUEUE), d.read_reg(regs::ERR_INDEX),
               d.read_reg(regs::ERR_INFO));
  }
  fmt::print("  {:<6} {:>8} {:>8} {:<8} {:>10}\n", "queue", "Q_PC", "Q_LEN", "Q_STATE", "Q_RETIRED");
  const uint32_t queues = drv.info().num_queues;
  for (uint32_t q = 0; q < queues; ++q) {
    const std::string name =
        q < uint32_t(isa::kNumQueues) ? std::string(isa::engine_name(isa::Engine(q))) : std::to_string(q);
    fmt::print("  {:<6} {:>8} {:>8} {:<8} {:>10}\n", name, d.read_reg(regs::queue_reg(q, regs::Q_PC)),
               d.read_reg(regs::queue_reg(q, regs::Q_LEN)),
               regs::queue_state_name(d.read_reg(regs::queue_reg(q, regs::Q_STATE))),
               d.read_reg(regs::queue_reg(q, regs::Q_RETIRED)));
  }
  std::string sems;
  const uint32_t nsem = std::min<uint32_t>(drv.info().num_semaphores, regs::SEM_COUNT);
  for (uint32_t s = 0; s < nsem; ++s) {
    const uint32_t v = d.read_reg(regs::sem_reg(s));
    if (v != 0) sems += fmt::format(" SEM[{}]={}", s, v);
  }
  fmt::print("  semaphores       {}\n", sems.empty() ? " all 0" : sems);
}

/// hbm:ADDR, sbuf:P:OFF or psum:P:OFF -> a device address; checks that `bytes` fit.
uint64_t dump_address(const driver::DeviceInfo& info, const std::string& spec, uint64_t bytes) {
  const auto parts = [&] {
    std::vector<std::string> v;
    size_t at = 0;
    for (size_t colon; (colon = spec.find(':', at)) != std::string::npos; at = colon + 1)
      v.push_back(spec.substr(at, colon - at));
    v.push_back(spec.substr(at));
    return v;
  }();
  const auto bad = [&](const std::string& why) {
    return BadInput(fmt::format("--dump {}: {} (hbm:ADDR, sbuf:PARTITION:OFFSET or psum:PARTITION:OFFSET)", spec, why));
  };
  if (parts[0] == "hbm" && parts.size() == 2) {
    const uint64_t hbm = info.hbm_bytes;
    const uint64_t addr = parse_number(parts[1], "--dump address");
    if (addr > hbm || bytes > hbm - addr) throw bad(fmt::format("{} bytes do not fit in the {}-byte HBM", bytes, hbm));
    return regs::HBM_BASE + addr;
  }
  if ((parts[0] == "sbuf" || parts[0] == "psum") && parts.size() == 3) {
    const bool sbuf = parts[0] == "sbuf";
    const uint32_t partitions = sbuf ? info.sbuf_partitions : info.psum_partitions;
    const uint32_t pbytes = sbuf ? info.sbuf_partition_bytes : info.psum_partition_bytes;
    const uint64_t p = parse_number(parts[1], "--dump partition"), off = parse_number(parts[2], "--dump offset");
    if (p >= partitions) throw bad(fmt::format("partition {} of {}", p, partitions));
    if (!sbuf && off % 4 != 0) throw bad(fmt::format("offset {}: PSUM holds FP32 words, 4-byte aligned", off));
    if (off > pbytes || bytes > pbytes - off) {
      throw bad(fmt::format("{} bytes at offset {} do not fit in a {}-byte partition", bytes, off, pbytes));
    }
    return (sbuf ? regs::SBUF_BASE : regs::PSUM_BASE) + p * pbytes + off;
  }
  throw bad("not a memory location");
}

int attach(const AttachOptions& o) {
  // Resolve every name before touching the device: a typo must not leave half the writes done.
  std::vector<std::pair<driver::RegisterRef, uint32_t>> writes;
  std::vector<driver::RegisterRef> reads;
  try {
    for (const std::string& w : o.writes) {
      const auto eq = w.find('=');
      if (eq == std::string::npos) throw BadInput(fmt::format("--write {}: write NAME=VALUE", w));
      driver::RegisterRef r = driver::find_register(w.substr(0, eq));
      const uint64_t v = parse_number(w.substr(eq + 1), "--write " + r.name);
      if (v > 0xFFFFFFFFull) throw BadInput(fmt::format("--write {}: {} does not fit in 32 bits", r.name, v));
      if (r.access == "RO") throw BadInput(fmt::format("--write {}: the register is read-only", r.name));
      writes.emplace_back(std::move(r), uint32_t(v));
    }
    for (const std::string& name : o.reads) reads.push_back(driver::find_register(name));
  } catch (const std::invalid_argument& e) {
    throw BadInput(e.what());
  }
  isa::DataType dump_type = isa::DataType::kFp32;
  if (!o.dump.empty()) {
    bool known = false;
    for (auto t : {isa::DataType::kFp32, isa::DataType::kBf16, isa::DataType::kFp16, isa::DataType::kFp8E4M3,
                   isa::DataType::kFp8E5M2}) {
      if (isa::data_type_name(t) == o.dtype) dump_type = t, known = true;
    }
    if (!known) throw BadInput(fmt::format("--dtype {}: unknown (fp32, bf16, fp16, fp8e4m3, fp8e5m2)", o.dtype));
    if (o.count == 0 || o.count > (1ull << 28)) throw BadInput("--count: 1 .. 2^28 elements");
    if (o.out.empty()) throw BadInput("--dump needs --out FILE.npy");
  } else if (o.count != 0 || o.dtype != "fp32" || !o.out.empty()) {
    throw BadInput("--count, --dtype and --out go with --dump");
  }
  std::unique_ptr<driver::RemoteDevice> dev;
  try {
    dev = std::make_unique<driver::RemoteDevice>(o.socket, wire::Role::kAttach);
  } catch (const wire::WireError& e) {
    throw BadInput(e.what());
  }
  fmt::print("trnsim attach: {}\n", o.socket);
  try {
    const driver::Driver drv(*dev);  // discovery reads only: what the device is, for the status and the dump
    // The dump's place is checked against the device (reads only) before any write is made.
    const uint64_t dump_addr =
        o.dump.empty() ? 0 : dump_address(drv.info(), o.dump, o.count * isa::data_type_bytes(dump_type));
    for (const auto& [r, v] : writes) {
      dev->write_reg(r.offset, v);
      fmt::print("  wrote {:<16} 0x{:08X} (offset 0x{:03X})\n", r.name, v, r.offset);
    }
    for (const driver::RegisterRef& r : reads) {
      const uint32_t v = dev->read_reg(r.offset);
      fmt::print("  {:<22} 0x{:08X} = {} (offset 0x{:03X}, {})\n", r.name, v, v, r.offset, r.access);
    }
    if (!o.dump.empty()) {
      const unsigned es = isa::data_type_bytes(dump_type);
      std::vector<uint8_t> bytes(o.count * es);
      dev->read_mem(dump_addr, bytes.data(), bytes.size());
      F32Tensor t;
      t.shape = {int64_t(o.count)};
      for (const uint32_t pattern : driver::unpack_elements(bytes, dump_type)) {
        t.bits.push_back(golden::element_to_f32(dump_type, pattern));  // exact widening (BRIEF section 3, rule 1)
      }
      save_f32_tensor(o.out, "--out", t);
      fmt::print("  dumped {} {} elements from {} to {} (float32 [{}])\n", o.count, o.dtype, o.dump, o.out, o.count);
    }
    if (writes.empty() && reads.empty() && o.dump.empty()) print_status(drv);
  } catch (const wire::WireError& e) {
    throw BadInput(e.what());
  } catch (const std::out_of_range& e) {
    throw BadInput(fmt::format("the server refused the access: {}", e.what()));
  }
  return kExitOk;
}

}  // namespace

Action add_attach(CLI::App& app) {
  auto o = std::make_shared<AttachOptions>();
  CLI::App* cmd = app.add_subcommand(
      "attach", "Look at a served device beside its driver: status, registers by name, memory to .npy");
  cmd->add_option("socket", o->socket, "Socket path of `trnsim serve --socket PATH`")->required();
  cmd->add_option("--read", o->reads,
                  "Read a register by name: STATUS, Q_PC[te], SEM[3], P_BUSY_LO[dma], ...; another core's as "
                  "core1.STATUS, the chip's as CHIP_CORES");
  cmd->add_option("--write", o->writes, "Write a register: NAME=VALUE (decimal or 0x hex), before the reads");
  cmd->add_option("--dump", o->dump, "Dump memory: hbm:ADDR, sbuf:PARTITION:OFFSET or psum:PARTITION:OFFSET");
  cmd->add_option("--count", o->count, "Elements to dump")->check(kNonNegative);
  cmd->add_option("--dtype", o->dtype,
                  "Element type in memory: fp32, bf16, fp16, fp8e4m3, fp8e5m2 (widened to "
                  "float32 in the file)")
      ->capture_default_str();
  cmd->add_option("--out", o->out, "The .npy file of --dump");
  return [o] { return attach(*o); };
}

}  // namespace trnsim::tool
