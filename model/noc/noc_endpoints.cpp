// Message-level endpoints on a NeuronLink network. See noc_endpoints.h.
#include "model/noc/noc_endpoints.h"

#include <fmt/core.h>

namespace trnsim::model::noc {

NocEndpoints::NocEndpoints(NocPorts& net)
    : net_(net), sources_(static_cast<size_t>(net.nodes())),
      sinks_(static_cast<size_t>(net.nodes()), std::vector<Sink>(kMaxVc)) {}

uint64_t NocEndpoints::inject(int src, int dst, unsigned mclass, std::vector<uint64_t> payload, uint64_t tag) {
  if (src < 0 || src >= net_.nodes() || dst < 0 || dst >= net_.nodes()) {
    throw NocError(fmt::format("message from router {} to router {}: the network has routers 0..{}", src, dst,
                               net_.nodes() - 1));
  }
  if (mclass > 3) throw NocError(fmt::format("message class {}: 0..3", mclass));
  NocMessage m;
  m.id = next_id_++;
  m.src = src;
  m.dst = dst;
  m.mclass = mclass;
  m.payload = std::move(payload);
  m.tag = tag;
  m.queued = net_.cycle();
  sources_[size_t(src)].queue.push_back(m.id);
  messages_.emplace(m.id, std::move(m));
  return next_id_ - 1;
}

void NocEndpoints::step() {
  const uint64_t now = net_.cycle();
  for (int s = 0; s < net_.nodes(); ++s) {
    Source& src = sources_[size_t(s)];
    if (src.queue.empty()) {
      net_.drive_inject(s, nullptr);
      continue;
    }
    NocMessage& m = messages_.at(src.queue.front());
    Flit f;
    f.vc = static_cast<uint8_t>(m.id % uint64_t(net_.num_vc(s)));
    f.head = src.next == 0;
    f.tail = src.next == m.payload.size();
    f.data = f.head ? make_header(net_.coord(m.dst), m.mclass, m.id) : m.payload[src.next - 1];
    net_.drive_inject(s, &f);
    if (!net_.inj_ready(s)) continue;
    if (f.head) m.injected = now;
    if (f.tail) {
      src.queue.pop_front();
      src.next = 0;
    } else {
      ++src.next;
    }
  }
  std::vector<uint64_t> done;
  for (int d = 0; d < net_.nodes(); ++d) {
    net_.drive_eject_ready(d, true);
    if (!net_.ej_valid(d)) continue;
    const Flit f = net_.ej_flit(d);
    Sink& k = sinks_[size_t(d)][f.vc % kMaxVc];
    if (f.head) {
      k = Sink{true, header_payload(f.data), 0};
      auto it = messages_.find(k.id);
      if (it == messages_.end() || it->second.dst != d) {
        throw NocError(fmt::format("cycle {} router {}: head flit of message {} that is not in flight to it", now,
                                   net_.node_name(d), k.id));
      }
    } else {
      const NocMessage& m = messages_.at(k.id);
      if (!k.open || k.next >= m.payload.size() || m.payload[k.next] != f.data) {
        throw NocError(fmt::format("cycle {} router {}: flit {} of message {} differs from what was sent", now,
                                   net_.node_name(d), k.next + 1, k.id));
      }
      ++k.next;
    }
    if (f.tail) {
      NocMessage& m = messages_.at(k.id);
      if (k.next != m.payload.size()) {
        throw NocError(fmt::format("cycle {} router {}: message {} ended after {} of {} payload flits", now,
                                   net_.node_name(d), k.id, k.next, m.payload.size()));
      }
      m.delivered = now;
      k.open = false;
      done.push_back(k.id);
    }
  }
  net_.step();
  for (uint64_t id : done) {
    auto it = messages_.find(id);
    const NocMessage m = std::move(it->second);
    messages_.erase(it);
    if (delivered_cb_) delivered_cb_(m);
  }
}

bool NocEndpoints::drain(uint64_t max_cycles) {
  for (uint64_t c = 0; c < max_cycles && !messages_.empty(); ++c) step();
  return messages_.empty();
}

}  // namespace trnsim::model::noc
