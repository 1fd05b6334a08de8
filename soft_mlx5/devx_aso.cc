// The general-object commands (CREATE 0xa00, MODIFY 0xa01, QUERY 0xa02) on the three ASO object types the
// software NIC has: flow meters (obj_type 0x24; 2 meters a line), flow hits (0x25, first hit; 512 flags
// a line) and connection tracking (0x31, conn_track_offload; one CT context a line), 2^log_obj_range lines
// an object. They are the C API's kAsoFlowMeter, kAsoFirstHit and kAsoConnTrack objects, as
// drsim_aso_flow_meter_alloc, drsim_aso_first_hit_alloc and drsim_aso_ct_alloc make them.
//
// QUERY reads one line, obj_offset: its two meters' flow_meter_parameters, or its 512 flags (flag j in
// byte 63 - j / 8, bit j % 8 of the flag field, as DPDK reads a flow-hit line). MODIFY of a flow meter
// object is drsim's stand-in for the ASO WQEs that set meters on hardware: modify_field_select bit 0 sets
// the first meter of line obj_offset from the first 32 bytes of the parameters, bit 1 the second from the
// next 32 (drsim_aso_flow_meter_configure's path). CREATE takes the PRM's flow_meter_aso object too: its
// two flow_meter_parameters set the meters of line 0 (a block of zeros leaves its meter unset, as a new
// object's meters are; DPDK sets them later by ASO WQE), checked before the object is made.
//
// Connection tracking: CREATE makes unprogrammed contexts (valid 0; what conn_track_offload carries at
// CREATE is not read). QUERY of line obj_offset returns its 64-byte conn_track_aso at byte 80 (the
// context as traffic left it: sim/conntrack_prm.h); MODIFY with modify_field_select bit 0 programs it from
// the 64 bytes at byte 80 — drsim's stand-in for the ASO WQE DPDK sends (drsim_aso_ct_configure's path).
#include <array>
#include <cstdint>
#include <cstring>
#include <optional>

#include "absl/strings/str_format.h"
#include "capi/objects.h"
#include "sim/aso.h"
#include "sim/conntrack_prm.h"
#include "sim/meter.h"
#include "sim/nic.h"
#include "soft_mlx5/devx_handlers.h"

