// Action programs: a rule's actions compiled for one pipe of its domain, as the device executes them —
// a list of header operations in the pipe's fixed hardware order, then one destination. rdma-core
// packs actions into steering entries in that order (dr_ste_v1_set_actions_rx/tx), so the order the
// user listed them in does not matter once the list is legal.
//
// A rule has one program per pipe: RX (NIC_RX domains, and FDB traffic from the wire) and TX (NIC_TX
// domains, and FDB traffic from vports). Data an op refers to (modify-header actions, reformat
// bytes) belongs to the action objects, which outlive every rule using them.
#ifndef DRSIM_HW_ACTION_PROGRAM_H_
#define DRSIM_HW_ACTION_PROGRAM_H_

#include <array>
#include <cstdint>
#include <vector>

#include "hw/modify_header.h"

namespace drsim::hw {

struct FlowTable;

enum class OpCode : uint8_t {
  kDecapL2,       // remove the outer headers up to the inner Ethernet header
  kDecapL3,       // remove the outer headers up to the inner IP header, then prepend `bytes` as its L2
  kTag,           // arg: the 24-bit flow tag
  kTagOfRule,     // the flow tag the hit rule's record carries (RuleRecord::tag)
  kPopVlan,       // remove the first VLAN tag
  kModifyHeader,  // run `modify`, in order
  kPushVlan,      // arg: TPID << 16 | TCI, inserted after the MAC addresses
  kCounter,       // arg: the flow counter id
  kEncapL2,       // prepend `bytes` (a whole outer header stack from Ethernet)
  kEncapL3,       // remove the L2 header, prepend `bytes` (outer headers; the inner packet starts at L3)
  kAsoFlowMeter,  // arg: the ASO meter (object id << 1 | line); color written to reg_c[reg]
  kAsoFirstHit,   // arg: the ASO first-hit context; result written to reg_c[reg]; set: mark it hit
  kAsoConnTrack,  // arg: the ASO CT context; packet state to the low byte of reg_c[reg]; set: initiator
};

struct Op {
  OpCode code;
  uint32_t arg = 0;
  const ModifyProgram* modify = nullptr;
  const std::vector<uint8_t>* bytes = nullptr;
  uint8_t reg = 0;            // kAso*: the reg_c the result goes to
  bool set = false;           // kAsoFirstHit: mark the context hit; kAsoConnTrack: the initiator's side
  uint8_t initial_color = 2;  // kAsoFlowMeter: the packet's colour before metering (2, green: colour blind)
};

// Where a rule sends a packet. kNone (no terminating action) and kDefaultMiss both take the domain default.
enum class Destination : uint8_t {
  kNone,
  kDefaultMiss,
  kDrop,
  kQueue,      // a receive queue
  kTir,        // a TIR: RSS over its queues
  kTable,      // continue in `table`
  kRootTable,  // continue in the domain's merged root: a program from its bypass matchers of priority
               // >= `root_priority` (RootRank(kBypass, root_priority)); a replica from rank `root_rank`
  kVport,      // FDB: a vport (or the uplink)
  kMeter,      // colour with `meter` into reg_c[meter_reg], then continue in `table`
  kSampler,    // copy 1 in N to `sample`, continue in `table`
  kReplicate,  // dest array: a copy to each of `replicas`
};

inline constexpr uint16_t kWireVport = 0xffff;  // dest vport 0xffff: the uplink

// One destination of a dest array or of a kernel flow-table entry (dr/kernel_steering.h), or the sample
// path of a sampler: operations on the copy, then where it goes (kNone: nowhere — a counter-only entry).
struct Replica {
  std::vector<Op> ops;
  Destination destination = Destination::kNone;
  uint32_t queue = 0;
  uint32_t tir = 0;
  const FlowTable* table = nullptr;
  uint16_t vport = 0;
  uint32_t root_rank = 0;  // kRootTable (kernel entries only): the merged root from this RootRank on
};

struct ActionProgram {
  std::vector<Op> ops;  // in execution order
  Destination destination = Destination::kNone;
  uint32_t queue = 0;                              // kQueue: the receive queue's QP number
  uint32_t tir = 0;                                // kTir
  const FlowTable* table = nullptr;                // kTable; kMeter, kSampler: the next table
  uint16_t vport = 0;                              // kVport: vport number, or kWireVport
  uint16_t root_priority = 0;                      // kRootTable
  uint32_t meter = 0;                              // kMeter: the device's meter
  uint8_t meter_reg = 0;                           // kMeter: reg_c index receiving the colour
  uint32_t sampler = 0;                            // kSampler: the device's sampler (its 1-in-N count)
  const Replica* sample = nullptr;                 // kSampler
  const std::vector<Replica>* replicas = nullptr;  // kReplicate
};

enum Pipe : int { kRxPipe = 0, kTxPipe = 1 };

// A rule's programs, by Pipe; a NIC_RX rule has only RX, a NIC_TX rule only TX. Rules with the same
// actions may share one (immutable once a rule uses it).
using PipePrograms = std::array<ActionProgram, 2>;

// What a program does at a glance, for the data path's shortcuts: send the frame on with no header
// operations (destination kNone, kDefaultMiss, kDrop, kQueue, kTir or kVport), only jump to a table (no
// ops, kTable), or anything else.
enum class ProgramShape : uint8_t { kOther, kSendsOn, kOnlyJumps };

ProgramShape ShapeOf(const ActionProgram& program);

// What a match-table hit yields. The match table keeps it in the record beside the key, so a hit costs
// no further line than the record's (the programs are shared, and usually in cache); the shapes of the
// programs ride along, so the data path picks its way without loading them. So does the rule's flow tag,
// as mlx5 writes it into the rule's own entry: rules whose actions differ only in their tag share programs,
// whose kTagOfRule op reads it here.
struct RuleRecord {
  const PipePrograms* programs = nullptr;
  uint32_t rule_id = 0;  // the driver's id, reported in traces
  // By Pipe, two bits each from bit 0: ShapeOf(*programs)[pipe] (kOther: the walk decides); from bit 8 the
  // 24-bit flow tag.
  uint32_t shapes_and_tag = 0;

  // The record of rule `rule_id` running `programs`, which must not change while it is installed.
  static RuleRecord Of(const PipePrograms* programs, uint32_t rule_id) {
    return {programs, rule_id,
            static_cast<uint32_t>(ShapeOf((*programs)[kRxPipe])) |
                static_cast<uint32_t>(ShapeOf((*programs)[kTxPipe])) << 2};
  }
  const ActionProgram& program(Pipe pipe) const { return (*programs)[pipe]; }
  ProgramShape shape(Pipe pipe) const { return static_cast<ProgramShape>(shapes_and_tag >> (2 * pipe) & 3); }
  uint32_t tag() const { return shapes_and_tag >> 8; }
  // Keeps the low 24 bits of `tag`, as a flow tag has.
  void set_tag(uint32_t tag) { shapes_and_tag = (shapes_and_tag & 0xff) | tag << 8; }
};
static_assert(sizeof(RuleRecord) == 16, "a match table's record holds one beside its key");

}  // namespace drsim::hw

#endif  // DRSIM_HW_ACTION_PROGRAM_H_
