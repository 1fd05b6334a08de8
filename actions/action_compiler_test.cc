#include "actions/action_compiler.h"

#include <string>
#include <vector>

#include "actions/action_state_table.h"
#include "gtest/gtest.h"

namespace drsim::actions {
namespace {

int kDomainA, kDomainB, kDevice, kOtherDevice;  // identities

ActionSpec Spec(ActionType t) {
  ActionSpec s;
  s.type = t;
  s.domain = &kDomainA;
  s.device = &kDevice;
  return s;
}

absl::StatusOr<std::array<hw::ActionProgram, 2>> Compile(mlx5dv_dr_domain_type type,
                                                         std::vector<ActionSpec> specs, bool root = false) {
  std::vector<const ActionSpec*> ptrs;
  for (const ActionSpec& s : specs) ptrs.push_back(&s);
  RuleContext rule;
  rule.domain_type = type;
  rule.domain = &kDomainA;
  rule.device = &kDevice;
  rule.root_table = root;
  return CompileActions(rule, ptrs);
}

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(needle), absl::string_view::npos) << "'" << needle << "' not in: " << s;
}

constexpr auto kRx = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
constexpr auto kTx = MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
constexpr auto kFdb = MLX5DV_DR_DOMAIN_TYPE_FDB;
using T = ActionType;

TEST(ActionStateTableTest, OnlyACounterFollowsATerminatingAction) {
  for (int d = 0; d < kNumActionDomains; ++d) {
    for (int t = 0; t < kNumActionTypes; ++t) {
      ActionState next =
          NextActionState(static_cast<ActionDomain>(d), ActionState::kTerm, static_cast<ActionType>(t));
      EXPECT_EQ(next, static_cast<ActionType>(t) == T::kCtr ? ActionState::kTerm : ActionState::kErr)
          << ActionDomainName(static_cast<ActionDomain>(d)) << " "
          << ActionTypeName(static_cast<ActionType>(t));
    }
  }
}

TEST(ActionStateTableTest, TerminatingActionsLeadToTerm) {
  for (int d = 0; d < kNumActionDomains; ++d) {
    for (int t = 0; t < kNumActionTypes; ++t) {
      auto type = static_cast<ActionType>(t);
      ActionState next = NextActionState(static_cast<ActionDomain>(d), ActionState::kNoAction, type);
      if (next != ActionState::kErr) {
        EXPECT_EQ(next == ActionState::kTerm, IsTerminating(type)) << t;
      }
    }
  }
}

