// Action programs: a rule's actions compiled for one pipe of its domain, as the device executes them —
// a list of header operations in the pipe's fixed hardware order, then one destination. rdma-core
// packs actions into steering entries in that order (dr_ste_v1_set_actions_rx/tx), so the order the
// user listed them in does not matter once the list is legal.
//
// A rule record holds one program per pipe: RX (NIC_RX domains, and FDB traffic from the wire) and TX
// (NIC_TX domains, and FDB traffic from vports). Data an op refers to (modify-header actions, reformat
// bytes) belongs to the action objects, which outlive every rule using them.
#ifndef DRSIM_HW_ACTION_PROGRAM_H_
#define DRSIM_HW_ACTION_PROGRAM_H_

#include <cstdint>
#include <vector>

#include "hw/modify_header.h"

namespace drsim::hw {

struct FlowTable;

enum class OpCode : uint8_t {
  kDecapL2,       // remove the outer headers up to the inner Ethernet header
  kDecapL3,       // remove the outer headers up to the inner IP header, then prepend `bytes` as its L2
  kTag,           // arg: the 24-bit flow tag
  kPopVlan,       // remove the first VLAN tag
  kModifyHeader,  // run `modify`, in order
  kPushVlan,      // arg: TPID << 16 | TCI, inserted after the MAC addresses
  kCounter,       // arg: the flow counter id
  kEncapL2,       // prepend `bytes` (a whole outer header stack from Ethernet)
  kEncapL3,       // remove the L2 header, prepend `bytes` (outer headers; the inner packet starts at L3)
};

struct Op {
  OpCode code;
  uint32_t arg = 0;
  const std::vector<ModifyAction>* modify = nullptr;
  const std::vector<uint8_t>* bytes = nullptr;
};

// Where a rule sends a packet. kNone (no terminating action) and kDefaultMiss both take the domain default.
enum class Destination : uint8_t { kNone, kDefaultMiss, kDrop, kQueue, kTable, kVport };

inline constexpr uint16_t kWireVport = 0xffff;  // dest vport 0xffff: the uplink

struct ActionProgram {
  std::vector<Op> ops;  // in execution order
  Destination destination = Destination::kNone;
  uint32_t queue = 0;                // kQueue: the receive queue's QP number
  const FlowTable* table = nullptr;  // kTable: the table the walk continues in
  uint16_t vport = 0;                // kVport: vport number, or kWireVport
};

enum Pipe : int { kRxPipe = 0, kTxPipe = 1 };

// What a match-table hit yields.
struct RuleRecord {
  ActionProgram program[2];  // by Pipe; a NIC_RX rule has only RX, a NIC_TX rule only TX
  uint32_t rule_id = 0;      // the driver's id, reported in traces
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_ACTION_PROGRAM_H_
