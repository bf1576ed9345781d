// The trnsim host driver: discovers a device, places programs and data in its memory, runs programs and turns the
// device's error registers into exceptions.
//
// The driver reaches the device only through the abstract Device interface (device.h; BRIEF section 7), so the same
// driver code runs against the in-process SystemC model, an RTL co-simulation or the unit-test mock. Registers and
// device addresses are those of the generated register map (spec/trn_regs.h, docs/registers.md); the run
// protocol and the error texts are described in docs/driver.md.
//
// Units: addresses and sizes in bytes, times in TE clock cycles (TE_CLOCK_MHZ, 2.4 GHz for the named configs).
// Address kinds: an "HBM address" is a byte address inside the HBM space (what instructions and Q_BASE hold); a
// "device address" is regs::HBM_BASE + HBM address (what Device::read_mem/write_mem take).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "firmware/driver/device.h"
#include "firmware/isa/isa.h"

namespace trnsim::driver {

/// What the configuration registers say about a device (read once by the Driver constructor).
struct DeviceInfo {
  uint32_t te_rows = 0;               ///< Tensor Engine PE rows: largest contraction K of one instruction
  uint32_t te_cols = 0;               ///< Tensor Engine PE columns: largest stationary M
  uint32_t sbuf_partitions = 0;       ///< SBUF partitions
  uint32_t sbuf_partition_bytes = 0;  ///< bytes per SBUF partition
  uint32_t psum_partitions = 0;       ///< PSUM partitions
  uint32_t psum_partition_bytes = 0;  ///< bytes per PSUM partition
  uint32_t psum_banks = 0;            ///< PSUM banks per partition
  uint64_t hbm_bytes = 0;             ///< HBM size
  uint32_t num_queues = 0;            ///< instruction queues (queue id = isa::Engine value)
  uint32_t num_semaphores = 0;        ///< hardware semaphores
  uint32_t num_dma_engines = 0;       ///< DMA engines that execute copies concurrently
  uint32_t te_clock_mhz = 0;          ///< TE clock, MHz
  uint32_t act_clock_mhz = 0;         ///< Scalar (activation) engine clock, MHz
  uint32_t vec_clock_mhz = 0;         ///< Vector engine clock, MHz
  /// Vector engine data path (VEC_WIDTH.ELEMS, .ELEMS_16), elements per Vector cycle over all lanes: with an operand
  /// of a type other than BF16 / FP16, and with every operand BF16 or FP16. 0 counts as one element per lane.
  uint32_t vec_elems_per_cycle = 0;
  uint32_t vec_elems_per_cycle_16 = 0;
  double dma_latency_ns = 0;          ///< start latency of one DMA copy, ns (DMA_LATENCY_NS)
  double dma_bytes_per_ns = 0;        ///< one DMA engine's bandwidth, bytes/ns (DMA_BW_MBPS / 1000)
  std::string config_name;            ///< simulation only: SIM_CONFIG, the configuration's name ("tiny", "trn2")
  std::string te_backend;             ///< simulation only: SIM_TE_BACKEND's name ("tlm", "rtl", "lockstep")
  uint32_t chip_id = 0;               ///< CHIP_ID: rank in the system, x + X * (y + Y * z)
  std::vector<int> torus{1};          ///< TORUS: chips per dimension (x first), {1} for a chip on its own
  std::vector<double> link_gbytes_per_s;  ///< LINK_BW_MBPS / 1000: per dimension of `torus`, GB/s per direction
  double hop_latency_ns = 0;          ///< HOP_LATENCY_NS
  int pods = 1;                       ///< PODS: UltraServers (tori) joined by EFA
  double efa_gbytes_per_s = 0;        ///< EFA_BW_MBPS / 1000, per chip and direction (0 with one torus)
  double efa_latency_ns = 0;          ///< EFA_LATENCY_NS
  uint32_t cores = 1;                 ///< CHIP_CORES: NeuronCores on the chip
  uint32_t core = 0;                  ///< CORE_ID: the core this driver drives
  double hbm_bytes_per_ns = 0;        ///< HBM_BW_MBPS / 1000: the chip's HBM bandwidth, shared by its cores

