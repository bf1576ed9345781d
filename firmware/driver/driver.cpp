// The trnsim host driver (driver.h); the run protocol is described in docs/driver.md.
#include "firmware/driver/driver.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "firmware/driver/core_device.h"
#include "spec/trn_regs.h"

namespace trnsim::driver {
namespace {

/// ISA version this driver encodes (VERSION.ISA of a device it can drive).
constexpr uint32_t kIsaVersion = 0;
/// Oldest register map (VERSION.MODEL) with every register this driver reads.
constexpr uint32_t kRegisterMapVersion = 6;
/// The interrupt bits run() enables and clears.
constexpr uint32_t kIrqBits = regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK;
/// Alignment of each queue's program in the program area.
constexpr uint64_t kProgramAlign = 4096;

uint32_t field(uint32_t value, uint32_t mask, uint32_t shift) { return (value & mask) >> shift; }

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

std::string queue_name(uint32_t queue) {
  if (queue < static_cast<uint32_t>(isa::kNumQueues)) {
    return std::string(isa::engine_name(static_cast<isa::Engine>(queue)));
  }
  return fmt::format("{}", queue);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// Errors

DeviceFault::DeviceFault(uint32_t code, uint32_t queue, uint32_t index, uint32_t info, uint64_t cycles,
                         std::string instruction, std::string detail, uint32_t core)
    : DriverError(describe(code, queue, index, info) + (core != 0 ? fmt::format(" (core {})", core) : "")),
      core_(core),
      code_(code),
      queue_(queue),
      index_(index),
      info_(info),
      cycles_(cycles),
      instruction_(std::move(instruction)),
      detail_(std::move(detail)) {}

std::string DeviceFault::describe(uint32_t code, uint32_t queue, uint32_t index, uint32_t info) {
  std::string text = fmt::format("device error {} ({})", regs::err_code_name(code), regs::err_code_text(code));
  if (regs::err_code_name(code) == "unknown") text = fmt::format("device error {} (unknown error code)", code);
  switch (code) {
    case regs::ERR_WATCHDOG:
      // No single failing instruction: the queue registers say where each queue stood.
      return text + fmt::format(": queue {} at instruction {}", queue_name(queue), index);
    case regs::ERR_BAD_DOORBELL:
      return text + fmt::format(": queue {}", queue_name(queue));
    case regs::ERR_DEADLOCK:
      return text + fmt::format(": queue {}, instruction {}, semaphore {}", queue_name(queue), index, info);
    case regs::ERR_CC_PEER_STOPPED:
      return text + fmt::format(": queue {}, instruction {}, peer chip {}", queue_name(queue), index, info);
    default:
      break;
  }
  text += fmt::format(": queue {}, instruction {}", queue_name(queue), index);
  if (info != 0) {
    const std::string_view name = isa::field_name(static_cast<int>(info));
    text += name.empty() ? fmt::format(", field id {}", info) : fmt::format(", field {}", name);
  }
  return text;
}

std::string DriverTimeout::queues_text(const std::vector<QueueSnapshot>& queues) {
  std::string text;
  for (const auto& q : queues) {
    text += fmt::format("{}queue {} at instruction {} of {}, {}", text.empty() ? "" : "; ", queue_name(q.queue), q.pc,
                        q.len, regs::queue_state_name(q.state));
  }
  return text;
}

namespace {
std::string timeout_text(uint64_t waited, uint64_t device_cycles,
                         const std::vector<DriverTimeout::QueueSnapshot>& queues) {
  const std::string text =
      fmt::format("device did not finish within {} cycles (cycle counter {})", waited, device_cycles);
  return queues.empty() ? text : text + ": " + DriverTimeout::queues_text(queues);
}
}  // namespace

DriverTimeout::DriverTimeout(uint64_t waited_cycles, uint64_t device_cycles, std::vector<QueueSnapshot> queues,
                             uint32_t core)
    : DriverError(timeout_text(waited_cycles, device_cycles, queues) +
                  (core != 0 ? fmt::format(" (core {})", core) : "")),
      core_(core),
      waited_cycles_(waited_cycles),
      device_cycles_(device_cycles),
      queues_(std::move(queues)) {}

// ---------------------------------------------------------------------------------------------------------------
// Driver

Driver::Driver(Device& device, HbmRegion region) : device_(device), region_(region) {
  const uint32_t id = device_.read_reg(regs::ID);
  if (id != regs::kIdValue) {
    throw DeviceMismatch(
        fmt::format("not a trnsim device: ID register reads {:#010x}, expected {:#010x}", id, regs::kIdValue));
  }
  const uint32_t version = device_.read_reg(regs::VERSION);
  const uint32_t isa_version = field(version, regs::VERSION_ISA_MASK, regs::VERSION_ISA_SHIFT);
  const uint32_t map_version = field(version, regs::VERSION_MODEL_MASK, regs::VERSION_MODEL_SHIFT);
  if (map_version < kRegisterMapVersion) {
    throw DeviceMismatch(fmt::format("device register map version {}, this driver needs {} or later (a server "
                                     "built from older sources?)",
                                     map_version, kRegisterMapVersion));
  }
  if (isa_version != kIsaVersion) {
    throw DeviceMismatch(
        fmt::format("device decodes ISA version {}, this driver encodes version {}", isa_version, kIsaVersion));
  }
  const uint32_t te_dim = device_.read_reg(regs::TE_DIM);
  info_.te_rows = field(te_dim, regs::TE_DIM_ROWS_MASK, regs::TE_DIM_ROWS_SHIFT);
  info_.te_cols = field(te_dim, regs::TE_DIM_COLS_MASK, regs::TE_DIM_COLS_SHIFT);
  info_.sbuf_partitions = device_.read_reg(regs::SBUF_PARTITIONS);
  info_.sbuf_partition_bytes = device_.read_reg(regs::SBUF_PARTITION_BYTES);
  info_.psum_partitions = device_.read_reg(regs::PSUM_PARTITIONS);
  info_.psum_partition_bytes = device_.read_reg(regs::PSUM_PARTITION_BYTES);
  info_.psum_banks = device_.read_reg(regs::PSUM_BANKS);
  info_.hbm_bytes = read_reg64(regs::HBM_BYTES_LO, regs::HBM_BYTES_HI);
  info_.num_queues = device_.read_reg(regs::NUM_QUEUES);
  info_.num_semaphores = device_.read_reg(regs::NUM_SEMAPHORES);
  info_.num_dma_engines = device_.read_reg(regs::NUM_DMA_ENGINES);
  info_.te_clock_mhz = device_.read_reg(regs::TE_CLOCK_MHZ);
  info_.act_clock_mhz = device_.read_reg(regs::ACT_CLOCK_MHZ);
  info_.vec_clock_mhz = device_.read_reg(regs::VEC_CLOCK_MHZ);
  const uint32_t vec_width = device_.read_reg(regs::VEC_WIDTH);
  info_.vec_elems_per_cycle = field(vec_width, regs::VEC_WIDTH_ELEMS_MASK, regs::VEC_WIDTH_ELEMS_SHIFT);
  info_.vec_elems_per_cycle_16 = field(vec_width, regs::VEC_WIDTH_ELEMS_16_MASK, regs::VEC_WIDTH_ELEMS_16_SHIFT);
  info_.dma_latency_ns = device_.read_reg(regs::DMA_LATENCY_NS);
  info_.dma_bytes_per_ns = device_.read_reg(regs::DMA_BW_MBPS) / 1000.0;
  info_.config_name = read_ascii(regs::SIM_CONFIG_BASE, 4 * regs::SIM_CONFIG_COUNT);
  info_.te_backend = std::string(regs::te_backend_name(device_.read_reg(regs::SIM_TE_BACKEND)));
  info_.chip_id = device_.read_reg(regs::CHIP_ID);
  const uint32_t torus = device_.read_reg(regs::TORUS);
  const uint32_t sizes[] = {field(torus, regs::TORUS_X_MASK, regs::TORUS_X_SHIFT),
                            field(torus, regs::TORUS_Y_MASK, regs::TORUS_Y_SHIFT),
                            field(torus, regs::TORUS_Z_MASK, regs::TORUS_Z_SHIFT)};
  info_.torus.clear();
  for (uint32_t d = 0; d < 3 && sizes[d] != 0; ++d) {
    info_.torus.push_back(int(sizes[d]));
    info_.link_gbytes_per_s.push_back(device_.read_reg(regs::link_bw_mbps_reg(d)) / 1000.0);
  }
  if (info_.torus.empty() || (sizes[1] == 0 && sizes[2] != 0)) {
    throw DeviceMismatch(fmt::format("TORUS reads {:#010x}: X must be at least 1, and Z 0 when Y is 0", torus));
  }
  info_.pods = int(device_.read_reg(regs::PODS));
  if (info_.pods < 1 || info_.pods > 64) {
    throw DeviceMismatch(fmt::format("PODS reads {}: 1 to 64 UltraServers", info_.pods));
  }
  if (info_.chip_id >= uint32_t(info_.system_chips())) {
    throw DeviceMismatch(fmt::format("CHIP_ID {} is not a chip of the {}-chip system TORUS and PODS name",
                                     info_.chip_id, info_.system_chips()));
  }
  info_.hop_latency_ns = device_.read_reg(regs::HOP_LATENCY_NS);
  info_.efa_gbytes_per_s = device_.read_reg(regs::EFA_BW_MBPS) / 1000.0;
  info_.efa_latency_ns = device_.read_reg(regs::EFA_LATENCY_NS);
  info_.cores = device_.read_reg(regs::CHIP_CORES);
  info_.core = device_.read_reg(regs::CORE_ID);
  info_.hbm_bytes_per_ns = device_.read_reg(regs::HBM_BW_MBPS) / 1000.0;
  if (info_.cores < 1 || info_.cores > regs::MAX_CORES || info_.core >= info_.cores) {
    throw DeviceMismatch(fmt::format("CHIP_CORES reads {} and CORE_ID {}: a chip has 1 to {} cores, numbered from 0",
                                     info_.cores, info_.core, regs::MAX_CORES));
  }

  const std::pair<const char*, uint64_t> must_be_positive[] = {
      {"TE_DIM.ROWS", info_.te_rows},
      {"TE_DIM.COLS", info_.te_cols},
      {"SBUF_PARTITIONS", info_.sbuf_partitions},
      {"SBUF_PARTITION_BYTES", info_.sbuf_partition_bytes},
      {"PSUM_PARTITIONS", info_.psum_partitions},
      {"PSUM_PARTITION_BYTES", info_.psum_partition_bytes},
      {"PSUM_BANKS", info_.psum_banks},
      {"HBM_BYTES", info_.hbm_bytes},
      {"NUM_DMA_ENGINES", info_.num_dma_engines},
      {"TE_CLOCK_MHZ", info_.te_clock_mhz},
      {"ACT_CLOCK_MHZ", info_.act_clock_mhz},
      {"VEC_CLOCK_MHZ", info_.vec_clock_mhz},
      {"DMA_BW_MBPS", uint64_t(info_.dma_bytes_per_ns * 1000.0)},
  };
  for (const auto& [name, value] : must_be_positive) {
    if (value == 0) throw DeviceMismatch(fmt::format("device configuration register {} reads 0", name));
  }
  if (info_.num_queues < static_cast<uint32_t>(isa::kNumQueues) || info_.num_queues > regs::QUEUE_SLOTS) {
    throw DeviceMismatch(fmt::format("device reports {} queues; this driver needs {} to {}", info_.num_queues,
                                     isa::kNumQueues, regs::QUEUE_SLOTS));
  }
  if (info_.vec_elems_per_cycle < info_.sbuf_partitions || info_.vec_elems_per_cycle_16 < info_.sbuf_partitions) {
    throw DeviceMismatch(fmt::format("VEC_WIDTH reads {:#010x}: ELEMS ({}) and ELEMS_16 ({}) must each be at least "
                                     "one element per lane (SBUF_PARTITIONS {})",
                                     vec_width, info_.vec_elems_per_cycle,
                                     info_.vec_elems_per_cycle_16, info_.sbuf_partitions));
  }
  if (info_.num_dma_engines > regs::DMAE_SLOTS) {
    throw DeviceMismatch(fmt::format("device reports {} DMA engines; the register map has counters for {}",
                                     info_.num_dma_engines, regs::DMAE_SLOTS));
  }
  if (info_.num_semaphores < static_cast<uint32_t>(isa::kNumSemaphores)) {
    throw DeviceMismatch(fmt::format("device reports {} semaphores; the ISA names {}", info_.num_semaphores,
                                     isa::kNumSemaphores));
  }
  if (region_.first >= info_.hbm_bytes || region_.bytes == 0) {
    throw AddressError(fmt::format("HBM region at 0x{:x} of {} bytes: not inside the {} bytes of HBM", region_.first,
                                   region_.bytes, info_.hbm_bytes));
  }
  region_.bytes = std::min(region_.bytes, info_.hbm_bytes - region_.first);
  next_free_ = region_.first;
  program_floor_ = region_.first + region_.bytes;
  queue_base_.assign(info_.num_queues, 0);
  queue_len_.assign(info_.num_queues, 0);
}

uint64_t Driver::read_reg64(uint32_t lo, uint32_t hi) const {
  // HI, LO, HI again: retry when the low word wrapped between the reads (docs/registers.md, "Running a program").
  for (;;) {
    const uint32_t h1 = device_.read_reg(hi);
    const uint32_t l = device_.read_reg(lo);
    const uint32_t h2 = device_.read_reg(hi);
    if (h1 == h2) return (static_cast<uint64_t>(h1) << 32) | l;
  }
}

uint64_t Driver::alloc(uint64_t bytes, uint64_t align) {
  if (bytes == 0) throw DriverError("alloc: size 0");
  if (align == 0 || (align & (align - 1)) != 0) {
    throw DriverError(fmt::format("alloc: alignment {} is not a power of two", align));
  }
  const uint64_t start = align_up(next_free_, align);
  if (start < next_free_ || start > program_floor_ || bytes > program_floor_ - start) {
    const uint64_t available = start < program_floor_ ? program_floor_ - start : 0;
    throw OutOfDeviceMemory(fmt::format("alloc: {} bytes (align {}) do not fit in HBM: {} bytes free below {:#x}",
                                        bytes, align, available, program_floor_),
                            bytes, available);
  }
  next_free_ = start + bytes;
  return start;
}

void Driver::check_range(const char* what, uint64_t addr, uint64_t bytes, uint64_t limit) const {
  if (addr > limit || bytes > limit - addr) {
    throw AddressError(fmt::format("{}: bytes [{:#x}, {:#x}) are outside [0, {:#x})", what, addr, addr + bytes, limit));
  }
}

void Driver::write_hbm(uint64_t hbm_addr, const void* data, std::size_t bytes) {
  check_range("write_hbm", hbm_addr, bytes, info_.hbm_bytes);
  if (bytes != 0) device_.write_mem(regs::HBM_BASE + hbm_addr, data, bytes);
}

void Driver::read_hbm(uint64_t hbm_addr, void* data, std::size_t bytes) const {
  check_range("read_hbm", hbm_addr, bytes, info_.hbm_bytes);
  if (bytes != 0) device_.read_mem(regs::HBM_BASE + hbm_addr, data, bytes);
}

void reset_device(Device& device) {
  const uint32_t cores = std::clamp<uint32_t>(device.read_reg(regs::CHIP_CORES), 1, regs::MAX_CORES);
  for (uint32_t c = 0; c < cores; ++c) {
    const uint32_t b = c * regs::CORE_STRIDE;
    device.write_reg(b + regs::INT_ENABLE, 0);
    device.write_reg(b + regs::CTRL, regs::CTRL_SOFT_RESET_MASK | regs::CTRL_PERF_CLEAR_MASK);
    device.write_reg(b + regs::INT_STATUS, regs::INT_STATUS_DONE_MASK | regs::INT_STATUS_ERROR_MASK);
    device.write_reg(b + regs::WATCHDOG_CYCLES, regs::WATCHDOG_CYCLES_RESET);
    device.write_reg(b + regs::SR_SEED, regs::SR_SEED_RESET);
    const uint32_t queues = std::min<uint32_t>(device.read_reg(b + regs::NUM_QUEUES), regs::QUEUE_SLOTS);
    for (uint32_t q = 0; q < queues; ++q) {
      device.write_reg(b + regs::queue_reg(q, regs::Q_LEN), 0);
      device.write_reg(b + regs::queue_reg(q, regs::Q_BASE_LO), 0);
      device.write_reg(b + regs::queue_reg(q, regs::Q_BASE_HI), 0);
    }
  }
  device.write_reg(regs::CHIP_INT_ENABLE, uint32_t((uint64_t{1} << cores) - 1));
}

std::vector<HbmRegion> chip_regions(uint64_t hbm_bytes, uint32_t cores) {
  if (cores == 0) throw DriverError("chip_regions: 0 cores");
  const uint64_t each = (hbm_bytes / cores) & ~(kProgramAlign - 1);
  std::vector<HbmRegion> out;
  for (uint32_t c = 0; c < cores; ++c) out.push_back({c * each, each});
  return out;
}

std::vector<uint8_t> pack_elements(const std::vector<uint32_t>& elements, isa::DataType type) {
  const unsigned es = isa::data_type_bytes(type);
  std::vector<uint8_t> bytes(elements.size() * es);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    for (unsigned b = 0; b < es; ++b) bytes[i * es + b] = static_cast<uint8_t>(elements[i] >> (8 * b));
  }
  return bytes;
}

std::vector<uint32_t> unpack_elements(const std::vector<uint8_t>& bytes, isa::DataType type) {
  const unsigned es = isa::data_type_bytes(type);
  std::vector<uint32_t> elements(es == 0 ? 0 : bytes.size() / es);
  for (std::size_t i = 0; i < elements.size(); ++i) {
    for (unsigned b = 0; b < es; ++b) elements[i] |= uint32_t(bytes[i * es + b]) << (8 * b);
  }
  return elements;
}

void Driver::write_tensor(uint64_t hbm_addr, const std::vector<uint32_t>& elements, isa::DataType type) {
  const std::vector<uint8_t> bytes = pack_elements(elements, type);
  write_hbm(hbm_addr, bytes.data(), bytes.size());
}

std::vector<uint32_t> Driver::read_tensor(uint64_t hbm_addr, std::size_t count, isa::DataType type) const {
  std::vector<uint8_t> bytes(count * isa::data_type_bytes(type));
  read_hbm(hbm_addr, bytes.data(), bytes.size());
  return unpack_elements(bytes, type);
}

void Driver::read_sbuf(uint32_t partition, uint32_t offset, void* data, std::size_t bytes) const {
  if (partition >= info_.sbuf_partitions) {
    throw AddressError(fmt::format("read_sbuf: partition {} of {}", partition, info_.sbuf_partitions));
  }
  check_range("read_sbuf", offset, bytes, info_.sbuf_partition_bytes);
  const uint64_t addr = regs::SBUF_BASE + uint64_t(partition) * info_.sbuf_partition_bytes + offset;
  if (bytes != 0) device_.read_mem(addr, data, bytes);
}

void Driver::read_psum(uint32_t partition, uint32_t offset, void* data, std::size_t bytes) const {
  if (partition >= info_.psum_partitions) {
    throw AddressError(fmt::format("read_psum: partition {} of {}", partition, info_.psum_partitions));
  }
  check_range("read_psum", offset, bytes, info_.psum_partition_bytes);
  const uint64_t addr = regs::PSUM_BASE + uint64_t(partition) * info_.psum_partition_bytes + offset;
  if (bytes != 0) device_.read_mem(addr, data, bytes);
}

void Driver::load_program(const isa::Program& program) {
  // Lay the queues out from the top of HBM downwards, each 4 KiB aligned.
  uint64_t total = 0;
  bool any = false;
  for (const auto& q : program.queues) {
    if (q.empty()) continue;
    any = true;
    total += align_up(q.size() * isa::kInstrBytes, kProgramAlign);
  }
  if (!any) throw DriverError("load_program: the program has no instructions");
  for (std::size_t q = 0; q < program.queues.size(); ++q) {
    if (!program.queues[q].empty() && q >= info_.num_queues) {
      throw DriverError(fmt::format("load_program: queue {} is not on the device ({} queues)", q, info_.num_queues));
    }
  }
  const uint64_t top = (region_.first + region_.bytes) & ~(kProgramAlign - 1);
  if (total > top || top - total < next_free_) {
    const uint64_t available = top > next_free_ ? top - next_free_ : 0;
    throw OutOfDeviceMemory(fmt::format("load_program: {} bytes of program do not fit in HBM above the {} "
                                        "allocated bytes ({} free)",
                                        total, next_free_, available),
                            total, available);
  }
  const uint64_t floor = top - total;

  // Unload the old program first so that a failure below leaves no queue pointing at stale code.
  for (uint32_t q = 0; q < info_.num_queues; ++q) device_.write_reg(regs::queue_reg(q, regs::Q_LEN), 0);
  std::fill(queue_base_.begin(), queue_base_.end(), 0);
  std::fill(queue_len_.begin(), queue_len_.end(), 0);
  program_ = isa::Program{};
  program_floor_ = region_.first + region_.bytes;

  uint64_t addr = floor;
  std::vector<uint8_t> bytes;
  for (std::size_t q = 0; q < program.queues.size(); ++q) {
    const auto& instrs = program.queues[q];
    if (instrs.empty()) continue;
    bytes.resize(instrs.size() * isa::kInstrBytes);
    for (std::size_t i = 0; i < instrs.size(); ++i) {
      const auto enc = isa::encode(instrs[i]);
      std::copy(enc.begin(), enc.end(), bytes.begin() + static_cast<std::ptrdiff_t>(i * isa::kInstrBytes));
    }
    device_.write_mem(regs::HBM_BASE + addr, bytes.data(), bytes.size());
    queue_base_[q] = addr;
    queue_len_[q] = static_cast<uint32_t>(instrs.size());
    addr += align_up(bytes.size(), kProgramAlign);
  }
  for (uint32_t q = 0; q < info_.num_queues; ++q) {
    device_.write_reg(regs::queue_reg(q, regs::Q_BASE_LO), static_cast<uint32_t>(queue_base_[q]));
    device_.write_reg(regs::queue_reg(q, regs::Q_BASE_HI), static_cast<uint32_t>(queue_base_[q] >> 32));
    device_.write_reg(regs::queue_reg(q, regs::Q_LEN), queue_len_[q]);
  }
  program_floor_ = floor;
  program_ = program;
}

void Driver::set_watchdog(uint32_t cycles) { device_.write_reg(regs::WATCHDOG_CYCLES, cycles); }

void Driver::set_sr_seed(uint32_t seed) { device_.write_reg(regs::SR_SEED, seed); }

std::string Driver::instruction_text(uint32_t queue, uint32_t index) const {
  if (queue >= program_.queues.size() || index >= program_.queues[queue].size()) return {};
  return isa::disassemble(program_.queues[queue][index]);
}

RunResult Driver::run(uint64_t timeout_cycles) {
  start();
  return wait(timeout_cycles);
}

void Driver::start() {
  uint32_t doorbell = 0;
  for (uint32_t q = 0; q < info_.num_queues; ++q) {
    if (queue_len_[q] != 0) doorbell |= 1u << q;
  }
  if (doorbell == 0) throw DriverError("run: no program loaded");

  device_.write_reg(regs::CTRL, regs::CTRL_SOFT_RESET_MASK);  // self-clearing
  device_.write_reg(regs::INT_STATUS, kIrqBits);              // RW1C; soft reset cleared them already
  device_.write_reg(regs::INT_ENABLE, regs::INT_ENABLE_DONE_MASK | regs::INT_ENABLE_ERROR_MASK);
  if (progress_) run_macs_origin_ = read_reg64(regs::TE_MACS_LO, regs::TE_MACS_HI);
  device_.write_reg(regs::DOORBELL, doorbell);
  // Read back, as a PCIe driver flushes its posted writes: the doorbell has reached the device when start() returns.
  // On a served multi-chip system (one connection per chip) a wait on another chip's connection could otherwise run
  // the system before this chip's doorbell arrived, and its peers would see its cc queue idle (CC_PEER_STOPPED).
  (void)device_.read_reg(regs::STATUS);
}

void Driver::set_progress(std::function<void(const RunProgress&)> callback, double interval_s) {
  progress_ = std::move(callback);
  progress_interval_s_ = interval_s;
}

bool Driver::wait_with_progress(Device& device, uint64_t timeout_cycles) {
  // Slices of the wait, each short in host time (a quarter of the interval at most: the slice doubles while one
  // takes less than a sixteenth of it, halves when one takes more than a quarter; the size carries over to the next
  // run, so a served device gets about one wait request per short program); between them, a progress line when
  // interval_s has passed.
  using clock = std::chrono::steady_clock;
  auto last = clock::now();
  for (uint64_t left = timeout_cycles; left > 0;) {
    const uint64_t slice = std::min(left, progress_slice_);
    const auto t0 = clock::now();
    if (device.wait_interrupt(slice)) return true;
    left -= slice;
    const double took = std::chrono::duration<double>(clock::now() - t0).count();
    if (took < progress_interval_s_ / 16 && progress_slice_ < (uint64_t{1} << 32)) progress_slice_ *= 2;
    if (took > progress_interval_s_ / 4 && progress_slice_ > 1024) progress_slice_ /= 2;
    if (std::chrono::duration<double>(clock::now() - last).count() >= progress_interval_s_) {
      RunProgress p;
      p.cycles = read_reg64(regs::CYCLE_LO, regs::CYCLE_HI);
      p.te_macs = read_reg64(regs::TE_MACS_LO, regs::TE_MACS_HI) - run_macs_origin_;
      progress_(p);
      last = clock::now();
    }
  }
  return false;
}

int Driver::wait_first(const std::vector<Driver*>& drivers, uint64_t max_cycles) {
  if (drivers.empty()) throw DriverError("wait_first: no drivers");
  Driver& lead = *drivers.front();
  const auto wait_on = [&](Device& device) {
    return lead.progress_ ? lead.wait_with_progress(device, max_cycles) : device.wait_interrupt(max_cycles);
  };
  if (drivers.size() == 1 && dynamic_cast<CoreDevice*>(&lead.device_) == nullptr) {
    return wait_on(lead.device_) ? 0 : -1;
  }
  // The chip's line is high while CHIP_INT_SUMMARY & CHIP_INT_ENABLE is not 0 (docs/registers.md "The chip").
  Device* chip = nullptr;
  uint32_t mask = 0;
  std::vector<uint32_t> core(drivers.size());
  for (std::size_t i = 0; i < drivers.size(); ++i) {
    const auto* view = dynamic_cast<const CoreDevice*>(&drivers[i]->device_);
    if (view == nullptr || (chip != nullptr && &view->chip() != chip) || view->core() >= 32 ||
        (mask >> view->core() & 1)) {
      throw DriverError(fmt::format("wait_first: driver {} of {} is not a view of another core of the first's chip", i,
                                    drivers.size()));
    }
    chip = &view->chip();
    core[i] = view->core();
    mask |= 1u << core[i];
  }
  chip->write_reg(regs::CHIP_INT_ENABLE, mask);
  wait_on(*chip);
  const uint32_t high = chip->read_reg(regs::CHIP_INT_SUMMARY) & mask;
  int first = -1;
  for (std::size_t i = 0; i < drivers.size(); ++i) {
    if ((high >> core[i] & 1) && (first < 0 || core[i] < core[std::size_t(first)])) first = int(i);
  }
  return first;
}

DeviceCounters Driver::read_counters() const {
  DeviceCounters c;
  c.uptime = read_reg64(regs::UPTIME_LO, regs::UPTIME_HI);
  c.te_macs = read_reg64(regs::TE_MACS_LO, regs::TE_MACS_HI);
  c.te_busy = read_reg64(regs::TE_BUSY_LO, regs::TE_BUSY_HI);
  for (uint32_t q = 0; q < info_.num_queues; ++q) {
    const auto r = [&](uint32_t lo, uint32_t hi) {
      return read_reg64(regs::perf_reg(q, lo), regs::perf_reg(q, hi));
    };
    DeviceCounters::Queue u;
    u.busy = r(regs::P_BUSY_LO, regs::P_BUSY_HI);
    u.sem_wait = r(regs::P_SEM_WAIT_LO, regs::P_SEM_WAIT_HI);
    u.dma_wait = r(regs::P_DMA_WAIT_LO, regs::P_DMA_WAIT_HI);
    u.idle = r(regs::P_IDLE_LO, regs::P_IDLE_HI);
    u.retired = r(regs::P_RETIRED_LO, regs::P_RETIRED_HI);
    c.queues.push_back(u);
  }
  for (uint32_t e = 0; e < info_.num_dma_engines; ++e) {
    const auto r = [&](uint32_t lo, uint32_t hi) {
      return read_reg64(regs::dmae_reg(e, lo), regs::dmae_reg(e, hi));
    };
    c.dma.push_back({r(regs::DE_BUSY_LO, regs::DE_BUSY_HI), r(regs::DE_COPIES_LO, regs::DE_COPIES_HI)});
  }
  return c;
}

CollectiveCounters Driver::read_collective_counters() const {
  CollectiveCounters c;
  c.ops = read_reg64(regs::CC_OPS_LO, regs::CC_OPS_HI);
  c.cycles = read_reg64(regs::CC_CYCLES_LO, regs::CC_CYCLES_HI);
  c.messages = read_reg64(regs::CC_MESSAGES_LO, regs::CC_MESSAGES_HI);
  c.bytes = read_reg64(regs::CC_BYTES_LO, regs::CC_BYTES_HI);
  c.last_steps = device_.read_reg(regs::CC_LAST_STEPS);
  c.net_cycles = read_reg64(regs::NET_CYCLES_LO, regs::NET_CYCLES_HI);
  c.net_packets = read_reg64(regs::NET_PACKETS_LO, regs::NET_PACKETS_HI);
  c.net_flits = read_reg64(regs::NET_FLITS_LO, regs::NET_FLITS_HI);
  c.net_latency_sum = read_reg64(regs::NET_LATENCY_SUM_LO, regs::NET_LATENCY_SUM_HI);
  c.net_latency_max = device_.read_reg(regs::NET_LATENCY_MAX);
  c.net_replays = device_.read_reg(regs::NET_REPLAYS);
  c.net_crc_errors = device_.read_reg(regs::NET_CRC_ERRORS);
  std::vector<uint32_t> links;
  for (uint32_t l = 0; l < 2 * info_.torus.size(); ++l) links.push_back(l);
  if (info_.pods > 1) links.insert(links.end(), {6, 7});  // EFA to and from the switch
  for (const uint32_t l : links) {
    const auto r = [&](uint32_t lo, uint32_t hi) { return read_reg64(regs::link_reg(l, lo), regs::link_reg(l, hi)); };
    c.links.push_back({r(regs::L_BUSY_LO, regs::L_BUSY_HI), r(regs::L_BYTES_LO, regs::L_BYTES_HI),
                       r(regs::L_FLITS_LO, regs::L_FLITS_HI)});
  }
  return c;
}

void Driver::clear_counters() { device_.write_reg(regs::CTRL, regs::CTRL_PERF_CLEAR_MASK); }

std::string Driver::read_ascii(uint32_t base, uint32_t max_bytes) const {
  std::string text;
  for (uint32_t w = 0; w * 4 < max_bytes; ++w) {
    const uint32_t v = device_.read_reg(base + 4 * w);
    for (uint32_t b = 0; b < 4 && w * 4 + b < max_bytes; ++b) {
      const char ch = static_cast<char>((v >> (8 * b)) & 0xFF);
      if (ch == '\0') return text;
      text.push_back(ch);
    }
  }
  return text;
}

std::string Driver::read_err_detail() const {
  const uint32_t len = std::min<uint32_t>(device_.read_reg(regs::ERR_DETAIL_LEN), 4 * regs::ERR_DETAIL_COUNT);
  return read_ascii(regs::ERR_DETAIL_BASE, len);
}

RunResult Driver::wait(uint64_t timeout_cycles) {
  if (progress_) {
    wait_with_progress(device_, timeout_cycles);
  } else {
    device_.wait_interrupt(timeout_cycles);
  }
  // STATUS decides, not the return value: a backend may report the line late, and an error must win over done.
  const uint32_t status = device_.read_reg(regs::STATUS);
  const uint64_t cycles = read_reg64(regs::CYCLE_LO, regs::CYCLE_HI);
  if (status & regs::STATUS_ERROR_MASK) {
    const uint32_t code = device_.read_reg(regs::ERR_CODE);
    const uint32_t queue = device_.read_reg(regs::ERR_QUEUE);
    const uint32_t index = device_.read_reg(regs::ERR_INDEX);
    const uint32_t info = device_.read_reg(regs::ERR_INFO);
    std::string detail = read_err_detail();
    device_.write_reg(regs::INT_STATUS, kIrqBits);
    throw DeviceFault(code, queue, index, info, cycles, instruction_text(queue, index), std::move(detail),
                      info_.core);
  }
  if (!(status & regs::STATUS_DONE_MASK)) {
    std::vector<DriverTimeout::QueueSnapshot> queues;
    for (uint32_t q = 0; q < info_.num_queues; ++q) {
      if (queue_len_[q] == 0) continue;
      DriverTimeout::QueueSnapshot s;
      s.queue = q;
      s.pc = device_.read_reg(regs::queue_reg(q, regs::Q_PC));
      s.len = queue_len_[q];
      s.state = device_.read_reg(regs::queue_reg(q, regs::Q_STATE));
      queues.push_back(s);
    }
    throw DriverTimeout(timeout_cycles, cycles, std::move(queues), info_.core);
  }
  RunResult result;
  result.cycles = cycles;
  for (uint32_t q = 0; q < static_cast<uint32_t>(isa::kNumQueues); ++q) {
    if (queue_len_[q] != 0) result.retired[q] = device_.read_reg(regs::queue_reg(q, regs::Q_RETIRED));
  }
  device_.write_reg(regs::INT_STATUS, kIrqBits);
  return result;
}

}  // namespace trnsim::driver
