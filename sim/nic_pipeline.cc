// sim::Nic's per-frame pipeline: a frame's walk through a domain (WalkDomain), where its exit sends it
// (Dispatch, Forward: a queue, a TIR, a vport, the wire, the next stage), delivery, and the copies dest
// arrays and samplers make (Replicate, RunReplica). The walk takes what the burst fast path already looked
// up for the frame (InFlight::BurstLookups, nic_burst.cc) instead of looking it up again.
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

#include "absl/base/attributes.h"
#include "hw/action_program.h"
#include "hw/flow_table.h"
#include "hw/table_index.h"
#include "sim/action_executor.h"
#include "sim/meter.h"
#include "sim/nic.h"
#include "sim/nic_internal.h"
#include "sim/rss.h"
#include "sim/toeplitz.h"

namespace drsim::sim {
namespace {

constexpr size_t kMaxWireBacklog = 65536;

}  // namespace

void Nic::ToWire(InFlight& p) {
  {
    std::lock_guard<std::mutex> lock(wire_mu_);
    if (wire_out_.size() >= kMaxWireBacklog) {
      wire_out_.pop_front();
      ++wire_out_discarded_;
    }
    if (wire_spare_.empty()) {
      wire_out_.emplace_back(p.buffer.data(), p.buffer.data() + p.buffer.size());
    } else {
      wire_out_.push_back(std::move(wire_spare_.back()));
      wire_spare_.pop_back();
      wire_out_.back().assign(p.buffer.data(), p.buffer.data() + p.buffer.size());
    }
  }
  Finish(Fate::kWire, p);
}

void Nic::Deliver(InFlight& p, Function& fn, uint32_t qp_num) {
  Finish(Enqueue(fn, qp_num, {p.buffer.data(), p.buffer.size()}, p.meta), p, fn.vport(), qp_num);
}

void Nic::ToPort(InFlight& p, Function& fn) {
  {
    std::lock_guard<std::mutex> lock(fn.port_mu_);
    if (fn.port_in_.size() >= Function::kMaxPortBacklog) {
      fn.port_in_.pop_front();
      ++fn.port_in_discarded_;
    }
    fn.port_in_.emplace_back(p.buffer.data(), p.buffer.data() + p.buffer.size());
  }
  Finish(Fate::kPort, p, fn.vport());
}

uint32_t Nic::PickTirQueue(const Function& fn, uint32_t tir, const InFlight& p) const {
  const Function::Tir& t = fn.tirs_.Read().at(tir);
  // IBV_RX_HASH_INNER: the tunnelled packet's inner headers (all zero, so no hash, on a plain packet).
  const RssHeaderFields f = RssFieldsOf(p.hv, (t.hash_fields & IBV_RX_HASH_INNER) != 0);
  uint32_t hash = 0;
  if (t.hash_fields != 0 && (f.ip_version == 4 || f.ip_version == 6)) {
    hash = RssHash(f, t.hash_fields, t.key, t.symmetry).value_or(0);  // a frame lacking a field hashes to 0
  }
  return t.queues[hash & (t.queues.size() - 1)];
}

void Nic::Forward(InFlight& p, Stage stage, Function& fn, DomainExit e, bool trace) {
  switch (stage) {
    case Stage::kFdbRx:
      // From the wire: to a vport's NIC_RX, by default the eSwitch manager's.
      if (e.exit == Exit::kVport) return Run(p, Stage::kNicRx, *function(e.arg), {}, trace);
      if (e.exit == Exit::kDefault) return Run(p, Stage::kNicRx, pf(), {}, trace);
      return Finish(Fate::kDropped, p);  // not reachable: FDB rules take no queue
    case Stage::kFdbTx:
      if (e.exit == Exit::kVport) {
        if (e.arg == kWirePort) return ToWire(p);
        return Run(p, Stage::kNicRx, *function(e.arg), {}, trace);
      }
      if (e.exit == Exit::kDefault) {
        // The eSwitch manager; its own frames leave by the wire rather than loop back to it.
        if (p.meta.source_port == 0) return ToWire(p);
        return Run(p, Stage::kNicRx, pf(), {}, trace);
      }
      return Finish(Fate::kDropped, p);
    case Stage::kNicRx:
      if (e.exit == Exit::kQueue) return Deliver(p, fn, e.arg);
      if (e.exit == Exit::kTir) {
        p.EnsureParsed();  // RSS hashes its header fields
        return Deliver(p, fn, PickTirQueue(fn, e.arg, p));
      }
      // No NIC_RX steering at all: the function's own interface takes the frame.
      if (e.exit == Exit::kDefault && !fn.root_[MLX5DV_DR_DOMAIN_TYPE_NIC_RX].Read().steered) {
        return ToPort(p, fn);
      }
      return Finish(Fate::kDomainDefault, p);
    case Stage::kNicTx:
      if (e.exit == Exit::kDefault) {
        // NIC_TX allows: on to the eSwitch (with no FDB steering at all, straight to the wire).
        if (pf().root_[MLX5DV_DR_DOMAIN_TYPE_FDB].Read().entries.empty()) return ToWire(p);
        return Run(p, Stage::kFdbTx, pf(), {}, trace);
      }
      return Finish(Fate::kDropped, p);
  }
}

void Nic::RunReplica(InFlight& p, Stage stage, Function& fn, const hw::Replica& r, bool primary, bool trace) {
  const ActionExecutor::Change change =
      p.worker->executor_->Run(r.ops, p.buffer, p.meta, time_ns(), p.Known());
  p.Changed(change);
  if (change == ActionExecutor::Change::kNoTunnel) return Finish(Fate::kNoTunnel, p);
  switch (r.destination) {
    case hw::Destination::kQueue:
      // A queue leg on NIC_TX comes only from a kernel sniffer entry: a copy of a sent frame.
      if (stage == Stage::kNicTx) return Deliver(p, fn, r.queue);
      return Dispatch(p, stage, fn, {Exit::kQueue, r.queue}, false);
    case hw::Destination::kTir:
      return Dispatch(p, stage, fn, {Exit::kTir, r.tir}, false);
    case hw::Destination::kVport:
      return Dispatch(p, stage, fn, {Exit::kVport, r.vport}, false);
    case hw::Destination::kTable:
      return Run(p, stage, fn, {r.table}, false);
    case hw::Destination::kRootTable:
      return Run(p, stage, fn, {nullptr, r.root_rank}, trace);
    case hw::Destination::kDefaultMiss:
      return Dispatch(p, stage, fn, {}, false);
    default:
      if (primary) Finish(Fate::kDropped, p);  // a counter-only entry delivers nothing
      return;
  }
}

Nic::DomainExit Nic::Replicate(InFlight& p, Stage stage, Function& fn, const hw::ActionProgram& program,
                               bool trace) {
  const std::vector<hw::Replica>& replicas = *program.replicas;
  // The frame itself takes the first entry with a destination; every other entry gets a copy.
  size_t primary = replicas.size();
  for (size_t i = 0; i < replicas.size() && primary == replicas.size(); ++i) {
    if (replicas[i].destination != hw::Destination::kNone) primary = i;
  }
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (i == primary) continue;
    InFlight copy = p;
    copy.copy = true;
    RunReplica(copy, stage, fn, replicas[i], /*primary=*/false, /*trace=*/false);
  }
  if (primary == replicas.size()) {
    Finish(Fate::kDropped, p);
  } else {
    RunReplica(p, stage, fn, replicas[primary], /*primary=*/!p.copy, trace);
  }
  return {Exit::kDone};
}

