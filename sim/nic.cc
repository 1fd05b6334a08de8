#include "sim/nic.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "sim/packet_parser.h"

namespace drsim::sim {
namespace {

// The largest key a definer can produce: every word of the layout.
constexpr size_t kMaxKeyWords = hw::kMatchParamBytes / 4;
constexpr size_t kMaxWireBacklog = 65536;

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
    case Fate::kWire:
      return "wire";
  }
  return "?";
}

// A frame being processed, with what travels with it.
struct Nic::InFlight {
  PacketBuffer buffer;
  PacketMeta meta;
  hw::HeaderVector hv;
  bool parsed = false;
  Verdict* verdict = nullptr;
};

// ---- Function ------------------------------------------------------------------------------------

uint32_t Function::CreateQueue(size_t capacity) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  uint32_t qp_num = nic_->next_qp_num_++;
  queues_[qp_num].queue = std::make_unique<RxQueue>(qp_num, capacity);
  return qp_num;
}

absl::Status Function::DestroyQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = queues_.find(qp_num);
  if (it == queues_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("no receive queue with QP number %d on vport %d", qp_num, vport_));
  }
  if (it->second.retains > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "queue %d is the destination of %d dest_ibv_qp action(s)", qp_num, it->second.retains));
  }
  queues_.erase(it);
  return absl::OkStatus();
}

RxQueue* Function::queue(uint32_t qp_num) {
  auto it = queues_.find(qp_num);
  return it == queues_.end() ? nullptr : it->second.queue.get();
}

absl::Status Function::RetainQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = queues_.find(qp_num);
  if (it == queues_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("no receive queue with QP number %d on vport %d", qp_num, vport_));
  }
  ++it->second.retains;
  return absl::OkStatus();
}

void Function::ReleaseQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = queues_.find(qp_num);
  if (it != queues_.end()) --it->second.retains;
}

absl::Status Function::RetainCounter(uint32_t counter_id) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  return nic_->counters_.Retain(counter_id);
}

void Function::ReleaseCounter(uint32_t counter_id) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->counters_.Release(counter_id);
}

uint64_t Function::NextMatcherSequence() { return ++nic_->matcher_sequence_; }

bool Function::HasVport(uint32_t vport) const {
  return vport == hw::kWireVport || vport <= static_cast<uint32_t>(nic_->num_vfs());
}

void Function::AttachRootTable(const hw::FlowTable* table) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  root_tables_[table->domain].push_back({table, table->chain});
  RebuildRoot(table->domain);
}

void Function::DetachRootTable(const hw::FlowTable* table) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto& roots = root_tables_[table->domain];
  roots.erase(
      std::remove_if(roots.begin(), roots.end(), [&](const RootTable& r) { return r.table == table; }),
      roots.end());
  RebuildRoot(table->domain);
}

void Function::TableChanged(const hw::FlowTable* table) {
  // Non-root tables are read in place; a root table's chain is copied (its domain holds its lock while
  // it calls) and the merged root rebuilt.
  if (table->level != 0) return;
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  for (RootTable& r : root_tables_[table->domain]) {
    if (r.table == table) r.chain = table->chain;
  }
  RebuildRoot(table->domain);
}

void Function::RebuildRoot(mlx5dv_dr_domain_type type) {
  std::vector<RootEntry>& chain = root_chain_[type];
  chain.clear();
  for (const RootTable& r : root_tables_[type]) {
    for (const hw::CompiledMatcher* m : r.chain) chain.push_back({m, r.table});
  }
  std::stable_sort(chain.begin(), chain.end(), [](const RootEntry& a, const RootEntry& b) {
    return hw::LookupBefore(*a.matcher, *b.matcher);
  });
}

absl::Status Function::Send(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace,
                            uint32_t sqn) {
  return nic_->Process(frames, verdicts, trace, vport_, sqn,
                       [this](Nic::InFlight& p, bool t) { nic_->FromFunction(*this, p, t); });
}

Verdict Function::Send(Frame frame) {
  Verdict v;
  Send(absl::MakeConstSpan(&frame, 1), absl::MakeSpan(&v, 1), /*trace=*/true).IgnoreError();  // sizes match
  return v;
}

// ---- Nic -----------------------------------------------------------------------------------------

Nic::Nic(int num_vfs) {
  const int vfs = std::clamp(num_vfs, 0, 4094);
  for (int v = 0; v <= vfs; ++v)
    functions_.push_back(std::make_unique<Function>(this, static_cast<uint16_t>(v)));
}

