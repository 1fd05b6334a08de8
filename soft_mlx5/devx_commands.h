// DevX commands on the software mlx5 device: the PRM commands a program hands a ConnectX through
// mlx5dv_devx_general_cmd and mlx5dv_devx_obj_create/query/modify, run on the software NIC.
//
// What
//   general_cmd  QUERY_HCA_CAP (0x100): the general, Ethernet offload, NIC and eSwitch flow table,
//                eSwitch and QoS capability pages (devx_caps.cc).
//   obj_create   ALLOC_FLOW_COUNTER (0x939), CREATE_RQT (0x916), CREATE_TIR (0x900), CREATE_GENERAL_OBJECT
//                (0xa00) of the ASO flow meter (0x24) and ASO flow-hit (0x25) types. The objects are the
//                C API's own DEVX objects (capi/objects.h), so mlx5dv_dr_action_create_flow_counter,
//                _dest_devx_tir and _aso take them, and mlx5dv_devx_obj_destroy frees them.
//   obj_query    QUERY_FLOW_COUNTER (0x93b) on a counter bulk; QUERY_GENERAL_OBJECT (0xa02) on an ASO
//                object.
//   obj_modify   MODIFY_GENERAL_OBJECT (0xa01) on an ASO flow meter object: sets its meters' parameters.
//   docs/devx.md lists the fields each command honours.
//
// How
//   A command is an input mailbox (opcode in bits 0..15, op_mod in bits 48..63) and an output mailbox
//   (status in byte 0, syndrome in bytes 4..7, then the command's fields). The dispatcher reads the
//   opcode, checks that the call is the one Linux's mlx5_ib takes that opcode through (its devx.c sorts
//   opcodes into general, create, query and modify commands), and runs the command's handler. Whatever
//   the output mailbox held is cleared first, as the kernel hands firmware a zeroed one.
//
//   A failure is reported the way the real stack reports it:
//   - what the kernel refuses before any firmware sees the command (a call that does not take the
//     opcode, a mailbox too short for the fields the command has, an object id in the input that is not
//     the object's): EINVAL;
//   - what firmware fails (a bad field value, an unknown queue or table, a limit): EREMOTEIO, as
//     rdma-core's mlx5dv_devx_obj_create(3) says: "If the error value is EREMOTEIO, outbox.status and
//     outbox.syndrome will contain the command failure details";
//   - what the software NIC does not model (an unknown opcode, an object type or field value it lacks):
//     EOPNOTSUPP, which rdma-core's tests take as "skip".
//   Every failure also writes a non-zero status and a syndrome when the output has room for them. The
//   syndrome is drsim's own: the opcode in its upper 16 bits and the byte offset in the input of the field
//   at fault in its lower 16 (0xffff when no one field is). The message names the opcode, in hex and by
//   its PRM name, and the field.
//
// Thread-safety
//   Callers hold the context's lock (capi::Context::mu).
#ifndef DRSIM_SOFT_MLX5_DEVX_COMMANDS_H_
#define DRSIM_SOFT_MLX5_DEVX_COMMANDS_H_

#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "capi/objects.h"
#include "soft_mlx5/prm_bits.h"