MeterColor Nic::MarkMeter(uint32_t meter, uint32_t l2_bytes, uint32_t ip_bytes) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto m = objects_->meters.find(meter);
  return m == objects_->meters.end() ? MeterColor::kGreen : m->second.Mark(time_ns(), l2_bytes, ip_bytes);
}

bool Nic::SampleNext(uint32_t sampler) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto it = objects_->samplers.find(sampler);
  return it != objects_->samplers.end() && ++it->second.seen % it->second.ratio == 0;
}

Nic::DomainExit Nic::WalkDomain(InFlight& p, Stage stage, Function& fn, Entry entry, bool trace) {
  mlx5dv_dr_domain_type type;
  hw::Pipe pipe;
  switch (stage) {
    case Stage::kFdbRx:
      type = MLX5DV_DR_DOMAIN_TYPE_FDB;
      pipe = hw::kRxPipe;
      break;
    case Stage::kFdbTx:
      type = MLX5DV_DR_DOMAIN_TYPE_FDB;
      pipe = hw::kTxPipe;
      break;
    case Stage::kNicRx:
      type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
      pipe = hw::kRxPipe;
      break;
    default:
      type = MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
      pipe = hw::kTxPipe;
      break;
  }
  const std::vector<Function::RootEntry>& root = fn.root_[type].Read().entries;
  if (root.empty() && entry.table == nullptr) return {};
  uint32_t key[Burst::kMaxKeyWords];
  const hw::FlowTable* table = entry.table;  // nullptr: the merged root
  uint32_t root_rank = entry.root_rank;
  // Where the walk of the first table starts: WalkTogether may have walked it for the frame already.
  const InFlight::BurstLookups::TableWalk walked = p.by_burst.TakeWalkOf(table);
  for (int jumps = entry.jumps;; ++jumps) {
    if (jumps > kMaxTableJumps) return {Exit::kLoop};
    const hw::RuleRecord* hit = nullptr;
    const hw::CompiledMatcher* hit_matcher = nullptr;
    const hw::FlowTable* hit_table = table;
    auto try_matcher = [&](const hw::CompiledMatcher* m) ABSL_ATTRIBUTE_ALWAYS_INLINE {
      // The burst's first lookup (Process, FollowJumps, WalkTogether), made on these same headers, or a
      // lookup now.
      hit = m == p.by_burst.matcher ? p.by_burst.hit : p.LookUp(*m, key);
      p.by_burst.matcher = nullptr;
      hit_matcher = m;
      return hit != nullptr;
    };
    // Whether WalkTogether walked this table for the frame already (before it had an index, if it has one).
    const bool resume = jumps == entry.jumps && walked.table != nullptr;
    if (table == nullptr) {
      for (const Function::RootEntry& e : root) {
        if (e.rank < root_rank) continue;
        if (try_matcher(e.matcher)) {
          hit_table = e.table;
          break;
        }
      }
    } else {
      // The chain, up to its end or, in a table with an index, for its first matchers only (none when
      // WalkTogether walked those); then the index from the next one on, or the chain again when the index
      // has too many candidates.
      const hw::TableIndex* index = table->index.load(std::memory_order_acquire);
      const hw::CompiledMatcher* m = table->first_matcher();
      int chain_left = index == nullptr ? std::numeric_limits<int>::max() : index->chain_first();
      if (resume) {
        m = walked.hit_matcher != nullptr ? walked.hit_matcher : walked.stopped_before;
        if (index != nullptr)
          chain_left = walked.hit_matcher == nullptr ? 0 : std::numeric_limits<int>::max();
      }
      for (; m != nullptr; m = m->next_matcher()) {
        if (chain_left-- == 0 && p.LookUpIndexed(*index, hw::LookupRank(*m), key, &hit, &hit_matcher)) break;
        m->PrefetchAhead();
        if (try_matcher(m)) break;
      }
    }
    if (trace && !p.copy) {
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

    const hw::ActionProgram& program = hit->program(pipe);
    if (!program.ops.empty()) {
      const ActionExecutor::Change change =
          p.worker->executor_->Run(program.ops, p.buffer, p.meta, time_ns(), p.Known(), hit->tag());
      p.Changed(change);
      if (change == ActionExecutor::Change::kNoTunnel) return {Exit::kNoTunnel};
    }
    if (DomainExit e; TerminalExit(program, &e)) return e;
    switch (program.destination) {
      case hw::Destination::kReplicate:
        return Replicate(p, stage, fn, program, trace);
      case hw::Destination::kTable:
        table = program.table;
        break;
      case hw::Destination::kRootTable:
        table = nullptr;
        root_rank = hw::RootRank(hw::RootNamespace::kBypass, program.root_priority);
        break;
      case hw::Destination::kMeter: {
        p.EnsureParsed();  // the IP length
        const size_t ip_bytes = p.layers.l3 ? p.buffer.size() - p.layers.l3 : p.buffer.size();
        const MeterColor c =
            MarkMeter(program.meter, static_cast<uint32_t>(p.buffer.size()), static_cast<uint32_t>(ip_bytes));
        uint32_t& reg = p.meta.reg_c[program.meter_reg];
        reg = (reg & ~0xffu) | static_cast<uint32_t>(c);
        p.Unparse();  // the next lookup sees the colour
        table = program.table;
        break;
      }
      case hw::Destination::kSampler: {
        if (SampleNext(program.sampler)) {
          InFlight copy = p;
          copy.copy = true;
          RunReplica(copy, stage, fn, *program.sample, /*primary=*/false, /*trace=*/false);
        }
        table = program.table;
        root_rank = 0;
        break;
      }
      default:
        return {};  // not reachable: TerminalExit took the other destinations
    }
  }
}

}  // namespace drsim::sim