Nic::~Nic() = default;

Function* Nic::function(uint32_t vport) {
  return vport < functions_.size() ? functions_[vport].get() : nullptr;
}

absl::StatusOr<uint32_t> Nic::AllocateCounters(uint32_t bulk) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return counters_.Allocate(bulk);
}

absl::Status Nic::QueryCounter(uint32_t counter_id, uint64_t* packets, uint64_t* bytes) const {
  return counters_.Query(counter_id, packets, bytes);
}

absl::Status Nic::FreeCounters(uint32_t base) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return counters_.Free(base);
}

std::optional<std::vector<uint8_t>> Nic::PollWire() {
  if (wire_out_.empty()) return std::nullopt;
  std::vector<uint8_t> f = std::move(wire_out_.front());
  wire_out_.pop_front();
  return f;
}

template <typename Entry>
absl::Status Nic::Process(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace,
                          uint16_t source, uint32_t sqn, Entry entry) {
  if (!verdicts.empty() && verdicts.size() != frames.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d verdicts for %d frames: pass one per frame, or none", verdicts.size(), frames.size()));
  }
  InFlight p;
  Verdict scratch;
  for (size_t i = 0; i < frames.size(); ++i) {
    ++stats_.frames;
    p.buffer.Assign(frames[i].data(), frames[i].size());
    p.meta = PacketMeta();
    p.meta.source_port = source;
    p.meta.source_sqn = sqn;
    p.parsed = false;
    p.verdict = verdicts.empty() ? &scratch : &verdicts[i];
    *p.verdict = Verdict();
    entry(p, trace);
  }
  return absl::OkStatus();
}

absl::Status Nic::ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace) {
  return Process(frames, verdicts, trace, kWirePort, 0, [this](InFlight& p, bool t) { FromWire(p, t); });
}

Verdict Nic::ReceiveFromWire(Frame frame) {
  Verdict v;
  ReceiveFromWire(absl::MakeConstSpan(&frame, 1), absl::MakeSpan(&v, 1), /*trace=*/true).IgnoreError();
  return v;
}

void Nic::Finish(Fate fate, InFlight& p) {
  Verdict& v = *p.verdict;
  v.fate = fate;
  v.has_flow_tag = p.meta.has_flow_tag;
  v.flow_tag = p.meta.flow_tag;
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
    case Fate::kWire:
      ++stats_.to_wire;
      break;
  }
}

void Nic::ToWire(InFlight& p) {
  if (wire_out_.size() >= kMaxWireBacklog) {
    wire_out_.pop_front();
    ++wire_out_discarded_;
  }
  wire_out_.emplace_back(p.buffer.data(), p.buffer.data() + p.buffer.size());
  Finish(Fate::kWire, p);
}

void Nic::FromWire(InFlight& p, bool trace) {
  Function& manager = pf();
  if (manager.root_chain_[MLX5DV_DR_DOMAIN_TYPE_FDB].empty()) return ToFunctionRx(0, p, trace);
  DomainExit e = WalkDomain(manager, MLX5DV_DR_DOMAIN_TYPE_FDB, hw::kRxPipe, p, trace);
  switch (e.exit) {
    case Exit::kVport:
      return ToFunctionRx(static_cast<uint16_t>(e.arg), p, trace);
    case Exit::kDefault:
      return ToFunctionRx(0, p, trace);  // the eSwitch manager
    case Exit::kDrop:
      return Finish(Fate::kDropped, p);
    case Exit::kLoop:
      return Finish(Fate::kTableLoop, p);
    case Exit::kQueue:
      return Finish(Fate::kDropped, p);  // not reachable: FDB rules take no QP
  }
}

