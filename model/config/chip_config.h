// Named machine configurations (BRIEF section 2): sizes of the Tensor Engine, SBUF, PSUM and DMA of one
// NeuronCore, the cores of a chip and their HBM, the clocks. Chosen at run time with `--config`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trnsim::model {

/// One chip: its cores (each with the same resources) and their shared HBM. Sizes in bytes unless named otherwise.
struct ChipConfig {
  std::string name;
  int te_rows = 16;                       ///< TE array rows = partitions of the contraction (K per pass)
  int te_cols = 16;                       ///< TE array columns = stationary free size M per pass
  int sbuf_partitions = 16;
  uint32_t sbuf_partition_bytes = 192 * 1024;  ///< Trainium2: 24 MiB / 128 partitions = 192 KiB
  int psum_partitions = 16;
  uint32_t psum_partition_bytes = 16 * 1024;   ///< Trainium2: 2 MiB / 128 partitions = 16 KiB (8 banks)
  int psum_banks = 8;                          ///< each bank holds 512 FP32 per partition
  uint64_t hbm_bytes = 1ull << 30;             ///< address range; storage is allocated on touch
  /// NeuronCores on the chip, sharing its HBM (BRIEF section 2: trn2 8; `tiny` 2, the small count of the tests).
  int cores = 2;
  /// The chip's HBM bandwidth, shared max-min fairly by its cores' DMA copies (model/mem/hbm_model.h), bytes/ns =
  /// GB/s (BRIEF section 2: 2.9 TB/s).
  double hbm_bytes_per_ns = 2900.0;
  int num_dma_engines = 16;                    ///< per NeuronCore (BRIEF section 2)
  double dma_bytes_per_ns = 23.0;              ///< per DMA engine (BRIEF section 2: ~23 B/ns)
  double dma_latency_ns = 1300.0;              ///< start latency of one copy (BRIEF section 2: ~1.3 us)
  uint32_t te_clock_mhz = 2400;                ///< TE clock (BRIEF section 2: 2.4 GHz)
  uint32_t vector_clock_mhz = 960;             ///< Vector engine clock (BRIEF section 2: 0.96 GHz)
  uint32_t scalar_clock_mhz = 1200;            ///< Scalar (activation) engine clock (BRIEF section 2: 1.2 GHz)
  /// Vector engine data path, elements per Vector cycle over all lanes (isa::VecDataPath): with an operand of a type
  /// other than BF16 / FP16, and with every operand BF16 or FP16. `tiny`: one element per lane (16 / 16); Trainium2:
  /// 256 / 512 (AWS Neuron, "Trainium2 Architecture Guide for NKI", "Compute Engine Specifications").
  uint32_t vector_elems_per_cycle = 16;
  uint32_t vector_elems_per_cycle_16 = 16;
  int chips = 1;                               ///< chips in the system (multi-chip configs)
  /// Chip-to-chip network of a multi-chip system (docs/neuronlink.md "Collectives"): torus sizes, x fastest
  /// ({4, 4} = trn2.48xlarge, {4, 4, 4} = UltraServer with Z rings); empty for one chip.
  std::vector<int> torus_dims;
  /// NeuronLink bandwidth per link and direction, GB/s = 1e9 B/s. BRIEF section 2: 1.28 TB/s per chip over 4 links,
  /// counted over both directions (as interconnect totals are quoted) -> 1280 / 4 / 2 = 160 GB/s.
  double link_gbytes_per_s = 160.0;
  /// Z (between-instance) link bandwidth per direction: BRIEF section 2, 256 GB/s per chip between instances over
  /// its two Z links, both directions -> 256 / 2 / 2 = 64 GB/s.
  double z_link_gbytes_per_s = 64.0;
  /// Latency of one hop (link + router), ns: BRIEF section 2 "1-2 us per hop", the midpoint.
  double link_hop_latency_ns = 1500.0;
  /// UltraServers (tori of torus_dims) joined by an EFA network: 1 = one torus (docs/distributed.md "Larger systems").
  int pods = 1;
  /// EFA bandwidth per chip and direction, GB/s: a trn2.48xlarge instance has 3.2 Tbps of EFAv3 for its 16 chips
  /// (AWS, "Amazon EC2 Trn2 instances"), 3200 / 8 / 16 = 25 GB/s.
  double efa_gbytes_per_s = 25.0;
  /// One pass through the EFA network (chip to switch, or switch to chip), ns. Not published: assumed 5 us, so a
  /// message between UltraServers takes 10 us plus its bytes, several NeuronLink hops' worth.
  double efa_latency_ns = 5000.0;

  uint64_t sbuf_bytes() const { return uint64_t(sbuf_partitions) * sbuf_partition_bytes; }
  uint64_t psum_bytes() const { return uint64_t(psum_partitions) * psum_partition_bytes; }
  uint32_t psum_bank_bytes() const { return psum_partition_bytes / uint32_t(psum_banks); }
};

/// The configuration called `name` (tiny, trn2, trn2-16, trn2-64, trn2-256, trn3). Throws std::invalid_argument naming the
/// known names for anything else.
ChipConfig chip_config(std::string_view name);
/// Names accepted by chip_config().
std::vector<std::string> chip_config_names();

}  // namespace trnsim::model