namespace drsim::soft_mlx5 {

// The status byte of an output mailbox (the PRM's command status values).
enum class PrmStatus : uint8_t {
  kOk = 0x00,
  kBadOp = 0x02,        // unknown or unsupported opcode
  kBadParam = 0x03,     // a field has a value the command does not take
  kBadResource = 0x05,  // a field names a queue, table or object that does not exist
  kResourceBusy = 0x06,
  kExceedsLimit = 0x08,  // beyond a capability's limit
  kBadResourceState = 0x09,
  kNoResources = 0x0f,  // the device has run out of what the command allocates
  kBadInputLength = 0x50,
  kBadOutputLength = 0x51,
};

// Opcodes the device runs.
inline constexpr uint16_t kQueryHcaCap = 0x100;
inline constexpr uint16_t kCreateTir = 0x900;
inline constexpr uint16_t kCreateRqt = 0x916;
inline constexpr uint16_t kAllocFlowCounter = 0x939;
inline constexpr uint16_t kQueryFlowCounter = 0x93b;
inline constexpr uint16_t kAllocQueueCounter = 0x771;
inline constexpr uint16_t kQueryQueueCounter = 0x773;
inline constexpr uint16_t kCreateGeneralObject = 0xa00;
inline constexpr uint16_t kModifyGeneralObject = 0xa01;
inline constexpr uint16_t kQueryGeneralObject = 0xa02;
// The general object type (obj_type) of mlx5's GENEVE TLV option parser object.
inline constexpr uint16_t kObjTypeGeneveTlvOption = 0x0b;

// The fields every mailbox starts with.
namespace prm {
inline constexpr PrmField kOpcode{0x00, 16};
inline constexpr PrmField kVhcaTunnelId{0x20, 16};  // general objects' name; zero in other commands
inline constexpr PrmField kOpMod{0x30, 16};         // obj_type in the general-object commands
inline constexpr size_t kInHeaderBytes = 8;
inline constexpr PrmField kStatus{0x00, 8};
inline constexpr PrmField kSyndrome{0x20, 32};
inline constexpr size_t kOutHeaderBytes = 16;
}  // namespace prm

// How a command ended: done, or the errno the C call returns with what firmware would report.
struct Outcome {
  static constexpr uint16_t kNoField = 0xffff;

  int err = 0;  // 0: done
  PrmStatus status = PrmStatus::kOk;
  uint16_t culprit = kNoField;  // byte offset in the input of the field at fault
  std::string message;          // names the field and the value

  bool ok() const { return err == 0; }
};

Outcome Done();
// What the kernel refuses: EINVAL.
Outcome Refused(PrmStatus status, PrmField culprit, std::string message);
Outcome Refused(PrmStatus status, std::string message);
// What firmware fails: EREMOTEIO.
Outcome FirmwareError(PrmStatus status, PrmField culprit, std::string message);
// What the software NIC does not model: EOPNOTSUPP.
Outcome Unsupported(PrmStatus status, PrmField culprit, std::string message);
Outcome Unsupported(PrmStatus status, std::string message);

// A command's mailboxes, as the caller passed them (`out` is written, never past its end).
struct Mailbox {
  absl::Span<const uint8_t> in;
  absl::Span<uint8_t> out;
};

// Refused (BAD_INP_LEN) unless the input holds `field` (called `name` in the message).
Outcome RequireInput(const Mailbox& m, PrmField field, const char* name);
// Refused (BAD_OUTP_LEN) unless the output holds `bytes` bytes, what `what` needs.
Outcome RequireOutput(const Mailbox& m, size_t bytes, const char* what);

// The commands, by the call that hands them over. `fn` is the function the context belongs to; `obj` an
// object of a software NIC. RunCreateCommand sets *created to the new object when it is done.
Outcome RunGeneralCommand(const drsim_function_context& fn, Mailbox m);
Outcome RunCreateCommand(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created);
Outcome RunQueryCommand(mlx5dv_devx_obj& obj, Mailbox m);
Outcome RunModifyCommand(mlx5dv_devx_obj& obj, Mailbox m);

// "CREATE_TIR (0x900)", or "opcode 0x1234" for one drsim has no name for.
std::string DescribeOpcode(uint16_t opcode);
// What a DEVX object of the software NIC is, for messages ("flow counter bulk", "TIR", ...).
const char* DescribeDevxKind(capi::DevxKind kind);

// Writes a failed command's status and syndrome into `out` (as far as it reaches).
void WriteFailure(const Outcome& o, uint16_t opcode, absl::Span<uint8_t> out);

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_DEVX_COMMANDS_H_