  /// Bytes of one PSUM bank in one partition (psum_partition_bytes / psum_banks).
  uint32_t psum_bank_bytes() const { return psum_banks == 0 ? 0 : psum_partition_bytes / psum_banks; }
  /// The Vector engine's data path for isa::vector_cycles: a lane per SBUF partition.
  isa::VecDataPath vec_data_path() const { return {sbuf_partitions, vec_elems_per_cycle, vec_elems_per_cycle_16}; }
  /// Clock of queue `queue`'s engine in MHz: act and vec have their own, the others run at the TE clock.
  uint32_t queue_clock_mhz(uint32_t queue) const {
    if (queue == static_cast<uint32_t>(isa::Engine::kAct)) return act_clock_mhz;
    if (queue == static_cast<uint32_t>(isa::Engine::kVec)) return vec_clock_mhz;
    return te_clock_mhz;
  }
  /// Chips of one torus (UltraServer): the product of `torus`.
  int torus_chips() const {
    int n = 1;
    for (int d : torus) n *= d;
    return n;
  }
  /// Chips in the system: torus_chips() x pods.
  int system_chips() const { return torus_chips() * pods; }
  /// Microseconds that `cycles` TE cycles last at te_clock_mhz.
  double cycles_to_us(uint64_t cycles) const {
    return te_clock_mhz == 0 ? 0.0 : static_cast<double>(cycles) / te_clock_mhz;
  }
};

/// Base of every error the driver throws.
class DriverError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The device is not one this driver can drive: wrong ID register, an ISA version other than 0, or a configuration
/// register that makes no sense (0 rows, ...).
class DeviceMismatch : public DriverError {
 public:
  using DriverError::DriverError;
};

/// A host-side request names memory outside the device: an HBM/SBUF/PSUM range past the end of its space.
class AddressError : public DriverError {
 public:
  using DriverError::DriverError;
};

/// The HBM allocator (or the program area) cannot fit a request.
class OutOfDeviceMemory : public DriverError {
 public:
  OutOfDeviceMemory(const std::string& what, uint64_t requested, uint64_t available)
      : DriverError(what), requested_(requested), available_(available) {}
  uint64_t requested() const { return requested_; }  ///< bytes asked for
  uint64_t available() const { return available_; }  ///< bytes that were free
 private:
  uint64_t requested_;
  uint64_t available_;
};

/// The device stopped with an error (STATUS.ERROR). what() is one line, e.g.
/// "device error bad_field (a field holds an illegal value): queue te, instruction 4, field dtype"; a core other
/// than core 0 is named at the end: "... field dtype (core 3)".
class DeviceFault : public DriverError {
 public:
  DeviceFault(uint32_t code, uint32_t queue, uint32_t index, uint32_t info, uint64_t cycles,
              std::string instruction, std::string detail = {}, uint32_t core = 0);
  uint32_t core() const { return core_; }    ///< CORE_ID of the core that stopped
  uint32_t code() const { return code_; }    ///< ERR_CODE (a regs::ErrCode value)
  uint32_t queue() const { return queue_; }  ///< ERR_QUEUE: queue id (isa::Engine value)
  uint32_t index() const { return index_; }  ///< ERR_INDEX: instruction index within the queue
  uint32_t info() const { return info_; }    ///< ERR_INFO: ISA field id (isa::field_name), semaphore for deadlock
  uint64_t cycles() const { return cycles_; }  ///< cycle counter when the error was read
  /// The failing instruction disassembled (isa::disassemble), when the driver loaded it; else empty.
  const std::string& instruction() const { return instruction_; }
  /// The device's longer text of the fault (ERR_DETAIL: a lockstep mismatch, the RTL's message); often empty.
  const std::string& detail() const { return detail_; }
  /// The one-line text what() returns, built from the error registers.
  static std::string describe(uint32_t code, uint32_t queue, uint32_t index, uint32_t info);

