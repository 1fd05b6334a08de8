#include "sim/aso.h"

#include "absl/strings/str_format.h"

namespace drsim::sim {
namespace {

const char* KindName(hw::AsoKind kind) {
  switch (kind) {
    case hw::AsoKind::kFlowMeter:
      return "flow meter";
    case hw::AsoKind::kFirstHit:
      return "first-hit";
    case hw::AsoKind::kConnTrack:
      return "connection tracking";
  }
  return "unknown";
}

CtContext UnprogrammedConnTrack() {
  CtContext c;
  c.valid = false;
  return c;
}

}  // namespace

uint32_t AsoBank::ContextsPerLine(hw::AsoKind kind) {
  switch (kind) {
    case hw::AsoKind::kFlowMeter:
      return kMetersPerLine;
    case hw::AsoKind::kFirstHit:
      return kFirstHitsPerLine;
    case hw::AsoKind::kConnTrack:
      return kConnTracksPerLine;
  }
  return 1;
}

absl::StatusOr<uint32_t> AsoBank::Create(hw::AsoKind kind, uint32_t log_range, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (log_range > 16) {
    return absl::InvalidArgumentError(absl::StrFormat("ASO object log_range %d: at most 16", log_range));
  }
  const uint32_t lines = 1u << log_range;
  Object o{kind, 0, 0};
  if (kind == hw::AsoKind::kFlowMeter) {
    o.base = static_cast<uint32_t>(meters_.size());
    o.count = lines * kMetersPerLine;
    meters_.resize(meters_.size() + o.count, TokenMeter(MeterParams()));
    meter_configured_.resize(meters_.size(), false);
  } else if (kind == hw::AsoKind::kFirstHit) {
    o.base = static_cast<uint32_t>(hits_.size());
    o.count = lines * kFirstHitsPerLine;
    FirstHitContext fresh;
    fresh.since_ns = fresh.last_ns = now_ns;
    hits_.resize(hits_.size() + o.count, fresh);
  } else {
    o.base = static_cast<uint32_t>(conn_tracks_.size());
    o.count = lines * kConnTracksPerLine;
    conn_tracks_.resize(conn_tracks_.size() + o.count, UnprogrammedConnTrack());
  }
  const uint32_t id = next_id_++;
  objects_[id] = o;
  return id;
}

absl::Status AsoBank::Destroy(uint32_t object) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(object);
  if (it == objects_.end()) return absl::NotFoundError(absl::StrFormat("no ASO object %d", object));
  if (it->second.references > 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("ASO object %d is used by %d aso action(s)", object, it->second.references));
  }
  objects_.erase(it);  // its contexts are not reused
  return absl::OkStatus();
}

absl::Status AsoBank::ConfigureFlowMeter(uint32_t object, uint32_t offset, const MeterParams& params) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(object);
  if (it == objects_.end() || it->second.kind != hw::AsoKind::kFlowMeter) {
    return absl::NotFoundError(absl::StrFormat("no ASO flow meter object %d", object));
  }
  if (offset >= it->second.count) {
    return absl::InvalidArgumentError(absl::StrFormat("ASO flow meter offset %d: object %d has %d meters",
                                                      offset, object, it->second.count));
  }
  meters_[it->second.base + offset].Configure(params, true);
  meter_configured_[it->second.base + offset] = true;
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> AsoBank::ContextOf(uint32_t object, hw::AsoKind kind, uint32_t offset) const {
  auto it = objects_.find(object);
  if (it == objects_.end() || it->second.kind != kind) {
    return absl::NotFoundError(absl::StrFormat("no ASO %s object %d", KindName(kind), object));
  }
  if (offset >= it->second.count) {
    return absl::InvalidArgumentError(absl::StrFormat("ASO %s offset %d: object %d has %d", KindName(kind),
                                                      offset, object, it->second.count));
  }
  return it->second.base + offset;
}

absl::StatusOr<std::optional<MeterParams>> AsoBank::FlowMeterParams(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<uint32_t> context = ContextOf(object, hw::AsoKind::kFlowMeter, offset);
  if (!context.ok()) return context.status();
  if (!meter_configured_[*context]) return std::optional<MeterParams>();
  return std::optional<MeterParams>(meters_[*context].params());
}