namespace drsim::soft_mlx5 {
namespace {

// general_obj_in_cmd_hdr (16 bytes), then the object from bit 0x80.
constexpr PrmField kObjType = prm::kOpMod;
constexpr PrmField kObjId{0x40, 32};
constexpr PrmField kLogObjRange{0x63, 5};  // CREATE
constexpr PrmField kObjOffset{0x60, 32};   // QUERY, MODIFY: the line
constexpr PrmField kModifyFieldSelect{0x80, 64};
constexpr PrmField kMeterParameters[2] = {{0x280, 256}, {0x380, 256}};  // flow_meter_aso: bytes 80, 112
constexpr PrmField kFlags{0x280, 512};                                  // flow_hit_aso: bytes 80 to 143
constexpr PrmField kConnTrackAso{0x280, 512};                           // conn_track_aso: bytes 80 to 143
constexpr PrmField kOutObjId{0x40, 32};                                 // general_obj_out_cmd_hdr
constexpr size_t kObjectEnd = 144;                                      // the header and the 128-byte object
constexpr size_t kMeterParamBytes = 32;

constexpr uint16_t kTypeAsoFlowMeter = 0x24;
constexpr uint16_t kTypeAsoFlowHit = 0x25;
constexpr uint16_t kTypeAsoConnTrack = 0x31;
constexpr uint32_t kMaxLogObjRange = 16;  // the QoS page's log_meter_aso_max_alloc

const char* GeneralObjectName(uint64_t type) {
  switch (type) {
    case 0x0a:
      return "FLOW_METER";
    case 0x0b:
      return "GENEVE_TLV_OPT";
    case 0x0c:
      return "DEK";
    case 0x0d:
      return "VIRTQ";
    case 0x18:
      return "MATCH_DEFINER";
    case 0x1f:
      return "CRYPTO_LOGIN";
    case 0x20:
      return "FLOW_SAMPLER";
    case 0x22:
      return "FLEX_PARSE_GRAPH";
    case 0x23:
      return "HEADER_MODIFY_ARGUMENT";
    case 0x24:
      return "ASO_FLOW_METER";
    case 0x25:
      return "ASO_FLOW_HIT";
    case 0x26:
      return "SCHEDULING_ELEMENT";
    case 0x2c:
      return "RESERVED_QPN";
    case 0x31:
      return "ASO_CONN_TRACK";
    case 0x40:
      return "STC";
    case 0x41:
      return "RTC";
    case 0x42:
      return "STE";
    case 0x43:
      return "MODIFY_HEADER_PATTERN";
    default:
      return "unknown";
  }
}

// The general object type of an ASO kind, and back (nullopt: not an ASO type).
uint16_t TypeOf(hw::AsoKind kind) {
  switch (kind) {
    case hw::AsoKind::kFlowMeter:
      return kTypeAsoFlowMeter;
    case hw::AsoKind::kFirstHit:
      return kTypeAsoFlowHit;
    case hw::AsoKind::kConnTrack:
      break;
  }
  return kTypeAsoConnTrack;
}
std::optional<hw::AsoKind> KindOfType(uint64_t type) {
  for (hw::AsoKind k : {hw::AsoKind::kFlowMeter, hw::AsoKind::kFirstHit, hw::AsoKind::kConnTrack}) {
    if (TypeOf(k) == type) return k;
  }
  return std::nullopt;
}

uint32_t PerLine(capi::DevxKind kind) { return sim::AsoBank::ContextsPerLine(*capi::AsoKindOf(kind)); }

// The kernel takes QUERY and MODIFY only with the object's own obj_type and obj_id in the header.
Outcome CheckNamesObject(const mlx5dv_devx_obj& obj, const Mailbox& m) {
  if (Outcome o = RequireInput(m, kObjOffset, "the general object header"); !o.ok()) return o;
  const uint64_t type = PrmGet(m.in, kObjType), id = PrmGet(m.in, kObjId);
  const std::optional<hw::AsoKind> kind = capi::AsoKindOf(obj.kind);
  if (!kind.has_value()) {
    return Refused(PrmStatus::kBadResource, kObjType,
                   absl::StrFormat("obj_type 0x%x: the object is a %s, not a general object", type,
                                   DescribeDevxKind(obj.kind)));
  }
  const uint16_t own = TypeOf(*kind);
  if (type != own || id != obj.id) {
    return Refused(PrmStatus::kBadResource, type != own ? kObjType : kObjId,
                   absl::StrFormat("obj_type 0x%x, obj_id %d: not this object (obj_type 0x%x, obj_id %d)",
                                   type, id, own, obj.id));
  }
  return Done();
}

// The line obj_offset names, or why not.
Outcome LineOf(const mlx5dv_devx_obj& obj, const Mailbox& m, uint32_t* line) {
  const uint64_t offset = PrmGet(m.in, kObjOffset);
  const uint32_t lines = obj.count / PerLine(obj.kind);
  if (offset >= lines) {
    return FirmwareError(PrmStatus::kBadParam, kObjOffset,
                         absl::StrFormat("obj_offset %d: the object has %d line(s)", offset, lines));
  }
  *line = static_cast<uint32_t>(offset);
  return Done();
}

// The flow_meter_parameters of the meters `select` picks (bit k: meter k of the line) from the mailbox,
// all checked before any is used, so a bad second one changes nothing; a meter not selected is nullopt.
Outcome ReadMeterParameters(const Mailbox& m, uint64_t select, std::optional<sim::MeterParams> (&params)[2]) {
  for (uint32_t k = 0; k < 2; ++k) {
    params[k].reset();
    if ((select & (1u << k)) == 0) continue;
    const char* name = k == 0 ? "the first meter's parameters" : "the second meter's parameters";
    if (Outcome o = RequireInput(m, kMeterParameters[k], name); !o.ok()) return o;
    absl::StatusOr<sim::MeterParams> p =
        sim::MeterParams::Parse(m.in.subspan(kMeterParameters[k].first_byte(), kMeterParamBytes));
    if (!p.ok()) {
      return FirmwareError(PrmStatus::kBadParam, kMeterParameters[k],
                           absl::StrFormat("%s: %s", name, p.status().message()));
    }
    params[k] = *p;
  }
  return Done();
}

// Sets meter k of `line` of flow-meter object `id` to params[k], where given.
Outcome ConfigureMeters(sim::Nic& nic, uint32_t id, uint32_t line,
                        const std::optional<sim::MeterParams> (&params)[2]) {
  for (uint32_t k = 0; k < 2; ++k) {
    if (!params[k].has_value()) continue;
    absl::Status s = nic.ConfigureAsoFlowMeter(id, line * sim::AsoBank::kMetersPerLine + k, *params[k]);
    if (!s.ok()) return FirmwareError(PrmStatus::kBadResource, kObjId, std::string(s.message()));
  }
  return Done();
}

// Which meters of the create mailbox carry parameters: bit k when flow_meter_parameters[k] is there and
// not all zeros.
uint64_t MetersGivenAtCreate(const Mailbox& m) {
  uint64_t select = 0;
  for (uint32_t k = 0; k < 2; ++k) {
    const size_t at = kMeterParameters[k].first_byte();
    if (m.in.size() < at + kMeterParamBytes) continue;
    for (size_t b = 0; b < kMeterParamBytes; ++b) {
      if (m.in[at + b] != 0) select |= 1u << k;
    }
  }
  return select;
}

// MODIFY of a connection-tracking object: programs the context of line obj_offset.
Outcome ModifyConnTrack(mlx5dv_devx_obj& obj, Mailbox m) {
  uint32_t line = 0;
  if (Outcome o = LineOf(obj, m, &line); !o.ok()) return o;
  if (Outcome o = RequireInput(m, kModifyFieldSelect, "modify_field_select"); !o.ok()) return o;
  const uint64_t select = PrmGet(m.in, kModifyFieldSelect);
  if (select != 1) {
    return FirmwareError(PrmStatus::kBadParam, kModifyFieldSelect,
                         absl::StrFormat("modify_field_select 0x%x: bit 0 (the whole conn_track_aso) and no "
                                         "other bits",
                                         select));
  }
  if (Outcome o = RequireInput(m, kConnTrackAso, "conn_track_aso"); !o.ok()) return o;
  absl::StatusOr<sim::CtContext> c =
      sim::ParseCtContext(m.in.subspan(kConnTrackAso.first_byte(), sim::kCtPrmBytes));
  if (!c.ok()) {
    return FirmwareError(PrmStatus::kBadParam, kConnTrackAso, std::string(c.status().message()));
  }
  absl::Status s = obj.ctx->nic->ConfigureAsoConnTrack(obj.id, line, *c);
  if (!s.ok()) return FirmwareError(PrmStatus::kBadParam, kConnTrackAso, std::string(s.message()));
  return Done();
}

}  // namespace

Outcome CreateGeneralObject(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created) {
  if (Outcome o = RequireInput(m, kObjOffset, "the general object header"); !o.ok()) return o;
  const uint64_t type = PrmGet(m.in, kObjType);
  const std::optional<hw::AsoKind> aso_kind = KindOfType(type);
  if (!aso_kind.has_value()) {
    return Unsupported(
        PrmStatus::kBadParam, kObjType,
        absl::StrFormat("obj_type 0x%x (%s): the software NIC has GENEVE_TLV_OPT (0x0b), "
                        "ASO_FLOW_METER (0x24), ASO_FLOW_HIT (0x25) and ASO_CONN_TRACK (0x31) objects",
                        type, GeneralObjectName(type)));
  }
  const uint64_t log_range = PrmGet(m.in, kLogObjRange);
  if (log_range > kMaxLogObjRange) {
    return FirmwareError(PrmStatus::kExceedsLimit, kLogObjRange,
                         absl::StrFormat("log_obj_range %d: at most %d", log_range, kMaxLogObjRange));
  }
  std::optional<sim::MeterParams> meters[2];
  if (*aso_kind == hw::AsoKind::kFlowMeter) {
    if (Outcome o = ReadMeterParameters(m, MetersGivenAtCreate(m), meters); !o.ok()) return o;
  }
  capi::Context& ctx = *fn.owner;
  absl::StatusOr<uint32_t> id = ctx.nic->CreateAsoObject(*aso_kind, static_cast<uint32_t>(log_range));
  if (!id.ok())
    return FirmwareError(PrmStatus::kNoResources, kLogObjRange, std::string(id.status().message()));
  if (Outcome o = ConfigureMeters(*ctx.nic, *id, 0, meters); !o.ok()) {
    (void)ctx.nic->DestroyAsoObject(*id);  // a failed CREATE leaves nothing behind
    return o;
  }
  const capi::DevxKind kind = capi::DevxKindOf(*aso_kind);
  PrmSet(m.out, kOutObjId, *id);
  *created = capi::NewDevxObject(ctx, kind, fn.vport, *id, PerLine(kind) << log_range);
  return Done();
}

Outcome QueryGeneralObject(mlx5dv_devx_obj& obj, Mailbox m) {
  if (Outcome o = CheckNamesObject(obj, m); !o.ok()) return o;
  uint32_t line = 0;
  if (Outcome o = LineOf(obj, m, &line); !o.ok()) return o;
  if (Outcome o = RequireOutput(m, kObjectEnd, "the general object header and the ASO object"); !o.ok())
    return o;
  sim::Nic& nic = *obj.ctx->nic;
  PrmSet(m.out, kOutObjId, obj.id);
  if (obj.kind == capi::DevxKind::kAsoConnTrack) {
    absl::StatusOr<sim::CtContext> c = nic.QueryAsoConnTrack(obj.id, line);
    if (!c.ok()) return FirmwareError(PrmStatus::kBadResource, kObjId, std::string(c.status().message()));
    const std::array<uint8_t, sim::kCtPrmBytes> prm = sim::SerializeCtContext(*c);
    std::memcpy(m.out.data() + kConnTrackAso.first_byte(), prm.data(), prm.size());
    return Done();
  }
  if (obj.kind == capi::DevxKind::kAsoFlowMeter) {
    for (uint32_t k = 0; k < sim::AsoBank::kMetersPerLine; ++k) {
      absl::StatusOr<std::optional<sim::MeterParams>> p =
          nic.QueryAsoFlowMeter(obj.id, line * sim::AsoBank::kMetersPerLine + k);
      if (!p.ok()) return FirmwareError(PrmStatus::kBadResource, kObjId, std::string(p.status().message()));
      if (p->has_value()) (*p)->Serialize(m.out.data() + kMeterParameters[k].first_byte());  // else zeros
    }
    return Done();
  }
  for (uint32_t j = 0; j < sim::AsoBank::kFirstHitsPerLine; ++j) {
    absl::StatusOr<bool> hit = nic.QueryAsoFirstHit(obj.id, line * sim::AsoBank::kFirstHitsPerLine + j);
    if (!hit.ok()) return FirmwareError(PrmStatus::kBadResource, kObjId, std::string(hit.status().message()));
    if (*hit) m.out[kFlags.first_byte() + 63 - j / 8] |= static_cast<uint8_t>(1u << (j % 8));
  }
  return Done();
}

Outcome ModifyGeneralObject(mlx5dv_devx_obj& obj, Mailbox m) {
  if (Outcome o = CheckNamesObject(obj, m); !o.ok()) return o;
  if (obj.kind == capi::DevxKind::kAsoConnTrack) return ModifyConnTrack(obj, m);
  if (obj.kind != capi::DevxKind::kAsoFlowMeter) {
    return Unsupported(
        PrmStatus::kBadParam, kObjType,
        "obj_type 0x25: a flow-hit object's flags change only by the aso actions that set them");
  }
  uint32_t line = 0;
  if (Outcome o = LineOf(obj, m, &line); !o.ok()) return o;
  if (Outcome o = RequireInput(m, kModifyFieldSelect, "modify_field_select"); !o.ok()) return o;
  const uint64_t select = PrmGet(m.in, kModifyFieldSelect);
  if ((select & ~uint64_t{3}) != 0) {
    return FirmwareError(PrmStatus::kBadParam, kModifyFieldSelect,
                         absl::StrFormat("modify_field_select 0x%x: bit 0 sets the line's first meter, bit 1 "
                                         "its second; no other bits",
                                         select));
  }
  std::optional<sim::MeterParams> params[2];
  if (Outcome o = ReadMeterParameters(m, select, params); !o.ok()) return o;
  return ConfigureMeters(*obj.ctx->nic, obj.id, line, params);
}

}  // namespace drsim::soft_mlx5
