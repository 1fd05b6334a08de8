// The general-object commands on GENEVE TLV option parser objects (obj_type 0x0b): which GENEVE option
// the NIC's parser reports as option 0 (sim/geneve_option.h), as mlx5's DPDK PMD and Linux's mlx5_core
// create them before matching on misc3.geneve_tlv_option_0_data.
//
// CREATE takes geneve_tlv_option: option_class, option_type and option_data_length (4-byte words). The
// device's limits are the capability page's (max_geneve_tlv_options 1, max_geneve_tlv_option_data_len 7),
// failed as firmware fails a limit (EXCEEDS_LIM). The hardware-steering sampling fields
// (sample_offset_valid, option_class_ignore) are not modelled; geneve_option_fte_index is not used.
// QUERY reads the object back; the sample fields read 0 (sample_id_valid 0). MODIFY is refused: the
// object is destroyed and created again. Destroy (mlx5dv_devx_obj_destroy) is EBUSY while matchers
// read the option 0 fields.
#include <cstdint>
#include <string>

#include "absl/strings/str_format.h"
#include "capi/objects.h"
#include "sim/geneve_option.h"
#include "sim/nic.h"
#include "soft_mlx5/devx_handlers.h"

namespace drsim::soft_mlx5 {
namespace {

// general_obj_in_cmd_hdr (16 bytes), then geneve_tlv_option from bit 0x80 (64 bytes).
constexpr PrmField kObjType = prm::kOpMod;
constexpr PrmField kObjId{0x40, 32};
constexpr PrmField kLogObjRange{0x63, 5};
constexpr PrmField kSampleOffsetValid{0x80 + 0x51, 1};
constexpr PrmField kOptionClassIgnore{0x80 + 0x52, 1};
constexpr PrmField kOptionClass{0x80 + 0x60, 16};
constexpr PrmField kOptionType{0x80 + 0x70, 8};
constexpr PrmField kOptionDataLength{0x80 + 0x7b, 5};
constexpr PrmField kOutObjId{0x40, 32};
constexpr size_t kObjectEnd = 16 + 64;

}  // namespace

bool IsGeneveTlvOptionCreate(const Mailbox& m) {
  return m.in.size() >= 16 && PrmGet(m.in, kObjType) == kObjTypeGeneveTlvOption;
}

Outcome CreateGeneveTlvOption(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created) {
  if (Outcome o = RequireInput(m, kOptionDataLength, "geneve_tlv_option"); !o.ok()) return o;
  if (PrmGet(m.in, kLogObjRange) != 0) {
    return FirmwareError(PrmStatus::kBadParam, kLogObjRange,
                         absl::StrFormat("log_obj_range %d: a GENEVE TLV option object is one object",
                                         PrmGet(m.in, kLogObjRange)));
  }
  if (PrmGet(m.in, kOptionClassIgnore) != 0) {
    return Unsupported(PrmStatus::kBadParam, kOptionClassIgnore,
                       "option_class_ignore 1: the software NIC's parser matches the option's class");
  }
  if (PrmGet(m.in, kSampleOffsetValid) != 0) {
    return Unsupported(PrmStatus::kBadParam, kSampleOffsetValid,
                       "sample_offset_valid 1: the software NIC samples the option's first data word only");
  }
  const sim::GeneveTlvOption option{static_cast<uint16_t>(PrmGet(m.in, kOptionClass)),
                                    static_cast<uint8_t>(PrmGet(m.in, kOptionType)),
                                    static_cast<uint8_t>(PrmGet(m.in, kOptionDataLength))};
  capi::Context& ctx = *fn.owner;
  absl::StatusOr<uint32_t> id = ctx.nic->CreateGeneveTlvOption(option);
  if (!id.ok()) {
    const PrmField culprit = option.data_len > sim::GeneveOptionParser::kMaxDataWords ? kOptionDataLength
                                                                                       : kObjType;
    return FirmwareError(PrmStatus::kExceedsLimit, culprit,
                         absl::StrFormat("option_class 0x%x, option_type 0x%x, option_data_length %d: %s",
                                         option.option_class, option.type, option.data_len,
                                         id.status().message()));
  }
  PrmSet(m.out, kOutObjId, *id);
  *created = capi::NewDevxObject(ctx, capi::DevxKind::kGeneveTlvOption, fn.vport, *id, 1);
  return Done();
}

Outcome QueryGeneveTlvOption(mlx5dv_devx_obj& obj, Mailbox m) {
  if (Outcome o = RequireInput(m, kObjId, "the general object header"); !o.ok()) return o;
  const uint64_t type = PrmGet(m.in, kObjType), id = PrmGet(m.in, kObjId);
  if (type != kObjTypeGeneveTlvOption || id != obj.id) {
    return Refused(PrmStatus::kBadResource, type != kObjTypeGeneveTlvOption ? kObjType : kObjId,
                   absl::StrFormat("obj_type 0x%x, obj_id %d: not this object (obj_type 0x%x, obj_id %d)",
                                   type, id, kObjTypeGeneveTlvOption, obj.id));
  }
  if (Outcome o = RequireOutput(m, kObjectEnd, "the general object header and geneve_tlv_option");
      !o.ok()) {
    return o;
  }
  absl::StatusOr<sim::GeneveTlvOption> option = obj.ctx->nic->QueryGeneveTlvOption(obj.id);
  if (!option.ok()) {
    return FirmwareError(PrmStatus::kBadResource, kObjId, std::string(option.status().message()));
  }
  PrmSet(m.out, kOutObjId, obj.id);
  PrmSet(m.out, kOptionClass, option->option_class);
  PrmSet(m.out, kOptionType, option->type);
  PrmSet(m.out, kOptionDataLength, option->data_len);
  return Done();
}

Outcome ModifyGeneveTlvOption() {
  return Unsupported(PrmStatus::kBadParam, kObjType,
                     "obj_type 0x0b: a GENEVE TLV option object is not modified; destroy it and create "
                     "another");
}

}  // namespace drsim::soft_mlx5
