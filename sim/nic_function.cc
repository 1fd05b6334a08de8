// sim::Function: what a PCI function of the NIC offers the driver as hw::Device (receive queues, TIRs,
// meters, samplers, ASO objects, root tables), and its own interface (PollPort).
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "hw/device.h"
#include "hw/flow_table.h"
#include "hw/reclaimer.h"
#include "sim/aso.h"
#include "sim/counters.h"
#include "sim/meter.h"
#include "sim/nic.h"
#include "sim/nic_internal.h"
#include "sim/parser_coverage.h"
#include "sim/rx_queue.h"
#include "sim/toeplitz.h"

namespace drsim::sim {

Function::~Function() = default;

void Function::DeleteQueue::operator()(RxQueue* queue) const { delete queue; }

uint32_t Function::CreateQueue(size_t capacity) { return CreateQueue(capacity, nullptr); }

uint32_t Function::CreateQueue(size_t capacity, std::unique_ptr<RxSink> sink) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  uint32_t qp_num = nic_->next_qp_num_++;
  queues_[qp_num].queue.reset(new RxQueue(qp_num, capacity, std::move(sink)));
  PublishQueues();
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
  RxQueue* queue = it->second.queue.release();
  queues_.erase(it);
  PublishQueues();
  hw::Retire(&nic_->reclaimer_, [queue] { delete queue; });  // a worker may be delivering to it
  return absl::OkStatus();
}

void Function::PublishQueues() {
  QueueIndex index;
  for (const auto& [qp_num, slot] : queues_) index[qp_num] = slot.queue.get();
  queue_index_.Publish(std::move(index), &nic_->reclaimer_);
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
  return nic_->objects_->counters.Retain(counter_id);
}

void Function::ReleaseCounter(uint32_t counter_id) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->objects_->counters.Release(counter_id);
}

absl::StatusOr<hw::CounterActivity> Function::QueryCounterActivity(uint32_t counter_id) {
  return nic_->QueryCounterActivity(counter_id);
}

absl::StatusOr<hw::CounterActivity> Function::QueryFirstHitActivity(uint32_t aso_context) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  return nic_->objects_->aso.FirstHitActivity(aso_context, nic_->time_ns());
}

uint64_t Function::NextMatcherSequence() { return ++nic_->matcher_sequence_; }

absl::StatusOr<uint32_t> Function::CreateTir(std::vector<uint32_t> queues, uint64_t hash_fields,
                                             absl::Span<const uint8_t> key, RssSymmetry symmetry) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  if (queues.empty() || (queues.size() & (queues.size() - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TIR: %d queues; an RQ indirection table holds a power of two (1, 2, 4, ...)", queues.size()));
  }
  for (uint32_t q : queues) {
    if (!queues_.contains(q)) {
      return absl::InvalidArgumentError(absl::StrFormat("TIR: no receive queue %d on vport %d", q, vport_));
    }
  }
  // Check the selection and key once, on an all-zero packet of every kind the fields could apply to.
  RssHeaderFields probe;
  probe.ip_version = (hash_fields & (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6)) ? 6 : 4;
  probe.ip_protocol = (hash_fields & (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)) ? 17 : 6;
  if (hash_fields != 0) {
    if (absl::StatusOr<uint32_t> h = RssHash(probe, hash_fields, key, symmetry); !h.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("TIR: %s", h.status().message()));
    }
  }
  for (uint32_t q : queues) ++queues_[q].retains;  // the TIR keeps its queues
  const uint32_t tir = nic_->next_object_++;
  TirIndex tirs = tirs_.Read();
  tirs[tir] = {std::move(queues), hash_fields, std::vector<uint8_t>(key.begin(), key.end()), symmetry};
  tirs_.Publish(std::move(tirs), &nic_->reclaimer_);
  tir_retains_[tir] = 0;
  return tir;
}

absl::Status Function::DestroyTir(uint32_t tir) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = tir_retains_.find(tir);
  if (it == tir_retains_.end()) {
    return absl::NotFoundError(absl::StrFormat("no TIR %d on vport %d", tir, vport_));
  }
  if (it->second > 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("TIR %d is the destination of %d dest_devx_tir action(s)", tir, it->second));
  }
  tir_retains_.erase(it);
  TirIndex tirs = tirs_.Read();
  for (uint32_t q : tirs.at(tir).queues) --queues_[q].retains;
  tirs.erase(tir);
  tirs_.Publish(std::move(tirs), &nic_->reclaimer_);
  return absl::OkStatus();
}

