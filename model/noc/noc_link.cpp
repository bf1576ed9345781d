// The NeuronLink link layer in C++. See noc_link.h.
#include "model/noc/noc_link.h"

#include <cmath>

#include <fmt/core.h>

namespace trnsim::model::noc {

namespace {

// One register step of a most-significant-bit-first CRC of `width` bits.
template <class T>
T crc_step(T c, unsigned bit, T poly, int width) {
  const T top = static_cast<T>(c >> (width - 1) & 1u);
  c = static_cast<T>(c << 1);
  if ((top ^ (bit & 1u)) != 0) c = static_cast<T>(c ^ poly);
  return c;
}

// Feeds the `n` low bits of `v` into the CRC, most significant first.
template <class T>
T crc_bits(T c, uint64_t v, int n, T poly, int width) {
  for (int i = n - 1; i >= 0; --i) c = crc_step<T>(c, static_cast<unsigned>(v >> i & 1), poly, width);
  return c;
}

constexpr uint32_t kPoly = 0x04C11DB7u;

// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014): a counter-based
// stream, so the faults of a beat depend only on its key.
uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A uniform double in (0, 1].
double unit(uint64_t r) { return (double(r >> 11) + 1.0) * (1.0 / 9007199254740992.0); }

constexpr int kFwdFlipBits = 111;  // FwdBeat bits 110:0 (seq, crc, flit)
constexpr int kBwdFlipBits = 53;   // BwdBeat bits 52:0 (vc, fc, ack, nak, crc)

}  // namespace

uint32_t crc32_mpeg2(const uint8_t* bytes, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = crc_bits<uint32_t>(c, bytes[i], 8, kPoly, 32);
  return c;
}

uint32_t fwd_crc(unsigned seq, const Flit& flit) {
  uint32_t c = crc_bits<uint32_t>(0xFFFFFFFFu, seq, kSeqBits, kPoly, 32);
  c = crc_bits<uint32_t>(c, FwdBeat::flit_ctl_of(flit), 5, kPoly, 32);
  return crc_bits<uint32_t>(c, flit.data, 64, kPoly, 32);
}

uint32_t bwd_crc(int vc, unsigned fc, unsigned ack, bool nak) {
  const uint64_t m = uint64_t(unsigned(vc) & 7u) << 18 | uint64_t(fc & 0x7Fu) << 11 | uint64_t(ack & 0x3FFu) << 1 |
                     uint64_t(nak);
  return crc_bits<uint32_t>(0xFFFFFFFFu, m, 21, kPoly, 32);
}

FwdBeat fwd_beat(const Flit& flit, unsigned seq) { return FwdBeat::of(flit, seq, fwd_crc(seq, flit)); }
BwdBeat bwd_beat(int vc, unsigned fc, unsigned ack, bool nak) {
  return BwdBeat::of(vc, fc, ack, nak, bwd_crc(vc, fc, ack, nak));
}
bool crc_ok(const FwdBeat& b) { return fwd_crc(b.seq(), b.flit()) == b.crc(); }
bool crc_ok(const BwdBeat& b) { return bwd_crc(b.vc(), b.fc(), b.ack(), b.nak()) == b.crc(); }

void RetryParams::validate() const {
  if (replay_timeout < 2 || replay_timeout > 65535) {
    throw NocError(fmt::format("replay timeout {} cycles outside 2..65535", replay_timeout));
  }
  if (replay_limit < 1 || replay_limit > 255) throw NocError(fmt::format("replay limit {} outside 1..255", replay_limit));
  if (refresh < 2 || refresh > 128 || (refresh & (refresh - 1)) != 0) {
    throw NocError(fmt::format("refresh period {} cycles: a power of two 2..128", refresh));
  }
}

void LinkErrors::validate() const {
  if (!(ber >= 0 && ber <= 0.5)) {
    throw NocError(fmt::format("bit error rate {}: a probability 0..0.5 (independent errors per link bit)", ber));
  }
  if (!(drop >= 0 && drop <= 1)) throw NocError(fmt::format("flit drop rate {}: a probability 0..1", drop));
}

std::string LinkErrors::str() const {
  if (!any()) return "no faults";
  return fmt::format("BER {:g}, drop {:g}, seed {}", ber, drop, seed);
}

LinkFaultInjector::LinkFaultInjector(const LinkErrors& errors) : errors_(errors) {
  errors_.validate();
  enabled_ = errors_.any();
  log_keep_ = errors_.ber > 0 ? std::log1p(-errors_.ber) : 0;
}

// Bit positions in [0, nbits) that flip, each with probability ber, by geometric skips: the gap before the next
// error is floor(log(u) / log(1 - ber)) error-free bits for a uniform u (Devroye, "Non-Uniform Random Variate
// Generation", 1986, ch. X.2), so a clean beat costs one draw.
uint64_t LinkFaultInjector::flips(uint64_t key, int nbits, int& drawn) const {
  uint64_t m = 0;
  if (errors_.ber <= 0) return 0;
  double pos = -1;
  for (;;) {
    pos += 1 + std::floor(std::log(unit(mix(key + uint64_t(drawn++)))) / log_keep_);
    if (pos >= nbits) return m;
    m |= uint64_t{1} << static_cast<int>(pos);
  }
}

BeatFault LinkFaultInjector::forward(uint64_t link, uint64_t cycle) const {
  BeatFault f;
  if (!enabled()) return f;
  const uint64_t key = mix(mix(mix(errors_.seed) ^ link) ^ cycle) << 1;
  int drawn = 1;
  if (errors_.drop > 0 && unit(mix(key)) <= errors_.drop) {
    f.drop = true;
    return f;
  }
  // Bits 0..63 (data) and 64..110 (ctl 46:0) as two streams of one key.
  f.flip_lo = flips(key, 64, drawn);
  f.flip_hi = flips(mix(key ^ 0xF1F1F1F1F1F1F1F1ull), kFwdFlipBits - 64, drawn);
  return f;
}

BeatFault LinkFaultInjector::backward(uint64_t link, uint64_t cycle) const {
  BeatFault f;
  if (errors_.ber <= 0) return f;
  const uint64_t key = mix(mix(mix(errors_.seed) ^ link) ^ cycle) << 1 | 1;
  int drawn = 0;
  f.flip_lo = flips(key, kBwdFlipBits, drawn);
  return f;
}

FwdBeat apply_fault(const FwdBeat& b, const BeatFault& f) {
  if (f.drop) return FwdBeat{};
  return FwdBeat{b.data ^ f.flip_lo, b.ctl ^ f.flip_hi};
}

BwdBeat apply_fault(const BwdBeat& b, const BeatFault& f) { return BwdBeat{b.bits ^ f.flip_lo}; }

std::string link_where(const std::string& node, int link, const std::string& peer) {
  return fmt::format("router {} port {} (link to router {} port {})", node, link_port_name(link), peer,
                     link_port_name(link ^ 1));
}

std::string link_down_message(const std::string& node, int link, const std::string& peer, int replay_limit) {
  return fmt::format("{}: down: {} replays in a row got no acknowledgement (REPLAY_LIMIT) and another was due: the "
                     "oldest unacknowledged flit or its acknowledgements keep being lost or corrupted (a bit error "
                     "rate too high for the link, or a far end that stopped)",
                     link_where(node, link, peer), replay_limit);
}

std::string link_down_error(uint64_t cycle, const std::vector<LinkEnd>& down, int replay_limit) {
  if (down.empty()) return fmt::format("cycle {}: link down", cycle);
  const LinkEnd& first = down.front();
  std::string more;
  for (size_t i = 1; i < down.size(); ++i) {
    more += fmt::format("{}router {} port {}", i > 1 ? ", " : "", down[i].node, link_port_name(down[i].link));
  }
  return fmt::format("cycle {}: link down: {}{}", cycle,
                     link_down_message(first.node, first.link, first.peer, replay_limit),
                     more.empty() ? "" : fmt::format(" (and {} more down in this cycle: {})", down.size() - 1, more));
}

bool LinkStats::operator==(const LinkStats& o) const {
  return flits == o.flits && replayed == o.replayed && crc_errors == o.crc_errors && bwd_errors == o.bwd_errors &&
         replays == o.replays && injected_flips == o.injected_flips && injected_drops == o.injected_drops;
}

LinkStats LinkStats::since(const LinkStats& e) const {
  return LinkStats{flits - e.flits,           replayed - e.replayed, crc_errors - e.crc_errors,
                   bwd_errors - e.bwd_errors, replays - e.replays,   injected_flips - e.injected_flips,
                   injected_drops - e.injected_drops};
}

LinkStats& LinkStats::operator+=(const LinkStats& o) {
  flits += o.flits;
  replayed += o.replayed;
  crc_errors += o.crc_errors;
  bwd_errors += o.bwd_errors;
  replays += o.replays;
  injected_flips += o.injected_flips;
  injected_drops += o.injected_drops;
  return *this;
}

std::string LinkStats::str() const {
  return fmt::format("flits {}, replayed {}, CRC errors {}, backward errors {}, replays {}, injected: {} corrupted "
                     "beats, {} drops",
                     flits, replayed, crc_errors, bwd_errors, replays, injected_flips, injected_drops);
}

}  // namespace trnsim::model::noc
