#include "model/config/chip_config.h"

#include <stdexcept>

namespace trnsim::model {

ChipConfig chip_config(std::string_view name) {
  ChipConfig c;
  c.name = std::string(name);
  if (name == "tiny") {
    // Test configuration (BRIEF section 2): a 16x16 TE, 16-partition SBUF and PSUM, two NeuronCores (the small core
    // count of the tests), HBM bandwidth as trn2's.
    return c;
  }
  if (name == "trn2" || name == "trn2-16" || name == "trn2-64" || name == "trn2-256") {
    // Trainium2 (BRIEF section 2): NeuronCores with a 128x128 TE, SBUF 24 MiB and PSUM 2 MiB over 128 partitions;
    // 8 cores per chip sharing 96 GiB HBM at 2.9 TB/s. trn2-16 (trn2.48xlarge) and trn2-64 (UltraServer) are 16 and
    // 64 such chips; trn2-256 is four UltraServers joined by EFA.
    c.te_rows = c.te_cols = 128;
    c.sbuf_partitions = c.psum_partitions = 128;
    c.hbm_bytes = 96ull << 30;
    // The Vector engine's data path: 256 elements per cycle, 512 when every operand is BF16 or FP16 (AWS Neuron,
    // "Trainium2 Architecture Guide for NKI", table "Compute Engine Specifications").
    c.vector_elems_per_cycle = 256;
    c.vector_elems_per_cycle_16 = 512;
    c.cores = 8;
    c.chips = name == "trn2" ? 1 : name == "trn2-16" ? 16 : name == "trn2-64" ? 64 : 256;
    if (name == "trn2-16") c.torus_dims = {4, 4};     // trn2.48xlarge: 4x4 2-D torus (BRIEF section 2)
    if (name == "trn2-64") c.torus_dims = {4, 4, 4};  // UltraServer: four 4x4 tori joined by Z rings
    if (name == "trn2-256") {
      c.torus_dims = {4, 4, 4};
      c.pods = 4;  // four UltraServers; chip r is in UltraServer r / 64
    }
    return c;
  }
  if (name == "trn3") {
    // Trainium3 NeuronCore-v4 (AWS Neuron documentation, "NeuronCore-v4 Architecture" and "Trainium3 Architecture
    // Guide for NKI"): a 128x128 TE with MXFP8/MXFP4, 32 MiB SBUF (128 partitions of 256 KiB), PSUM unchanged from
    // NeuronCore-v3 (2 MiB), 144 GiB HBM per chip, 128 DMA engines per chip (16 per core) sharing 4.9 TB/s of DMA
    // bandwidth (38 B/ns each), 8 cores per chip, HBM at 4.9 TB/s. Kept from trn2: the DMA start latency (not
    // published) and the clocks (the Trainium3 guide's Vector engine runs at 1.2 GHz, not modelled). The MX rate follows BRIEF rule 8 (2 partitions per PE per cycle); the published
    // 315 MXFP8 TFLOPS per core against 84 BF16 suggests the silicon contracts 4 MX partitions per PE per cycle.
    c.te_rows = c.te_cols = 128;
    c.sbuf_partitions = c.psum_partitions = 128;
    c.sbuf_partition_bytes = 256 * 1024;
    c.hbm_bytes = 144ull << 30;
    c.cores = 8;
    c.hbm_bytes_per_ns = 4900.0;
    c.dma_bytes_per_ns = 38.0;
    // The Vector data path as trn2's (the Trainium3 guide gives the same 512 / 256 elements per cycle, but counts FP8
    // among the fast types and clocks the engine at 1.2 GHz; neither is modelled here).
    c.vector_elems_per_cycle = 256;
    c.vector_elems_per_cycle_16 = 512;
    return c;
  }
  std::string known;
  for (const auto& n : chip_config_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown config '" + std::string(name) + "' (known: " + known + ")");
}

std::vector<std::string> chip_config_names() { return {"tiny", "trn2", "trn2-16", "trn2-64", "trn2-256", "trn3"}; }

}  // namespace trnsim::model
