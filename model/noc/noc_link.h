// The NeuronLink link layer in C++: the link CRCs of rtl/noc/trn_noc_pkg.sv, the link-retry parameters, run-time
// fault injection (bit errors and lost flits on the wire) and the counters of the retry. Shared by the TLM network
// (noc_tlm.h) and the verilated one (cosim/noc/noc_rtl.h), so that both see the same faults on the same beats and
// lockstep stays exact with faults on. docs/neuronlink.md, "Link-level retry", describes the protocol.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/noc/noc_flit.h"

namespace trnsim::model::noc {

// ---- CRCs (trn_noc_pkg fwd_crc / bwd_crc) ----------------------------------------------------------------------
// CRC-32/MPEG-2 on both channels, most significant message bit first, no reflection, no final XOR. Parameters from
// the CRC catalogue (Greg Cook, reveng.sourceforge.io/crc-catalogue): polynomial 0x04C11DB7, init 0xFFFFFFFF, check
// 0x0376E6E7.

/// CRC-32/MPEG-2 of `n` bytes (the catalogue's definition; "123456789" gives 0x0376E6E7).
uint32_t crc32_mpeg2(const uint8_t* bytes, size_t n);
/// The forward beat's CRC: CRC-32/MPEG-2 over the 79 bits {seq[9:0], head, tail, vc[2:0], data[63:0]}.
uint32_t fwd_crc(unsigned seq, const Flit& flit);
/// The backward beat's CRC: CRC-32/MPEG-2 over the 21 bits {vc[2:0], fc[6:0], ack[9:0], nak}.
uint32_t bwd_crc(int vc, unsigned fc, unsigned ack, bool nak);
/// A valid forward beat carrying `flit` as sequence number `seq`, with its CRC.
FwdBeat fwd_beat(const Flit& flit, unsigned seq);
/// A valid backward beat with these fields and their CRC.
BwdBeat bwd_beat(int vc, unsigned fc, unsigned ack, bool nak);
/// The beat's CRC field matches its contents.
bool crc_ok(const FwdBeat& b);
bool crc_ok(const BwdBeat& b);

// ---- Retry parameters (trn_noc_router REPLAY_TIMEOUT, REPLAY_LIMIT, REFRESH) ----------------------------------
struct RetryParams {
  int replay_timeout = 128;  ///< cycles with unacknowledged flits and no acknowledgement before a replay, 2..65535
  int replay_limit = 8;      ///< replays in a row without an acknowledgement; the next one takes the link down, 1..255
  int refresh = 32;          ///< cycles between a receiver's refresh beats, a power of two 2..128
  bool operator==(const RetryParams& o) const {
    return replay_timeout == o.replay_timeout && replay_limit == o.replay_limit && refresh == o.refresh;
  }
  /// Throws NocError naming the first field out of range.
  void validate() const;
};

// ---- Fault injection ---------------------------------------------------------------------------------------------
/// Faults on every link, at run time (`trnsim noc --ber P --drop P --fault-seed S`).
///
/// Bit errors hit the beats that carry something: a forward beat with a flit (its 111 bits seq, crc and flit; the
/// valid and init framing bits are assumed protected by the line code) and a valid backward beat (its 53 bits vc, fc,
/// ack, nak and crc). Each bit flips independently with probability `ber`. A dropped flit is a forward beat that
/// never arrives (valid cleared), with probability `drop` per flit. Idle cycles and the bring-up beats are not hit.
/// The faults of a beat are a function of (seed, link, cycle, channel) only, so every backend that delivers the same
/// beat in the same cycle on the same link sees the same fault.
struct LinkErrors {
  double ber = 0;     ///< bit error probability, 0 <= ber <= 0.5
  double drop = 0;    ///< flit loss probability, 0 <= drop <= 1
  uint64_t seed = 1;  ///< fault stream
  bool any() const { return ber > 0 || drop > 0; }
  /// Throws NocError for a probability outside its range or not a number.
  void validate() const;
  /// "BER 1e-05, drop 0, seed 1" or "no faults".
  std::string str() const;
};

/// The faults of one beat: the bits to flip (in the beat's raw layout, FwdBeat data/ctl or BwdBeat bits) and
/// whether a forward beat is lost.
struct BeatFault {
  bool drop = false;
  uint64_t flip_lo = 0;  ///< FwdBeat::data / BwdBeat::bits
  uint64_t flip_hi = 0;  ///< FwdBeat::ctl (bits 46:0; 0 for backward beats)
  bool any() const { return drop || flip_lo != 0 || flip_hi != 0; }
};

/// Draws the faults of beats. `link` is src_node * (2 * ndim) + link port of the sender (the same index for both
/// channels of the link); `cycle` counts from reset release, the cycle the receiving end reads the beat.
class LinkFaultInjector {
 public:
  explicit LinkFaultInjector(const LinkErrors& errors);
  bool enabled() const { return enabled_; }  // read per link and cycle: a flag, not two comparisons of doubles
  BeatFault forward(uint64_t link, uint64_t cycle) const;
  BeatFault backward(uint64_t link, uint64_t cycle) const;