 private:
  uint32_t core_;
  uint32_t code_, queue_, index_, info_;
  uint64_t cycles_;
  std::string instruction_;
  std::string detail_;
};

/// The device neither finished nor failed within the cycles run() allowed. what() names the cycles waited and each
/// loaded queue's PC, length and state ("queue te at instruction 3 of 10, waiting"); a core other than core 0 is
/// named at the end, as DeviceFault does: "... waiting (core 3)".
class DriverTimeout : public DriverError {
 public:
  struct QueueSnapshot {
    uint32_t queue = 0;  ///< queue id
    uint32_t pc = 0;     ///< Q_PC: index of the next instruction
    uint32_t len = 0;    ///< Q_LEN
    uint32_t state = 0;  ///< Q_STATE (a regs::QueueState value)
  };
  DriverTimeout(uint64_t waited_cycles, uint64_t device_cycles, std::vector<QueueSnapshot> queues, uint32_t core = 0);
  uint32_t core() const { return core_; }                    ///< CORE_ID of the core that did not finish
  uint64_t waited_cycles() const { return waited_cycles_; }  ///< the limit given to run()
  uint64_t device_cycles() const { return device_cycles_; }  ///< CYCLE_HI:CYCLE_LO when the driver gave up
  const std::vector<QueueSnapshot>& queues() const { return queues_; }
  /// "queue te at instruction 3 of 10, waiting; queue dma at instruction 2 of 4, running": what() names them so.
  static std::string queues_text(const std::vector<QueueSnapshot>& queues);