TEST(ActionCompilerTest, ProgramIsIndependentOfListOrder) {
  ActionSpec tag = Spec(T::kTag);
  tag.tag = 0x123;
  ActionSpec qp = Spec(T::kQp);
  qp.qp_num = 7;
  ActionSpec ctr = Spec(T::kCtr);
  ctr.counter_id = 9;
  absl::StatusOr<std::array<hw::ActionProgram, 2>> p = Compile(kRx, {ctr, tag, qp});
  ASSERT_TRUE(p.ok()) << p.status();
  const hw::ActionProgram& rx = (*p)[hw::kRxPipe];
  ASSERT_EQ(rx.ops.size(), 2u);
  EXPECT_EQ(rx.ops[0].code, hw::OpCode::kTag);  // RX order: tag before counter
  EXPECT_EQ(rx.ops[0].arg, 0x123u);
  EXPECT_EQ(rx.ops[1].code, hw::OpCode::kCounter);
  EXPECT_EQ(rx.ops[1].arg, 9u);
  EXPECT_EQ(rx.destination, hw::Destination::kQueue);
  EXPECT_EQ(rx.queue, 7u);
  EXPECT_TRUE((*p)[hw::kTxPipe].ops.empty());  // NIC_RX has no TX pipe

  absl::StatusOr<std::array<hw::ActionProgram, 2>> none = Compile(kRx, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ((*none)[hw::kRxPipe].destination, hw::Destination::kNone);
  EXPECT_TRUE((*none)[hw::kRxPipe].ops.empty());
}

TEST(ActionCompilerTest, StateMachineRejectionsNameTheAction) {
  ExpectError(Compile(kRx, {Spec(T::kQp), Spec(T::kTag)}).status(), absl::StatusCode::kUnimplemented,
              "action[1] (tag) cannot follow action[0] (dest_ibv_qp) in a NIC_RX domain (only flow_counter");
  EXPECT_TRUE(Compile(kRx, {Spec(T::kQp), Spec(T::kCtr)}).ok());
  ExpectError(Compile(kTx, {Spec(T::kTag)}).status(), absl::StatusCode::kUnimplemented,
              "action[0] (tag) is not allowed in a NIC_TX domain");
  ExpectError(Compile(kTx, {Spec(T::kQp)}).status(), absl::StatusCode::kUnimplemented,
              "action[0] (dest_ibv_qp) is not allowed in a NIC_TX domain");
  ExpectError(Compile(kFdb, {Spec(T::kQp)}).status(), absl::StatusCode::kUnimplemented, "FDB (RX pipe");
  ExpectError(Compile(kRx, {Spec(T::kDrop), Spec(T::kMiss)}).status(), absl::StatusCode::kUnimplemented,
              "action[1] (default_miss) cannot follow action[0] (drop)");
  ExpectError(Compile(kRx, {Spec(T::kModifyHdr), Spec(T::kDrop)}).status(), absl::StatusCode::kUnimplemented,
              "action[1] (drop) cannot follow action[0] (modify_header)");
  EXPECT_TRUE(Compile(kTx, {Spec(T::kMiss)}).ok());
  EXPECT_TRUE(Compile(kFdb, {Spec(T::kDrop)}).ok());
}

TEST(ActionCompilerTest, MultiplicityIsCheckedBeforeOrder) {
  ExpectError(Compile(kRx, {Spec(T::kTag), Spec(T::kTag)}).status(), absl::StatusCode::kInvalidArgument,
              "action[1] (tag): a rule takes at most 1 tag action");
  ExpectError(Compile(kRx, {Spec(T::kDrop), Spec(T::kDrop)}).status(), absl::StatusCode::kInvalidArgument,
              "action[1] (drop)");
  ExpectError(Compile(kTx, {Spec(T::kPushVlan), Spec(T::kPushVlan), Spec(T::kPushVlan)}).status(),
              absl::StatusCode::kUnimplemented, "action[2] (push_vlan): a rule pushes at most 2 VLAN tags");
  ExpectError(Compile(kRx, {Spec(T::kPopVlan), Spec(T::kPopVlan), Spec(T::kPopVlan)}).status(),
              absl::StatusCode::kInvalidArgument, "action[2] (pop_vlan): a rule takes at most 2");
}

TEST(ActionCompilerTest, QueueMustBelongToTheDomainsDevice) {
  ActionSpec qp = Spec(T::kQp);
  qp.device = &kOtherDevice;
  ExpectError(Compile(kRx, {qp}).status(), absl::StatusCode::kInvalidArgument,
              "action[0] (dest_ibv_qp): the queue belongs to another device");
}

TEST(ActionCompilerTest, RootTablesTakeTheKernelPath) {
  // No state machine on root tables: a tag after the destination is fine there...
  EXPECT_TRUE(Compile(kRx, {Spec(T::kQp), Spec(T::kTag)}, /*root=*/true).ok());
  // ...but only the kernel's action types, one destination, and ROOT_LEVEL reformat/modify.
  ExpectError(Compile(kRx, {Spec(T::kPopVlan)}, true).status(), absl::StatusCode::kUnimplemented,
              "action[0] (pop_vlan) is not supported on root (level 0) tables");
  ExpectError(Compile(kRx, {Spec(T::kQp), Spec(T::kDrop)}, true).status(), absl::StatusCode::kInvalidArgument,
              "action[1] (drop): a root-table rule takes one destination");
  ExpectError(Compile(kTx, {Spec(T::kModifyHdr)}, true).status(), absl::StatusCode::kInvalidArgument,
              "needs actions created with ROOT_LEVEL");
  ActionSpec root_modify = Spec(T::kModifyHdr);
  root_modify.root_level = true;
  EXPECT_TRUE(Compile(kTx, {root_modify}, true).ok());
  ExpectError(Compile(kTx, {root_modify}).status(), absl::StatusCode::kInvalidArgument,
              "can only be used on a root (level 0) table");
}

TEST(ActionCompilerTest, OperationsRunInThePipesFixedOrder) {
  ActionSpec push = Spec(T::kPushVlan);
  push.vlan_header = 0x81000005;
  ActionSpec encap = Spec(T::kL2ToTnlL2);
  ActionSpec ctr = Spec(T::kCtr);
  ActionSpec modify = Spec(T::kModifyHdr);
  ActionSpec pop = Spec(T::kPopVlan);
  absl::StatusOr<std::array<hw::ActionProgram, 2>> p = Compile(kTx, {pop, modify, push, encap, ctr});
  ASSERT_TRUE(p.ok()) << p.status();
  std::vector<hw::OpCode> codes;
  for (const hw::Op& op : (*p)[hw::kTxPipe].ops) codes.push_back(op.code);
  EXPECT_EQ(codes,
            (std::vector<hw::OpCode>{hw::OpCode::kPopVlan, hw::OpCode::kCounter, hw::OpCode::kModifyHeader,
                                     hw::OpCode::kPushVlan, hw::OpCode::kEncapL2}));
  // FDB: one program per pipe; a vport destination to the wire from the RX pipe becomes a drop.
  ActionSpec wire = Spec(T::kVport);
  wire.vport = hw::kWireVport;
  p = Compile(kFdb, {ctr, wire});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[hw::kRxPipe].destination, hw::Destination::kDrop);
  EXPECT_EQ((*p)[hw::kTxPipe].destination, hw::Destination::kVport);
  EXPECT_EQ((*p)[hw::kTxPipe].vport, hw::kWireVport);
}

TEST(ActionCompilerTest, FdbRulesSkipPipesBySourcePort) {
  // Decap is legal only on the FDB RX pipe: a rule for wire traffic only (skip_tx) may use it.
  RuleContext rule;
  rule.domain_type = kFdb;
  rule.domain = &kDomainA;
  rule.device = &kDevice;
  ActionSpec decap = Spec(T::kTnlL2ToL2), drop = Spec(T::kDrop);
  std::vector<const ActionSpec*> list = {&decap, &drop};
  EXPECT_EQ(CompileActions(rule, list).status().code(), absl::StatusCode::kUnimplemented);
  ActionSpec vport = Spec(T::kVport);
  vport.vport = 1;
  list = {&decap, &vport};
  ExpectError(CompileActions(rule, list).status(), absl::StatusCode::kUnimplemented, "FDB (TX pipe");
  rule.skip_tx = true;
  absl::StatusOr<std::array<hw::ActionProgram, 2>> p = CompileActions(rule, list);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)[hw::kRxPipe].ops.size(), 1u);
  EXPECT_EQ((*p)[hw::kTxPipe].destination, hw::Destination::kNone);
}

TEST(ActionCompilerTest, DestinationTableMustShareTheDomain) {
  ActionSpec ft = Spec(T::kFt);
  ft.domain = &kDomainB;
  ExpectError(Compile(kRx, {ft}).status(), absl::StatusCode::kInvalidArgument,
              "action[0] (dest_table): the destination table belongs to another domain");
}

}  // namespace
}  // namespace drsim::actions
