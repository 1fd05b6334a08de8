// sim::Nic: construction, stats, workers, and the counter and ASO calls the NIC passes through. What a
// function offers the driver is in nic_function.cc, a frame's walk in nic_pipeline.cc, the burst fast path
// in nic_burst.cc.
#include "sim/nic.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "sim/action_executor.h"
#include "sim/aso.h"
#include "sim/counters.h"
#include "sim/meter.h"
#include "sim/nic_internal.h"

namespace drsim::sim {

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
    case Fate::kPort:
      return "port";
    case Fate::kNoTunnel:
      return "no tunnel to decapsulate (drop)";
  }
  return "?";
}

// ---- Nic -----------------------------------------------------------------------------------------

Nic::Nic(int num_vfs) : objects_(std::make_unique<Objects>()) {
  const int vfs = std::clamp(num_vfs, 0, 4094);
  for (int v = 0; v <= vfs; ++v)
    functions_.push_back(std::make_unique<Function>(this, static_cast<uint16_t>(v)));
  own_worker_.reset(new Worker(*this));  // the first reader slot is always free
}

Nic::~Nic() = default;

void Nic::set_time_ns(uint64_t ns) {
  uint64_t now = now_ns_.load(std::memory_order_relaxed);
  while (now < ns && !now_ns_.compare_exchange_weak(now, ns, std::memory_order_relaxed)) {
  }
}

namespace {

void AddStats(const NicStats& s, NicStats* total) {
  total->frames += s.frames;
  total->queued += s.queued;
  total->dropped += s.dropped;
  total->domain_default += s.domain_default;
  total->queue_full += s.queue_full;
  total->table_loops += s.table_loops;
  total->to_wire += s.to_wire;
  total->to_port += s.to_port;
  total->no_tunnel += s.no_tunnel;
  total->answered_by_index += s.answered_by_index;
}

}  // namespace

NicStats Nic::stats() const {
  std::lock_guard<std::mutex> lock(workers_mu_);
  NicStats total = retired_stats_;
  for (const Worker* w : workers_) AddStats(w->stats(), &total);
  return total;
}

// ---- Worker --------------------------------------------------------------------------------------

Worker::Worker(Nic& nic)
    : nic_(nic),
      reader_(&nic.reclaimer_),
      executor_(std::make_unique<ActionExecutor>(&nic.objects_->counters, &nic.objects_->aso)),
      burst_(std::make_unique<Nic::Burst>()) {
  std::lock_guard<std::mutex> lock(nic.workers_mu_);
  nic.workers_.push_back(this);
}

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(Nic& nic) {
  std::unique_ptr<Worker> w(new Worker(nic));
  if (!w->reader_.valid()) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("a NIC runs at most %d workers", hw::Reclaimer::kMaxReaders));
  }
  return w;
}

Worker::~Worker() {
  std::lock_guard<std::mutex> lock(nic_.workers_mu_);
  AddStats(stats(), &nic_.retired_stats_);
  nic_.workers_.erase(std::find(nic_.workers_.begin(), nic_.workers_.end(), this));
}

NicStats Worker::stats() const {
  auto get = [&](Fate f) { return fates_[static_cast<int>(f)].load(std::memory_order_relaxed); };
  NicStats s;
  s.frames = frames_.load(std::memory_order_relaxed);
  s.queued = get(Fate::kQueued);
  s.dropped = get(Fate::kDropped);
  s.domain_default = get(Fate::kDomainDefault);
  s.queue_full = get(Fate::kQueueFull);
  s.table_loops = get(Fate::kTableLoop);
  s.to_wire = get(Fate::kWire);
  s.to_port = get(Fate::kPort);
  s.no_tunnel = get(Fate::kNoTunnel);
  s.answered_by_index = answered_by_index_.load(std::memory_order_relaxed);
  return s;
}

absl::Status Worker::ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts,
                                     bool trace) {
  return nic_.Process(*this, frames, verdicts, trace, Nic::kWirePort, 0, Nic::Stage::kFdbRx, nic_.pf());
}

absl::Status Worker::Send(Function& from, absl::Span<const Frame> frames, absl::Span<Verdict> verdicts,
                          bool trace, uint32_t sqn) {
  return nic_.Process(*this, frames, verdicts, trace, from.vport(), sqn, Nic::Stage::kNicTx, from);
}