 private:
  uint32_t core_;
  uint64_t waited_cycles_;
  uint64_t device_cycles_;
  std::vector<QueueSnapshot> queues_;
};

/// What a successful run() reports.
struct RunResult {
  uint64_t cycles = 0;                                ///< TE cycles from the doorbell to the last halt (CYCLE)
  std::array<uint64_t, isa::kNumQueues> retired{};    ///< Q_RETIRED per queue id (0 for queues not loaded)
};

/// The device's performance counters (the PERF and DMAE blocks, UPTIME, TE_MACS; docs/registers.md), all in TE
/// clock cycles except the counts, since the device was created or Driver::clear_counters(). Every backend reports
/// them through its registers, so a report built from them is the same in process and over `--connect`.
struct DeviceCounters {
  struct Queue {
    uint64_t busy = 0;      ///< executing instructions
    uint64_t sem_wait = 0;  ///< blocked in sem_wait
    uint64_t dma_wait = 0;  ///< DMA queue: waiting for copies or a free DMA engine
    uint64_t idle = 0;      ///< the rest of uptime
    uint64_t retired = 0;   ///< instructions retired over every launch
  };
  struct DmaEngine {
    uint64_t busy = 0;    ///< executing copies
    uint64_t copies = 0;  ///< copies completed
  };
  uint64_t uptime = 0;          ///< the window every counter counts in
  uint64_t te_macs = 0;         ///< Tensor Engine multiply-accumulates (K x M x N per multiply_moving)
  uint64_t te_busy = 0;         ///< TE cycles the PE array was streaming
  std::vector<Queue> queues;    ///< per queue id (num_queues)
  std::vector<DmaEngine> dma;   ///< per DMA engine (num_dma_engines)
};

/// The collective engine's and output links' counters (CC_*, NET_*, the LINK block; docs/registers.md "Collective
/// counters"), since the device was created or Driver::clear_counters(). Times in TE cycles, NET_ figures in router
/// cycles (router network only; 0 on the message-level link model).
struct CollectiveCounters {
  struct Link {
    uint64_t busy = 0;   ///< TE cycles reserved or carrying flits
    uint64_t bytes = 0;  ///< payload bytes carried
    uint64_t flits = 0;  ///< router network flits carried
  };
  uint64_t ops = 0;       ///< collectives, sends and recvs completed
  uint64_t cycles = 0;    ///< their rendezvous-to-completion TE cycles, summed
  uint64_t messages = 0;  ///< messages this chip sent
  uint64_t bytes = 0;     ///< their payload bytes
  uint32_t last_steps = 0;  ///< the last collective's longest step chain of this chip's flows
  uint64_t net_cycles = 0, net_packets = 0, net_flits = 0, net_latency_sum = 0;
  uint32_t net_latency_max = 0;
  uint32_t net_replays = 0, net_crc_errors = 0;  ///< link-level retry in the whole network (NET_REPLAYS, ...)
  /// Per output link l = 2 * dimension + (0 towards +1, 1 towards -1), for the dimensions of DeviceInfo::torus;
  /// then, in a system of several UltraServers (DeviceInfo::pods > 1), the EFA link to the switch and the one back.
  std::vector<Link> links;
};

/// What Driver::wait() reports while a run goes on (Driver::set_progress).
struct RunProgress {
  uint64_t cycles = 0;   ///< TE cycles since this run's doorbell (CYCLE)
  uint64_t te_macs = 0;  ///< TE multiply-accumulates of this run so far
  /// This run's TE utilization so far: te_macs / (cycles x rows x cols), in [0, 1].
  double te_utilization(const DeviceInfo& info) const {
    const double peak = double(cycles) * info.te_rows * info.te_cols;
    return peak > 0 ? double(te_macs) / peak : 0.0;
  }
};

/// Element patterns (narrow types in the low bits) as device bytes of `type`: little-endian,
/// isa::data_type_bytes(type) bytes each, densely; and back. The one host-side tensor packing.
std::vector<uint8_t> pack_elements(const std::vector<uint32_t>& elements, isa::DataType type);
std::vector<uint32_t> unpack_elements(const std::vector<uint8_t>& bytes, isa::DataType type);

/// The state every new owner of a device starts from (docs/driver.md, "Wire protocol" HELLO and RESET): interrupts
/// disabled and cleared, CTRL.SOFT_RESET and PERF_CLEAR (semaphores, status, PCs, counters), the watchdog and
/// SR_SEED at their reset values, no queue loaded (Q_LEN, Q_BASE 0). Only register writes; no time passes.
void reset_device(Device& device);

/// The part of HBM a Driver allocates from and places its programs in (alloc(), load_program()): HBM addresses
/// [first, first + bytes). The default is all of HBM; drivers of several cores of one chip take disjoint regions
/// (chip_regions). HBM is one for the chip, so every core reaches every region at the same addresses.
struct HbmRegion {
  uint64_t first = 0;
  uint64_t bytes = UINT64_MAX;  ///< clipped to the end of HBM
};

/// `cores` disjoint HBM regions of equal size (aligned to 4 KiB) covering HBM of `hbm_bytes`, for one Driver per
/// core; DriverError for 0 cores.
std::vector<HbmRegion> chip_regions(uint64_t hbm_bytes, uint32_t cores);

/// Drives one NeuronCore: core 0 of `device`, or core c through a CoreDevice view (core_device.h). Not copyable;
/// holds a reference to the device, which must outlive it.
class Driver {
 public:
  /// Reads ID, VERSION and the configuration registers. Throws DeviceMismatch when ID is not regs::kIdValue, the
  /// device decodes an ISA version other than 0, or a configuration register is 0 / too small for the ISA (fewer
  /// than isa::kNumQueues queues or isa::kNumSemaphores semaphores); AddressError for a region that starts past
  /// the end of HBM or is empty.
  explicit Driver(Device& device, HbmRegion region = {});
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  const DeviceInfo& info() const { return info_; }
  Device& device() const { return device_; }

  // ---- HBM allocation. A bump allocator from HBM address 0 upwards; the loaded program lives at the top of HBM.

