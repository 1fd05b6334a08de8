// The DevX command dispatcher: mailbox checks, the opcode table (PRM names and the call the kernel takes
// each opcode through), and the routing of each call's commands to their handlers.
#include "soft_mlx5/devx_commands.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "soft_mlx5/devx_handlers.h"

namespace drsim::soft_mlx5 {
namespace {

// How a program hands an opcode to the device: Linux's mlx5_ib (drivers/infiniband/hw/mlx5/devx.c) passes
// each opcode through one call only (devx_is_general_cmd, devx_is_obj_create_cmd, _query_cmd, _modify_cmd),
// issues the destroy commands itself from mlx5dv_devx_obj_destroy, and never passes the commands it keeps
// for itself.
enum Via : uint8_t {
  kGeneral = 1 << 0,
  kCreate = 1 << 1,
  kQuery = 1 << 2,
  kModify = 1 << 3,
  kDestroy = 1 << 4,
  kKernel = 1 << 5,
};

struct Command {
  uint16_t opcode;
  const char* name;
  uint8_t via;  // Via bits
};

// The opcodes drsim names (the PRM's names, as mlx5_ifc.h spells them), sorted by opcode.
constexpr Command kCommands[] = {
    {0x100, "QUERY_HCA_CAP", kGeneral},
    {0x101, "QUERY_ADAPTER", kGeneral},
    {0x102, "INIT_HCA", kKernel},
    {0x103, "TEARDOWN_HCA", kKernel},
    {0x104, "ENABLE_HCA", kKernel},
    {0x105, "DISABLE_HCA", kKernel},
    {0x107, "QUERY_PAGES", kKernel},
    {0x108, "MANAGE_PAGES", kKernel},
    {0x109, "SET_HCA_CAP", kKernel},
    {0x10a, "QUERY_ISSI", kGeneral},
    {0x10b, "SET_ISSI", kKernel},
    {0x200, "CREATE_MKEY", kCreate},
    {0x201, "QUERY_MKEY", kQuery},
    {0x202, "DESTROY_MKEY", kDestroy},
    {0x301, "CREATE_EQ", kKernel},
    {0x302, "DESTROY_EQ", kKernel},
    {0x400, "CREATE_CQ", kCreate},
    {0x401, "DESTROY_CQ", kDestroy},
    {0x402, "QUERY_CQ", kQuery},
    {0x403, "MODIFY_CQ", kModify},
    {0x500, "CREATE_QP", kCreate},
    {0x501, "DESTROY_QP", kDestroy},
    {0x502, "RST2INIT_QP", kModify},
    {0x503, "INIT2RTR_QP", kModify},
    {0x504, "RTR2RTS_QP", kModify},
    {0x505, "RTS2RTS_QP", kModify},
    {0x506, "SQERR2RTS_QP", kModify},
    {0x507, "2ERR_QP", kModify},
    {0x50a, "2RST_QP", kModify},
    {0x50b, "QUERY_QP", kQuery},
    {0x50d, "MAD_IFC", kGeneral},
    {0x50e, "INIT2INIT_QP", kModify},
    {0x600, "CREATE_PSV", kCreate},
    {0x601, "DESTROY_PSV", kDestroy},
    {0x700, "CREATE_SRQ", kCreate},
    {0x701, "DESTROY_SRQ", kDestroy},
    {0x702, "QUERY_SRQ", kQuery},
    {0x703, "ARM_RQ", kModify},
    {0x705, "CREATE_XRC_SRQ", kCreate},
    {0x706, "DESTROY_XRC_SRQ", kDestroy},
    {0x707, "QUERY_XRC_SRQ", kQuery},
    {0x708, "ARM_XRC_SRQ", kModify},
    {0x710, "CREATE_DCT", kCreate},
    {0x711, "DESTROY_DCT", kDestroy},
    {0x713, "QUERY_DCT", kQuery},
    {0x714, "ARM_DCT_FOR_KEY_VIOLATION", kModify},
    {0x717, "CREATE_XRQ", kCreate},
    {0x718, "DESTROY_XRQ", kDestroy},
    {0x719, "QUERY_XRQ", kQuery},
    {0x71a, "ARM_XRQ", kModify},
    {0x750, "QUERY_VPORT_STATE", kGeneral},
    {0x752, "QUERY_ESW_VPORT_CONTEXT", kGeneral},
    {0x754, "QUERY_NIC_VPORT_CONTEXT", kGeneral},
    {0x760, "QUERY_ROCE_ADDRESS", kGeneral},
    {0x762, "QUERY_HCA_VPORT_CONTEXT", kGeneral},
    {0x764, "QUERY_HCA_VPORT_GID", kGeneral},
    {0x76f, "QUERY_VNIC_ENV", kGeneral},
    {0x770, "QUERY_VPORT_COUNTER", kGeneral},
    {0x771, "ALLOC_Q_COUNTER", kCreate},
    {0x772, "DEALLOC_Q_COUNTER", kDestroy},
    {0x773, "QUERY_Q_COUNTER", kQuery},
    {0x782, "CREATE_SCHEDULING_ELEMENT", kCreate},
    {0x783, "DESTROY_SCHEDULING_ELEMENT", kDestroy},
    {0x784, "QUERY_SCHEDULING_ELEMENT", kQuery},
    {0x785, "MODIFY_SCHEDULING_ELEMENT", kModify},
    {0x800, "ALLOC_PD", kCreate},
    {0x801, "DEALLOC_PD", kDestroy},
    {0x805, "ACCESS_REGISTER", kGeneral},
    {0x806, "ATTACH_TO_MCG", kCreate},
    {0x807, "DETACH_FROM_MCG", kDestroy},
    {0x80a, "GET_DROPPED_PACKET_LOG", kGeneral},
    {0x80d, "NOP", kGeneral},
    {0x80e, "ALLOC_XRCD", kCreate},
    {0x80f, "DEALLOC_XRCD", kDestroy},
    {0x816, "ALLOC_TRANSPORT_DOMAIN", kCreate},
    {0x817, "DEALLOC_TRANSPORT_DOMAIN", kDestroy},
    {0x822, "QUERY_CONG_STATUS", kGeneral},
    {0x824, "QUERY_CONG_PARAMS", kGeneral},
    {0x826, "QUERY_CONG_STATISTICS", kGeneral},
    {0x827, "ADD_VXLAN_UDP_DPORT", kCreate},
    {0x828, "DELETE_VXLAN_UDP_DPORT", kDestroy},
    {0x829, "SET_L2_TABLE_ENTRY", kCreate},
    {0x82a, "QUERY_L2_TABLE_ENTRY", kQuery},
    {0x82b, "DELETE_L2_TABLE_ENTRY", kDestroy},
    {0x842, "QUERY_LAG", kGeneral},
    {0x900, "CREATE_TIR", kCreate},
    {0x901, "MODIFY_TIR", kModify},
    {0x902, "DESTROY_TIR", kDestroy},
    {0x903, "QUERY_TIR", kQuery},
    {0x904, "CREATE_SQ", kCreate},
    {0x905, "MODIFY_SQ", kModify},
    {0x906, "DESTROY_SQ", kDestroy},
    {0x907, "QUERY_SQ", kQuery},
    {0x908, "CREATE_RQ", kCreate},
    {0x909, "MODIFY_RQ", kModify},
    {0x90a, "DESTROY_RQ", kDestroy},
    {0x90b, "QUERY_RQ", kQuery},
    {0x90c, "CREATE_RMP", kCreate},
    {0x90d, "MODIFY_RMP", kModify},
    {0x90e, "DESTROY_RMP", kDestroy},
    {0x90f, "QUERY_RMP", kQuery},
    {0x912, "CREATE_TIS", kCreate},
    {0x913, "MODIFY_TIS", kModify},
    {0x914, "DESTROY_TIS", kDestroy},
    {0x915, "QUERY_TIS", kQuery},
    {0x916, "CREATE_RQT", kCreate},
    {0x917, "MODIFY_RQT", kModify},
    {0x918, "DESTROY_RQT", kDestroy},
    {0x919, "QUERY_RQT", kQuery},
    {0x930, "CREATE_FLOW_TABLE", kCreate},
    {0x931, "DESTROY_FLOW_TABLE", kDestroy},
    {0x932, "QUERY_FLOW_TABLE", kQuery},
    {0x933, "CREATE_FLOW_GROUP", kCreate},
    {0x934, "DESTROY_FLOW_GROUP", kDestroy},
    {0x935, "QUERY_FLOW_GROUP", kQuery},
    {0x936, "SET_FLOW_TABLE_ENTRY", kCreate | kModify},  // op_mod 0 creates, 1 modifies
    {0x937, "QUERY_FLOW_TABLE_ENTRY", kQuery},
    {0x938, "DELETE_FLOW_TABLE_ENTRY", kDestroy},
    {0x939, "ALLOC_FLOW_COUNTER", kCreate},
    {0x93a, "DEALLOC_FLOW_COUNTER", kDestroy},
    {0x93b, "QUERY_FLOW_COUNTER", kQuery},
    {0x93c, "MODIFY_FLOW_TABLE", kModify},
    {0x93d, "ALLOC_PACKET_REFORMAT_CONTEXT", kCreate},
    {0x93e, "DEALLOC_PACKET_REFORMAT_CONTEXT", kDestroy},
    {0x93f, "QUERY_PACKET_REFORMAT_CONTEXT", kQuery},
    {0x940, "ALLOC_MODIFY_HEADER_CONTEXT", kCreate},
    {0x941, "DEALLOC_MODIFY_HEADER_CONTEXT", kDestroy},
    {0x942, "QUERY_MODIFY_HEADER_CONTEXT", kQuery},
    {0xa00, "CREATE_GENERAL_OBJECT", kCreate},
    {0xa01, "MODIFY_GENERAL_OBJECT", kModify},
    {0xa02, "QUERY_GENERAL_OBJECT", kQuery},
    {0xa03, "DESTROY_GENERAL_OBJECT", kDestroy},
    {0xa04, "CREATE_UCTX", kKernel},
    {0xa06, "DESTROY_UCTX", kKernel},
    {0xa08, "CREATE_UMEM", kKernel},
    {0xa0a, "DESTROY_UMEM", kKernel},
    {0xb00, "SYNC_STEERING", kGeneral},
};

const Command* Find(uint16_t opcode) {
  for (const Command& c : kCommands) {
    if (c.opcode == opcode) return &c;
  }
  return nullptr;
}

// Linux passes every opcode of this range through mlx5dv_devx_general_cmd.
bool InGeneralRange(uint16_t opcode) { return opcode >= 0xb00 && opcode < 0xd00; }

const char* HowToIssue(uint8_t via) {
  if (via & kGeneral) return "a general command: issue it with mlx5dv_devx_general_cmd";
  if (via & kCreate) return "it creates an object: issue it with mlx5dv_devx_obj_create";
  if (via & kQuery) return "it queries an object: issue it with mlx5dv_devx_obj_query on that object";
  if (via & kModify) return "it modifies an object: issue it with mlx5dv_devx_obj_modify on that object";
  if (via & kDestroy) return "it destroys an object: mlx5dv_devx_obj_destroy issues it";
  return "the kernel driver issues it itself; DevX does not pass it";
}

// The end of an opcode `via` has no handler for: refused when another call takes it (as the kernel
// refuses it), unsupported when it is this call's but not modelled, or unknown.
Outcome NotHandled(uint16_t opcode, Via via) {
  const Command* c = Find(opcode);
  const bool this_way = c != nullptr ? (c->via & via) != 0 : (via == kGeneral && InGeneralRange(opcode));
  if (c != nullptr && !this_way) {
    return Refused(PrmStatus::kBadOp, prm::kOpcode,
                   absl::StrFormat("not taken by this call: %s", HowToIssue(c->via)));
  }
  if (this_way) {
    return Unsupported(PrmStatus::kBadOp, prm::kOpcode, "the software NIC does not model this command");
  }
  return Unsupported(PrmStatus::kBadOp, prm::kOpcode, "an opcode the software NIC does not know");
}

// Checks the mailboxes' headers and clears the output; on success *opcode is the command's.
Outcome CheckMailboxes(const Mailbox& m, uint16_t* opcode) {
  if (m.in.size() < prm::kInHeaderBytes) {
    return Refused(PrmStatus::kBadInputLength,
                   absl::StrFormat("inlen %d: a command's input holds at least its 8-byte header (opcode, "
                                   "op_mod)",
                                   m.in.size()));
  }
  if (m.out.size() < prm::kOutHeaderBytes) {
    return Refused(PrmStatus::kBadOutputLength,
                   absl::StrFormat("outlen %d: a command's output holds at least its 16-byte header "
                                   "(status, syndrome)",
                                   m.out.size()));
  }
  *opcode = static_cast<uint16_t>(PrmGet(m.in, prm::kOpcode));
  std::memset(m.out.data(), 0, m.out.size());
  return Done();
}

// The kernel refuses object commands aimed at another function's vHCA (vhca_tunnel_id) outright.
Outcome CheckNoTunnel(const Mailbox& m) {
  if (uint64_t tunnel = PrmGet(m.in, prm::kVhcaTunnelId); tunnel != 0) {
    return Refused(PrmStatus::kBadParam, prm::kVhcaTunnelId,
                   absl::StrFormat("vhca_tunnel_id %d: object commands for another function's vHCA are "
                                   "refused",
                                   tunnel));
  }
  return Done();
}

Outcome Fail(int err, PrmStatus status, uint16_t culprit, std::string message) {
  Outcome o;
  o.err = err;
  o.status = status;
  o.culprit = culprit;
  o.message = std::move(message);
  return o;
}

uint16_t ByteOf(PrmField f) { return static_cast<uint16_t>(f.first_byte()); }

}  // namespace

Outcome Done() { return Outcome(); }

Outcome Refused(PrmStatus status, PrmField culprit, std::string message) {
  return Fail(EINVAL, status, ByteOf(culprit), std::move(message));
}

Outcome Refused(PrmStatus status, std::string message) {
  return Fail(EINVAL, status, Outcome::kNoField, std::move(message));
}

Outcome FirmwareError(PrmStatus status, PrmField culprit, std::string message) {
  return Fail(EREMOTEIO, status, ByteOf(culprit), std::move(message));
}

Outcome Unsupported(PrmStatus status, PrmField culprit, std::string message) {
  return Fail(EOPNOTSUPP, status, ByteOf(culprit), std::move(message));
}

Outcome Unsupported(PrmStatus status, std::string message) {
  return Fail(EOPNOTSUPP, status, Outcome::kNoField, std::move(message));
}

Outcome RequireInput(const Mailbox& m, PrmField field, const char* name) {
  if (m.in.size() >= field.end_byte()) return Done();
  return Refused(PrmStatus::kBadInputLength,
                 absl::StrFormat("inlen %d: the input ends before %s (bytes %d to %d)", m.in.size(), name,
                                 field.first_byte(), field.end_byte() - 1));
}

Outcome RequireOutput(const Mailbox& m, size_t bytes, const char* what) {
  if (m.out.size() >= bytes) return Done();
  return Refused(PrmStatus::kBadOutputLength,
                 absl::StrFormat("outlen %d: %s needs %d bytes", m.out.size(), what, bytes));
}

Outcome RunGeneralCommand(const drsim_function_context& fn, Mailbox m) {
  uint16_t opcode = 0;
  if (Outcome o = CheckMailboxes(m, &opcode); !o.ok()) return o;
  if (opcode == kQueryHcaCap) return QueryHcaCap(fn, m);
  if (opcode == kQueryQueueCounter) return QueryQueueCounter(*fn.owner, fn.vport, nullptr, m);
  return NotHandled(opcode, kGeneral);
}

Outcome RunCreateCommand(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created) {
  uint16_t opcode = 0;
  if (Outcome o = CheckMailboxes(m, &opcode); !o.ok()) return o;
  if (Outcome o = CheckNoTunnel(m); !o.ok()) return o;
  switch (opcode) {
    case kAllocFlowCounter:
      return AllocFlowCounter(fn, m, created);
    case kAllocQueueCounter:
      return AllocQueueCounter(fn, m, created);
    case kCreateRqt:
      return CreateRqt(fn, m, created);
    case kCreateTir:
      return CreateTir(fn, m, created);
    case kCreateGeneralObject:
      if (IsGeneveTlvOptionCreate(m)) return CreateGeneveTlvOption(fn, m, created);
      return CreateGeneralObject(fn, m, created);
    default:
      return NotHandled(opcode, kCreate);
  }
}

Outcome RunQueryCommand(mlx5dv_devx_obj& obj, Mailbox m) {
  uint16_t opcode = 0;
  if (Outcome o = CheckMailboxes(m, &opcode); !o.ok()) return o;
  if (Outcome o = CheckNoTunnel(m); !o.ok()) return o;
  switch (opcode) {
    case kQueryFlowCounter:
      return QueryFlowCounter(obj, m);
    case kQueryQueueCounter:
      return QueryQueueCounter(*obj.ctx, obj.vport, &obj, m);
    case kQueryGeneralObject:
      if (obj.kind == capi::DevxKind::kGeneveTlvOption) return QueryGeneveTlvOption(obj, m);
      return QueryGeneralObject(obj, m);
    default:
      return NotHandled(opcode, kQuery);
  }
}

Outcome RunModifyCommand(mlx5dv_devx_obj& obj, Mailbox m) {
  uint16_t opcode = 0;
  if (Outcome o = CheckMailboxes(m, &opcode); !o.ok()) return o;
  if (Outcome o = CheckNoTunnel(m); !o.ok()) return o;
  if (opcode == kModifyGeneralObject && obj.kind == capi::DevxKind::kGeneveTlvOption) {
    return ModifyGeneveTlvOption();
  }
  if (opcode == kModifyGeneralObject) return ModifyGeneralObject(obj, m);
  return NotHandled(opcode, kModify);
}

std::string DescribeOpcode(uint16_t opcode) {
  if (const Command* c = Find(opcode)) return absl::StrFormat("%s (0x%x)", c->name, opcode);
  return absl::StrFormat("opcode 0x%x", opcode);
}

const char* DescribeDevxKind(capi::DevxKind kind) {
  switch (kind) {
    case capi::DevxKind::kFlowCounter:
      return "flow counter bulk";
    case capi::DevxKind::kTir:
      return "TIR";
    case capi::DevxKind::kAsoFlowMeter:
      return "ASO flow meter object";
    case capi::DevxKind::kAsoFirstHit:
      return "ASO flow-hit object";
    case capi::DevxKind::kAsoConnTrack:
      return "ASO connection-tracking object";
    case capi::DevxKind::kRqt:
      return "RQ table";
    case capi::DevxKind::kQueueCounter:
      return "queue counter";
    case capi::DevxKind::kGeneveTlvOption:
      return "GENEVE TLV option object";
  }
  return "DEVX object";
}

void WriteFailure(const Outcome& o, uint16_t opcode, absl::Span<uint8_t> out) {
  PrmSet(out, prm::kStatus, static_cast<uint8_t>(o.status));
  PrmSet(out, prm::kSyndrome, (static_cast<uint32_t>(opcode) << 16) | o.culprit);
}

}  // namespace drsim::soft_mlx5
