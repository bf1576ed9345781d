// NeuronLink flit and link formats in C++: the same bit layout as rtl/noc/trn_noc_pkg.sv (docs/neuronlink.md has
// the tables). Shared by the TLM network (model/noc/noc_tlm.h) and the verilated one (cosim/noc/noc_rtl.h), where
// flits cross the C++/RTL boundary as raw bits; these helpers pack and unpack them.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace trnsim::model::noc {

/// A network-level failure: an RTL assertion or a TLM protocol check, a link that did not come up, the watchdog,
/// a bad option.
class NocError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

constexpr int kMaxDim = 3;        // trn_noc_pkg MAX_DIM
constexpr int kCoordBits = 4;     // COORD_W: up to 16 routers per dimension
constexpr int kMaxSize = 1 << kCoordBits;
constexpr int kVcBits = 3;        // VC_W
constexpr int kMaxVc = 8;         // MAX_VC
constexpr int kMclassBits = 2;    // MCLASS_W
constexpr int kHeadPayloadBits = 64 - kMaxDim * kCoordBits - kMclassBits;  // 50
constexpr int kFlitBits = 69;     // $bits(flit_t)
constexpr int kSeqBits = 10;      // SEQ_W: link sequence numbers modulo 1024
constexpr int kFcBits = 7;        // FC_W: freed-slot counts modulo 128
constexpr int kLinkFwdBits = 113; // $bits(link_fwd_t)
constexpr int kLinkBwdBits = 55;  // $bits(link_bwd_t)
constexpr int kLinkCfgBits = 10;  // $bits(link_cfg_t)

/// Router coordinates; dimensions a torus does not have are 0.
struct Coord {
  std::array<int, kMaxDim> c{0, 0, 0};
  int& operator[](int d) { return c[static_cast<size_t>(d)]; }
  int operator[](int d) const { return c[static_cast<size_t>(d)]; }
  bool operator==(const Coord& o) const { return c == o.c; }
  bool operator!=(const Coord& o) const { return c != o.c; }
  /// "(x,y)" or "(x,y,z)".
  std::string str(int ndim) const;
  /// The coord_t bit pattern (x in bits 3:0, y in 7:4, z in 11:8).
  uint32_t bits() const { return uint32_t(c[0]) | uint32_t(c[1]) << 4 | uint32_t(c[2]) << 8; }
  static Coord from_bits(uint32_t b) { return Coord{{int(b & 15), int(b >> 4 & 15), int(b >> 8 & 15)}}; }
};

/// One flit (flit_t).
struct Flit {
  bool head = false;
  bool tail = false;
  uint8_t vc = 0;
  uint64_t data = 0;
  bool operator==(const Flit& o) const { return head == o.head && tail == o.tail && vc == o.vc && data == o.data; }
};

/// A head flit's data (header_t): destination, message class, 50 endpoint bits.
inline uint64_t make_header(const Coord& dst, unsigned mclass, uint64_t payload) {
  return uint64_t{dst.bits()} << 52 | uint64_t{mclass & 3u} << 50 | (payload & ((uint64_t{1} << 50) - 1));
}
inline Coord header_dst(uint64_t data) { return Coord::from_bits(static_cast<uint32_t>(data >> 52)); }
inline unsigned header_mclass(uint64_t data) { return static_cast<unsigned>(data >> 50) & 3u; }
inline uint64_t header_payload(uint64_t data) { return data & ((uint64_t{1} << 50) - 1); }

/// Flow-control parameters of one link end (link_cfg_t).
struct LinkCfg {
  int num_vc = 0;
  int depth = 0;
  uint32_t bits() const { return uint32_t(num_vc & 15) << 6 | uint32_t(depth & 63); }
  static LinkCfg from_bits(uint32_t b) { return {int(b >> 6 & 15), int(b & 63)}; }
  bool operator==(const LinkCfg& o) const { return num_vc == o.num_vc && depth == o.depth; }
};

/// A forward-channel beat (link_fwd_t, 113 bits) as raw bits: `data` = bits 63:0, `ctl` = bits 112:64 (bit 48
/// valid, 47 init, 46:37 seq, 36:5 crc, 4 head, 3 tail, 2:0 vc). The crc field is fwd_crc(seq, flit) of
/// model/noc/noc_link.h.
struct FwdBeat {
  uint64_t data = 0;
  uint64_t ctl = 0;
  bool valid() const { return ctl >> 48 & 1; }
  bool init() const { return ctl >> 47 & 1; }
  unsigned seq() const { return static_cast<unsigned>(ctl >> 37) & 0x3FF; }
  uint32_t crc() const { return static_cast<uint32_t>(ctl >> 5); }
  /// The flit_t bits 68:64 (head, tail, vc).
  unsigned flit_ctl() const { return static_cast<unsigned>(ctl) & 0x1F; }
  Flit flit() const { return Flit{bool(ctl & 0x10), bool(ctl & 0x08), uint8_t(ctl & 7), data}; }
  /// A valid beat carrying `f` with sequence number `seq` and CRC `crc`.
  static FwdBeat of(const Flit& f, unsigned seq, uint32_t crc) {
    return FwdBeat{f.data, uint64_t{1} << 48 | uint64_t(seq & 0x3FF) << 37 | uint64_t(crc) << 5 | flit_ctl_of(f)};
  }
  /// flit_t bits 68:64 of `f`.
  static unsigned flit_ctl_of(const Flit& f) { return (f.head ? 0x10u : 0u) | (f.tail ? 0x08u : 0u) | (f.vc & 7u); }
};

/// A backward-channel beat (link_bwd_t, 55 bits): bit 54 valid, 53 init, 52:50 vc, 49:43 fc, 42:33 ack, 32 nak,
/// 31:0 crc. The crc field is bwd_crc(vc, fc, ack, nak) of model/noc/noc_link.h; a credit-init beat (init) carries
/// the receiver's link_cfg_t in the ack field.
struct BwdBeat {
  uint64_t bits = 0;
  bool valid() const { return bits >> 54 & 1; }
  bool init() const { return bits >> 53 & 1; }
  int vc() const { return static_cast<int>(bits >> 50 & 7); }
  unsigned fc() const { return static_cast<unsigned>(bits >> 43) & 0x7F; }
  unsigned ack() const { return static_cast<unsigned>(bits >> 33) & 0x3FF; }
  bool nak() const { return bits >> 32 & 1; }
  uint32_t crc() const { return static_cast<uint32_t>(bits); }
  LinkCfg cfg() const { return LinkCfg::from_bits(ack()); }
  /// A valid beat with these fields and CRC `crc`.
  static BwdBeat of(int vc, unsigned fc, unsigned ack, bool nak, uint32_t crc) {
    return BwdBeat{uint64_t{1} << 54 | uint64_t(vc & 7) << 50 | uint64_t(fc & 0x7F) << 43 |
                   uint64_t(ack & 0x3FF) << 33 | uint64_t(nak) << 32 | crc};
  }
  /// This credit-init beat advertising `c` instead.
  BwdBeat with_cfg(const LinkCfg& c) const {
    return BwdBeat{(bits & ~(uint64_t{0x3FF} << 33)) | uint64_t(c.bits()) << 33};
  }
};

/// Link port l of a router: dimension l / 2, the negative side when l is odd. Name like "+x", "-z".
std::string link_port_name(int l);

}  // namespace trnsim::model::noc