  /// Reserves `bytes` (>= 1) of HBM aligned to `align` (a power of two) inside the driver's region and returns its
  /// HBM address.
  /// Throws OutOfDeviceMemory when it does not fit below the program area, DriverError for bytes 0 or a bad align.
  uint64_t alloc(uint64_t bytes, uint64_t align = 64);
  /// Releases every alloc() (the loaded program stays).
  void free_all() { next_free_ = region_.first; }
  /// Bytes of the region below the end of the last allocation (including alignment padding).
  uint64_t hbm_allocated() const { return next_free_ - region_.first; }
  /// The driver's HBM region (clipped to HBM).
  const HbmRegion& hbm_region() const { return region_; }

  // ---- Memory access (host <-> device). Each throws AddressError for a range outside its space.

  /// Writes `bytes` bytes from `data` to HBM address `hbm_addr`.
  void write_hbm(uint64_t hbm_addr, const void* data, std::size_t bytes);
  /// Reads `bytes` bytes at HBM address `hbm_addr` into `data`.
  void read_hbm(uint64_t hbm_addr, void* data, std::size_t bytes) const;
  /// Writes `elements.size()` elements of type `type` to HBM at `hbm_addr`: element patterns in the low bits of each
  /// uint32 (BF16/FP16 16 bits, FP8 8 bits), stored as pack_elements() lays them out; AddressError like write_hbm.
  void write_tensor(uint64_t hbm_addr, const std::vector<uint32_t>& elements, isa::DataType type);
  /// Reads `count` elements of `type` at HBM `hbm_addr` (the layout of write_tensor).
  std::vector<uint32_t> read_tensor(uint64_t hbm_addr, std::size_t count, isa::DataType type) const;
  /// Reads `bytes` bytes of SBUF partition `partition` from byte `offset` (debug and tests).
  void read_sbuf(uint32_t partition, uint32_t offset, void* data, std::size_t bytes) const;
  /// Reads `bytes` bytes of PSUM partition `partition` from byte `offset` (debug and tests).
  void read_psum(uint32_t partition, uint32_t offset, void* data, std::size_t bytes) const;

  // ---- Programs

  /// Encodes every non-empty queue of `program` (isa::encode, 64 bytes per instruction) into the program area at
  /// the top of the driver's HBM region (each queue 4 KiB aligned) and programs Q_BASE_LO/HI and Q_LEN; every other
  /// queue gets Q_LEN 0.
  /// Replaces the previously loaded program. Does not validate instructions: the device reports malformed ones when
  /// it runs them (check with isa::validate first to catch them on the host). Throws DriverError for an empty
  /// program or a queue the device does not have, OutOfDeviceMemory when the program would overlap alloc()ed HBM.
  void load_program(const isa::Program& program);
  /// HBM address of queue `queue`'s first instruction in the loaded program (0 when it has none).
  uint64_t program_base(uint32_t queue) const { return queue < queue_base_.size() ? queue_base_[queue] : 0; }

  /// Sets WATCHDOG_CYCLES: the device stops with ERR_WATCHDOG when for `cycles` TE cycles no queue retires an
  /// instruction and no DMA copy is moving bytes (0 = off). The device's reset value applies until this is called.
  void set_watchdog(uint32_t cycles);
  /// Sets SR_SEED, the seed of every stochastically rounded cast (instructions with the sr flag; BRIEF section 3
  /// rule 9, docs/numerics.md "Stochastic rounding"). 0 (the reset value) until this is called.
  void set_sr_seed(uint32_t seed);