 private:
  uint64_t flips(uint64_t key, int nbits, int& drawn) const;  // up to 64 bits starting at bit 0
  LinkErrors errors_;
  bool enabled_ = false;
  double log_keep_ = 0;  // log(1 - ber)
};

/// `b` with the fault applied: flipped bits, or an idle beat when dropped.
FwdBeat apply_fault(const FwdBeat& b, const BeatFault& f);
BwdBeat apply_fault(const BwdBeat& b, const BeatFault& f);

/// "router (0,0) port +x (link to router (1,0) port -x)": where a link error is.
std::string link_where(const std::string& node, int link, const std::string& peer);
/// The link-down line: where, then "down: REPLAY_LIMIT replays in a row got no acknowledgement ...".
std::string link_down_message(const std::string& node, int link, const std::string& peer, int replay_limit);
/// One end of a link: the router's name, its link port, the far router's name.
struct LinkEnd {
  std::string node;
  int link = 0;
  std::string peer;
};
/// The error that ends a run when links go down, one line: "cycle N: link down: " and the first link's
/// link_down_message, then "(and K more links down in this cycle: router (1,3) port +x, ...)".
std::string link_down_error(uint64_t cycle, const std::vector<LinkEnd>& down, int replay_limit);

// ---- Counters ----------------------------------------------------------------------------------------------------
/// What the link layer did in a whole network since reset. The RTL reports crc_errors, bwd_errors and replays on
/// event outputs (trn_noc_router link_crc_err_o, link_bwd_err_o, link_replay_o); `replayed` is counted from the
/// sequence numbers on the wire; the injected counts come from the injector.
struct LinkStats {
  uint64_t flits = 0;           ///< forward beats carrying a flit, first copies and replays
  uint64_t replayed = 0;        ///< of those, copies sent again by a replay
  uint64_t crc_errors = 0;      ///< flits a receiver dropped for a bad CRC
  uint64_t bwd_errors = 0;      ///< backward beats a sender dropped for a bad CRC
  uint64_t replays = 0;         ///< replays started (after a NAK or the replay timeout)
  uint64_t injected_flips = 0;  ///< beats (either channel) the injector flipped bits in
  uint64_t injected_drops = 0;  ///< flits the injector removed
  bool operator==(const LinkStats& o) const;
  bool operator!=(const LinkStats& o) const { return !(*this == o); }
  /// The counts since `earlier` (a snapshot of the same counters).
  LinkStats since(const LinkStats& earlier) const;
  /// Adds `other`'s counts (the per-thread counts of a step into the network's).
  LinkStats& operator+=(const LinkStats& other);
  /// First copies over all flits sent (1 without replays).
  double efficiency() const { return flits ? double(flits - replayed) / double(flits) : 1.0; }
  /// "flits 123, replayed 4, CRC errors 2, backward errors 1, replays 2, injected: 3 corrupted beats, 0 drops"
  std::string str() const;
};

}  // namespace trnsim::model::noc