Function* Nic::function(uint32_t vport) {
  return vport < functions_.size() ? functions_[vport].get() : nullptr;
}

absl::StatusOr<uint32_t> Nic::AllocateCounters(uint32_t bulk) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->counters.Allocate(bulk, time_ns());
}

absl::StatusOr<hw::CounterActivity> Nic::QueryCounterActivity(uint32_t counter_id) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->counters.Activity(counter_id, time_ns());
}

absl::Status Nic::QueryCounter(uint32_t counter_id, uint64_t* packets, uint64_t* bytes, bool clear) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return clear ? objects_->counters.QueryAndClear(counter_id, packets, bytes)
               : objects_->counters.Query(counter_id, packets, bytes);
}

absl::Status Nic::FreeCounters(uint32_t base) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->counters.Free(base);
}

absl::StatusOr<uint32_t> Nic::CreateAsoObject(hw::AsoKind kind, uint32_t log_range) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.Create(kind, log_range, time_ns());
}

absl::Status Nic::ConfigureAsoFlowMeter(uint32_t object, uint32_t offset, const MeterParams& params) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.ConfigureFlowMeter(object, offset, params);
}

absl::StatusOr<std::optional<MeterParams>> Nic::QueryAsoFlowMeter(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.FlowMeterParams(object, offset);
}

absl::StatusOr<bool> Nic::QueryAsoFirstHit(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.FirstHitFlag(object, offset);
}

absl::StatusOr<hw::CounterActivity> Nic::QueryAsoFirstHitActivity(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.FirstHitActivity(object, offset, time_ns());
}

absl::Status Nic::ClearAsoFirstHit(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.ClearFirstHit(object, offset, time_ns());
}

absl::Status Nic::ConfigureAsoConnTrack(uint32_t object, uint32_t offset, const CtContext& context) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.ConfigureConnTrack(object, offset, context);
}

absl::StatusOr<CtContext> Nic::QueryAsoConnTrack(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.ConnTrack(object, offset);
}

absl::Status Nic::DestroyAsoObject(uint32_t object) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->aso.Destroy(object);
}

absl::StatusOr<uint32_t> Nic::CreateGeneveTlvOption(const GeneveTlvOption& option) {
  std::lock_guard<std::mutex> lock(control_mu_);
  absl::StatusOr<uint32_t> id = objects_->geneve_options.Create(option);
  geneve_option_.store(objects_->geneve_options.selector().packed(), std::memory_order_release);
  return id;
}

absl::StatusOr<GeneveTlvOption> Nic::QueryGeneveTlvOption(uint32_t object) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return objects_->geneve_options.Query(object);
}

absl::Status Nic::DestroyGeneveTlvOption(uint32_t object) {
  std::lock_guard<std::mutex> lock(control_mu_);
  absl::Status s = objects_->geneve_options.Destroy(object);
  geneve_option_.store(objects_->geneve_options.selector().packed(), std::memory_order_release);
  return s;
}

std::optional<std::vector<uint8_t>> Nic::PollWire() {
  std::lock_guard<std::mutex> lock(wire_mu_);
  if (wire_out_.empty()) return std::nullopt;
  std::vector<uint8_t> f = std::move(wire_out_.front());
  wire_out_.pop_front();
  return f;
}

absl::Status Nic::ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace) {
  return own_worker_->ReceiveFromWire(frames, verdicts, trace);
}

size_t Nic::TakeWireFrames(std::vector<std::vector<uint8_t>>& out) {
  std::lock_guard<std::mutex> lock(wire_mu_);
  const size_t n = wire_out_.size();
  for (std::vector<uint8_t>& f : wire_out_) out.push_back(std::move(f));
  wire_out_.clear();
  return n;
}

void Nic::RecycleWireBuffers(std::vector<std::vector<uint8_t>>& buffers) {
  std::lock_guard<std::mutex> lock(wire_mu_);
  for (std::vector<uint8_t>& b : buffers) {
    if (wire_spare_.size() >= kMaxSpareWireBuffers) break;
    wire_spare_.push_back(std::move(b));
  }
  buffers.clear();
}

Verdict Nic::ReceiveFromWire(Frame frame) {
  Verdict v;
  ReceiveFromWire(absl::MakeConstSpan(&frame, 1), absl::MakeSpan(&v, 1), /*trace=*/true).IgnoreError();
  return v;
}

}  // namespace drsim::sim
