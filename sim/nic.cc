#include "sim/nic.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "sim/packet_parser.h"

namespace drsim::sim {
namespace {

// The largest key a definer can produce: every word of the layout.
constexpr size_t kMaxKeyWords = hw::kMatchParamBytes / 4;

}  // namespace

const char* FateName(Fate fate) {
  switch (fate) {
    case Fate::kQueued:
      return "queued";
    case Fate::kDropped:
      return "dropped";
    case Fate::kDomainDefault:
      return "domain default (drop)";
    case Fate::kQueueFull:
      return "queue full";
    case Fate::kTableLoop:
      return "table loop";
  }
  return "?";
}

Nic::Nic() : burst_hv_(new hw::HeaderVector[kBurst]) {}
Nic::~Nic() = default;

uint32_t Nic::CreateQueue(size_t capacity) {
  std::lock_guard<std::mutex> lock(control_mu_);
  uint32_t qp_num = next_qp_num_++;
  queues_[qp_num].queue = std::make_unique<RxQueue>(qp_num, capacity);
  return qp_num;
}

absl::Status Nic::DestroyQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto it = queues_.find(qp_num);
  if (it == queues_.end()) {
    return absl::NotFoundError(absl::StrFormat("no receive queue with QP number %d", qp_num));
  }
  if (it->second.retains > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "queue %d is the destination of %d dest_ibv_qp action(s)", qp_num, it->second.retains));
  }
  queues_.erase(it);
  return absl::OkStatus();
}

RxQueue* Nic::queue(uint32_t qp_num) {
  auto it = queues_.find(qp_num);
  return it == queues_.end() ? nullptr : it->second.queue.get();
}

absl::Status Nic::RetainQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto it = queues_.find(qp_num);
  if (it == queues_.end()) {
    return absl::NotFoundError(absl::StrFormat("no receive queue with QP number %d", qp_num));
  }
  ++it->second.retains;
  return absl::OkStatus();
}

void Nic::ReleaseQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto it = queues_.find(qp_num);
  if (it != queues_.end()) --it->second.retains;
}

void Nic::AttachRootTable(const hw::FlowTable* table) {
  std::lock_guard<std::mutex> lock(control_mu_);
  root_tables_[table->domain].push_back({table, table->chain});
  RebuildRoot(table->domain);
}

void Nic::DetachRootTable(const hw::FlowTable* table) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto& roots = root_tables_[table->domain];
  roots.erase(
      std::remove_if(roots.begin(), roots.end(), [&](const RootTable& r) { return r.table == table; }),
      roots.end());
  RebuildRoot(table->domain);
}

void Nic::TableChanged(const hw::FlowTable* table) {
  // Non-root tables are read in place; a root table's chain is copied (its domain holds its lock while
  // it calls) and the merged root rebuilt.
  if (table->level != 0) return;
  std::lock_guard<std::mutex> lock(control_mu_);
  for (RootTable& r : root_tables_[table->domain]) {
    if (r.table == table) r.chain = table->chain;
  }
  RebuildRoot(table->domain);
}

void Nic::RebuildRoot(mlx5dv_dr_domain_type type) {
  std::vector<RootEntry>& chain = root_chain_[type];
  chain.clear();
  for (const RootTable& r : root_tables_[type]) {
    for (const hw::CompiledMatcher* m : r.chain) chain.push_back({m, r.table});
  }
  std::stable_sort(chain.begin(), chain.end(), [](const RootEntry& a, const RootEntry& b) {
    return hw::LookupBefore(*a.matcher, *b.matcher);
  });
}

void Nic::ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace) {
  Verdict scratch;
  for (size_t base = 0; base < frames.size(); base += kBurst) {
    const size_t n = std::min(kBurst, frames.size() - base);
    for (size_t i = 0; i < n; ++i) {
      const Frame& f = frames[base + i];
      ParsePacket(f.data(), f.size(), kWirePort, &burst_hv_[i]);
    }
    for (size_t i = 0; i < n; ++i) {
      Verdict* v = verdicts.empty() ? &scratch : &verdicts[base + i];
      *v = Verdict();
      Walk(burst_hv_[i], frames[base + i], v, trace);
    }
  }
}

Verdict Nic::ReceiveFromWire(Frame frame) {
  Verdict v;
  ReceiveFromWire(absl::MakeConstSpan(&frame, 1), absl::MakeSpan(&v, 1), /*trace=*/true);
  return v;
}

void Nic::Finish(Fate fate, Verdict* verdict) {
  verdict->fate = fate;
  switch (fate) {
    case Fate::kQueued:
      ++stats_.queued;
      break;
    case Fate::kDropped:
      ++stats_.dropped;
      break;
    case Fate::kDomainDefault:
      ++stats_.domain_default;
      break;
    case Fate::kQueueFull:
      ++stats_.queue_full;
      break;
    case Fate::kTableLoop:
      ++stats_.table_loops;
      break;
  }
}

void Nic::Walk(const hw::HeaderVector& hv, Frame frame, Verdict* verdict, bool trace) {
  ++stats_.frames;
  uint32_t key[kMaxKeyWords];
  const std::vector<RootEntry>& root = root_chain_[MLX5DV_DR_DOMAIN_TYPE_NIC_RX];
  const hw::FlowTable* table = nullptr;  // nullptr: the merged root
  for (int jumps = 0;; ++jumps) {
    if (jumps > kMaxTableJumps) return Finish(Fate::kTableLoop, verdict);
    const hw::RuleRecord* hit = nullptr;
    const hw::CompiledMatcher* hit_matcher = nullptr;
    const hw::FlowTable* hit_table = table;
    auto try_matcher = [&](const hw::CompiledMatcher* m) {
      m->definer.Extract(hv.bytes, key);
      hit = m->table.Find(key);
      hit_matcher = m;
      return hit != nullptr;
    };
    if (table == nullptr) {
      for (const RootEntry& e : root) {
        if (try_matcher(e.matcher)) {
          hit_table = e.table;
          break;
        }
      }
    } else {
      for (const hw::CompiledMatcher* m : table->chain) {
        if (try_matcher(m)) break;
      }
    }
    if (trace) {
      Hop hop;
      if (hit_table != nullptr) {
        hop.table_id = hit_table->id;
        hop.table_level = hit_table->level;
      }
      if (hit != nullptr) {
        hop.matcher_id = hit_matcher->id;
        hop.rule_id = hit->rule_id;
      }
      verdict->path.push_back(hop);
    }
    if (hit == nullptr) return Finish(Fate::kDomainDefault, verdict);

    const hw::ActionProgram& program = hit->actions;
    if (program.set_tag) {
      verdict->has_flow_tag = true;
      verdict->flow_tag = program.tag;
    }
    switch (program.destination) {
      case hw::Destination::kNone:
      case hw::Destination::kDefaultMiss:
        return Finish(Fate::kDomainDefault, verdict);
      case hw::Destination::kDrop:
        return Finish(Fate::kDropped, verdict);
      case hw::Destination::kQueue: {
        verdict->qp_num = program.queue;
        RxQueue* q = queue(program.queue);
        const bool ok =
            q != nullptr && q->Push(frame.data(), frame.size(), verdict->has_flow_tag, verdict->flow_tag);
        return Finish(ok ? Fate::kQueued : Fate::kQueueFull, verdict);
      }
      case hw::Destination::kTable:
        table = program.table;
        break;
    }
  }
}

}  // namespace drsim::sim