  /// Runs the loaded program: soft reset (CTRL.SOFT_RESET: semaphores, status, PCs, cycle counter), INT_ENABLE =
  /// DONE|ERROR, DOORBELL with one bit per loaded queue, then Device::wait_interrupt(timeout_cycles), then STATUS.
  /// Returns the cycles and retired counts of a run that ended with every queue halted; clears INT_STATUS.
  /// Throws DeviceFault when the device stopped with an error, DriverTimeout when it is still busy after
  /// `timeout_cycles` TE cycles (it is left running; the next run() soft-resets it), DriverError when no program
  /// is loaded.
  RunResult run(uint64_t timeout_cycles);
  /// The first half of run(): soft reset, INT_ENABLE, DOORBELL, and a read of STATUS that flushes those writes to the
  /// device (a served device posts writes); returns without waiting for the run. For systems whose chips must all
  /// be started before any of them waits (a multi-chip system: start() every chip's driver, then wait() each).
  /// Throws DriverError when no program is loaded.
  void start();
  /// The second half of run(): Device::wait_interrupt(timeout_cycles), then STATUS, exactly as run().
  RunResult wait(uint64_t timeout_cycles);
  /// Waits for the first of several started runs to end. `drivers` drive distinct cores of one chip, each through a
  /// CoreDevice view of the same chip Device (core_device.h); one driver may also be on a device of its own. Sets
  /// CHIP_INT_ENABLE to their cores and lets the chip run (Device::wait_interrupt) until one of their interrupt lines
  /// is high or `max_cycles` TE cycles have passed; with progress on drivers[0] (set_progress) the wait runs in its
  /// slices and reports its core. Returns the index into `drivers` of the lowest-numbered core whose line is high
  /// (collect that run with its wait(), which then returns at once), or -1 when none rose in time. No time passes
  /// when a line is already high. Throws DriverError for an empty list, or several drivers that are not views of
  /// distinct cores of one chip.
  static int wait_first(const std::vector<Driver*>& drivers, uint64_t max_cycles);

  /// A 64-bit register pair (`lo`, `hi` offsets): HI, LO, HI again, retried when the low word wrapped in between
  /// (docs/registers.md, "Running a program").
  uint64_t read_reg64(uint32_t lo, uint32_t hi) const;
  /// Reads every performance counter (HI, LO, HI for each 64-bit one).
  DeviceCounters read_counters() const;
  /// Reads the collective counters (HI, LO, HI for each 64-bit one).
  CollectiveCounters read_collective_counters() const;
  /// CTRL.PERF_CLEAR: every performance counter (the collective ones too) and UPTIME restart from 0.
  void clear_counters();
  /// While wait() runs, calls `callback` about every `interval_s` seconds of host time with the run's cycles and
  /// MACs so far, read from CYCLE and TE_MACS. The device then runs in slices (wait_interrupt of a bounded number
  /// of cycles each, adapted to a fraction of the interval in host time); the simulation is the same. An empty
  /// callback turns it off.
  void set_progress(std::function<void(const RunProgress&)> callback, double interval_s = 2.0);

 private:
  /// `device`.wait_interrupt (this driver's, or its chip's for wait_first) in slices of up to `timeout_cycles`, with
  /// a progress line on this driver's core between them (set_progress). True when the line rose.
  bool wait_with_progress(Device& device, uint64_t timeout_cycles);
  /// Up to `max_bytes` ASCII bytes of the registers from `base` up, 4 per register little-endian, to the first 0.
  std::string read_ascii(uint32_t base, uint32_t max_bytes) const;
  /// ERR_DETAIL as text (ERR_DETAIL_LEN bytes).
  std::string read_err_detail() const;
  void check_range(const char* what, uint64_t addr, uint64_t bytes, uint64_t limit) const;
  std::string instruction_text(uint32_t queue, uint32_t index) const;

  Device& device_;
  DeviceInfo info_;
  HbmRegion region_;
  uint64_t next_free_ = 0;        ///< first HBM byte not allocated
  uint64_t program_floor_;        ///< lowest HBM byte of the program area (the region's end when none)
  std::vector<uint64_t> queue_base_;  ///< per queue id: HBM address of its program
  std::vector<uint32_t> queue_len_;   ///< per queue id: instructions (0 = not loaded)
  isa::Program program_;              ///< the loaded program (for error messages)
  std::function<void(const RunProgress&)> progress_;
  double progress_interval_s_ = 2.0;
  uint64_t run_macs_origin_ = 0;      ///< TE_MACS at the last start()
  uint64_t progress_slice_ = 20000;   ///< cycles of one wait_interrupt() while progress is on (adapted)
};

}  // namespace trnsim::driver