absl::StatusOr<bool> AsoBank::FirstHitFlag(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<uint32_t> context = ContextOf(object, hw::AsoKind::kFirstHit, offset);
  if (!context.ok()) return context.status();
  return hits_[*context].hit;
}

absl::StatusOr<hw::CounterActivity> AsoBank::FirstHitActivity(uint32_t object, uint32_t offset,
                                                              uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<uint32_t> context = ContextOf(object, hw::AsoKind::kFirstHit, offset);
  if (!context.ok()) return context.status();
  return FirstHitHistory(*context, now_ns);
}

absl::StatusOr<hw::CounterActivity> AsoBank::FirstHitActivity(uint32_t context, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (context >= hits_.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("ASO context %d is not a first-hit context", context));
  }
  return FirstHitHistory(context, now_ns);
}

hw::CounterActivity AsoBank::FirstHitHistory(uint32_t context, uint64_t now_ns) const {
  const FirstHitContext& c = hits_[context];
  return hw::CounterActivity::At(now_ns, c.since_ns, c.hit, c.last_ns, c.longest_idle_ns);
}

absl::Status AsoBank::ClearFirstHit(uint32_t object, uint32_t offset, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<uint32_t> context = ContextOf(object, hw::AsoKind::kFirstHit, offset);
  if (!context.ok()) return context.status();
  FirstHitContext& c = hits_[*context];
  c = FirstHitContext();
  c.since_ns = c.last_ns = now_ns;
  return absl::OkStatus();
}

absl::Status AsoBank::ConfigureConnTrack(uint32_t object, uint32_t offset, const CtContext& context) {
  if (absl::Status s = CheckCtContext(context); !s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<uint32_t> index = ContextOf(object, hw::AsoKind::kConnTrack, offset);
  if (!index.ok()) return index.status();
  conn_tracks_[*index] = context;
  return absl::OkStatus();
}

absl::StatusOr<CtContext> AsoBank::ConnTrack(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  absl::StatusOr<uint32_t> index = ContextOf(object, hw::AsoKind::kConnTrack, offset);
  if (!index.ok()) return index.status();
  return conn_tracks_[*index];
}

absl::StatusOr<hw::AsoContext> AsoBank::Retain(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(object);
  if (it == objects_.end()) return absl::NotFoundError(absl::StrFormat("no ASO object %d", object));
  if (offset >= it->second.count) {
    return absl::InvalidArgumentError(absl::StrFormat("ASO offset %d is outside object %d (%d contexts)",
                                                      offset, object, it->second.count));
  }
  ++it->second.references;
  return hw::AsoContext{it->second.kind, it->second.base + offset};
}

void AsoBank::Release(uint32_t object) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(object);
  if (it != objects_.end()) --it->second.references;
}

MeterColor AsoBank::MarkFlowMeter(uint32_t context, MeterColor initial, uint64_t now_ns, uint32_t l2_bytes,
                                  uint32_t ip_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!meter_configured_[context]) return MeterColor::kGreen;
  return meters_[context].Mark(now_ns, l2_bytes, ip_bytes, initial);
}

bool AsoBank::FirstHit(uint32_t context, bool set, uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  FirstHitContext& c = hits_[context];
  const bool was = c.hit;
  if (!set) return was;
  c.hit = true;
  if (now_ns > c.last_ns) {
    if (now_ns - c.last_ns > c.longest_idle_ns) c.longest_idle_ns = now_ns - c.last_ns;
    c.last_ns = now_ns;
  }
  return was;
}

uint32_t AsoBank::TrackConnTrack(uint32_t context, bool original, absl::Span<const uint8_t> frame, size_t l3,
                                 size_t l4, uint8_t ip_protocol) {
  std::lock_guard<std::mutex> lock(mu_);
  return TrackCtFrame(conn_tracks_[context], original, frame, l3, l4, ip_protocol);
}

}  // namespace drsim::sim