absl::Status Function::RetainTir(uint32_t tir) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = tir_retains_.find(tir);
  if (it == tir_retains_.end()) {
    return absl::NotFoundError(absl::StrFormat("no TIR %d on vport %d", tir, vport_));
  }
  ++it->second;
  return absl::OkStatus();
}

void Function::ReleaseTir(uint32_t tir) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = tir_retains_.find(tir);
  if (it != tir_retains_.end()) --it->second;
}

absl::StatusOr<uint32_t> Function::CreateMeter(absl::Span<const uint8_t> params, bool active) {
  DRSIM_ASSIGN_OR_RETURN(const MeterParams p, MeterParams::Parse(params));
  if (!p.valid) return absl::InvalidArgumentError("flow meter parameters: the valid bit is 0");
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  const uint32_t meter = nic_->next_object_++;
  nic_->objects_->meters.emplace(meter, TokenMeter(p, active));
  return meter;
}

absl::Status Function::ModifyMeter(uint32_t meter, absl::Span<const uint8_t> params, bool active,
                                   uint64_t select) {
  DRSIM_ASSIGN_OR_RETURN(const MeterParams p, MeterParams::Parse(params));
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = nic_->objects_->meters.find(meter);
  if (it == nic_->objects_->meters.end()) {
    return absl::NotFoundError(absl::StrFormat("no flow meter %d", meter));
  }
  it->second.Modify(p, active, select);
  return absl::OkStatus();
}

void Function::DestroyMeter(uint32_t meter) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->objects_->meters.erase(meter);
}

uint32_t Function::CreateSampler(uint32_t ratio) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  const uint32_t sampler = nic_->next_object_++;
  nic_->objects_->samplers[sampler] = {ratio};
  return sampler;
}

void Function::DestroySampler(uint32_t sampler) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->objects_->samplers.erase(sampler);
}

absl::StatusOr<hw::AsoContext> Function::RetainAso(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  return nic_->objects_->aso.Retain(object, offset);
}

void Function::ReleaseAso(uint32_t object) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->objects_->aso.Release(object);
}

void Function::RetainGeneveOptionMatch() {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->objects_->geneve_options.RetainMatcher();
}

void Function::ReleaseGeneveOptionMatch() {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->objects_->geneve_options.ReleaseMatcher();
}

hw::Reclaimer* Function::reclaimer() { return &nic_->reclaimer_; }

const hw::ParsedFields& Function::parsed_fields() const { return SoftwareParserFields(); }

hw::EswitchEncap Function::eswitch_encap() const { return nic_->eswitch_encap(); }

hw::DeviceInfo Function::Describe() const {
  hw::DeviceInfo info;
  info.name = vport_ == 0 ? "drsim_pf" : absl::StrFormat("drsim_vf%d", vport_);
  info.vhca_id = vport_;
  return info;
}

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
  Root root;
  for (const RootTable& r : root_tables_[type]) {
    for (const hw::CompiledMatcher* m : r.chain) {
      root.entries.push_back({m, r.table, hw::RootRank(r.table->root_ns, m->priority)});
      root.steered |= r.table->root_ns != hw::RootNamespace::kSniffer;
    }
  }
  std::stable_sort(root.entries.begin(), root.entries.end(), [](const RootEntry& a, const RootEntry& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.matcher->sequence > b.matcher->sequence;
  });
  root_[type].Publish(std::move(root), &nic_->reclaimer_);
}

absl::Status Function::Send(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace,
                            uint32_t sqn) {
  return nic_->own_worker_->Send(*this, frames, verdicts, trace, sqn);
}

Verdict Function::Send(Frame frame) {
  Verdict v;
  Send(absl::MakeConstSpan(&frame, 1), absl::MakeSpan(&v, 1), /*trace=*/true).IgnoreError();  // sizes match
  return v;
}

std::optional<std::vector<uint8_t>> Function::PollPort() {
  std::lock_guard<std::mutex> lock(port_mu_);
  if (port_in_.empty()) return std::nullopt;
  std::vector<uint8_t> f = std::move(port_in_.front());
  port_in_.pop_front();
  return f;
}

}  // namespace drsim::sim