void Nic::FromFunction(Function& fn, InFlight& p, bool trace) {
  DomainExit e = WalkDomain(fn, MLX5DV_DR_DOMAIN_TYPE_NIC_TX, hw::kTxPipe, p, trace);
  switch (e.exit) {
    case Exit::kDrop:
      return Finish(Fate::kDropped, p);
    case Exit::kLoop:
      return Finish(Fate::kTableLoop, p);
    case Exit::kDefault:
      break;  // NIC_TX allows: on to the eSwitch
    case Exit::kQueue:
    case Exit::kVport:
      return Finish(Fate::kDropped, p);  // not reachable on NIC_TX
  }
  Function& manager = pf();
  if (manager.root_chain_[MLX5DV_DR_DOMAIN_TYPE_FDB].empty()) return ToWire(p);
  e = WalkDomain(manager, MLX5DV_DR_DOMAIN_TYPE_FDB, hw::kTxPipe, p, trace);
  switch (e.exit) {
    case Exit::kVport:
      if (e.arg == kWirePort) return ToWire(p);
      return ToFunctionRx(static_cast<uint16_t>(e.arg), p, trace);
    case Exit::kDefault:
      // The eSwitch manager; its own frames leave by the wire rather than loop back to it.
      if (fn.vport() == 0) return ToWire(p);
      return ToFunctionRx(0, p, trace);
    case Exit::kDrop:
      return Finish(Fate::kDropped, p);
    case Exit::kLoop:
      return Finish(Fate::kTableLoop, p);
    case Exit::kQueue:
      return Finish(Fate::kDropped, p);  // not reachable: FDB rules take no QP
  }
}

void Nic::ToFunctionRx(uint16_t vport, InFlight& p, bool trace) {
  Function* fn = function(vport);
  if (fn == nullptr) return Finish(Fate::kDropped, p);  // dest_vport checked the vport exists
  DomainExit e = WalkDomain(*fn, MLX5DV_DR_DOMAIN_TYPE_NIC_RX, hw::kRxPipe, p, trace);
  switch (e.exit) {
    case Exit::kQueue: {
      Verdict& v = *p.verdict;
      v.vport = vport;
      v.qp_num = e.arg;
      RxQueue* q = fn->queue(e.arg);
      const bool ok = q != nullptr && q->Push(p.buffer.data(), p.buffer.size(), p.meta.has_flow_tag,
                                              p.meta.flow_tag, p.meta.reg_b);
      return Finish(ok ? Fate::kQueued : Fate::kQueueFull, p);
    }
    case Exit::kDrop:
      return Finish(Fate::kDropped, p);
    case Exit::kLoop:
      return Finish(Fate::kTableLoop, p);
    case Exit::kDefault:
    case Exit::kVport:
      return Finish(Fate::kDomainDefault, p);
  }
}

Nic::DomainExit Nic::WalkDomain(Function& fn, mlx5dv_dr_domain_type type, hw::Pipe pipe, InFlight& p,
                                bool trace) {
  const std::vector<Function::RootEntry>& root = fn.root_chain_[type];
  if (root.empty()) return {};
  uint32_t key[kMaxKeyWords];
  const hw::FlowTable* table = nullptr;  // nullptr: the merged root
  for (int jumps = 0;; ++jumps) {
    if (jumps > kMaxTableJumps) return {Exit::kLoop};
    if (!p.parsed) {
      ParsePacket(p.buffer.data(), p.buffer.size(), p.meta.source_port, &p.hv);
      LoadMetadata(p.meta, &p.hv);
      p.parsed = true;
    }
    const hw::RuleRecord* hit = nullptr;
    const hw::CompiledMatcher* hit_matcher = nullptr;
    const hw::FlowTable* hit_table = table;
    auto try_matcher = [&](const hw::CompiledMatcher* m) {
      m->definer.Extract(p.hv.bytes, key);
      hit = m->table.Find(key);
      hit_matcher = m;
      return hit != nullptr;
    };
    if (table == nullptr) {
      for (const Function::RootEntry& e : root) {
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
      hop.domain = type;
      hop.vport = fn.vport();
      hop.pipe = pipe;
      if (hit_table != nullptr) {
        hop.table_id = hit_table->id;
        hop.table_level = hit_table->level;
      }
      if (hit != nullptr) {
        hop.matcher_id = hit_matcher->id;
        hop.rule_id = hit->rule_id;
      }
      p.verdict->path.push_back(hop);
    }
    if (hit == nullptr) return {};

    const hw::ActionProgram& program = hit->program[pipe];
    if (executor_.Run(program.ops, p.buffer, p.meta)) p.parsed = false;
    switch (program.destination) {
      case hw::Destination::kNone:
      case hw::Destination::kDefaultMiss:
        return {};
      case hw::Destination::kDrop:
        return {Exit::kDrop};
      case hw::Destination::kQueue:
        return {Exit::kQueue, program.queue};
      case hw::Destination::kVport:
        return {Exit::kVport, program.vport};
      case hw::Destination::kTable:
        table = program.table;
        break;
    }
  }
}

}  // namespace drsim::sim
