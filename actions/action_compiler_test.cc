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
  s.table_domain = &kDomainA;
  s.queue_device = &kDevice;
  return s;
}

absl::StatusOr<hw::ActionProgram> Compile(mlx5dv_dr_domain_type type, std::vector<ActionSpec> specs) {
  std::vector<const ActionSpec*> ptrs;
  for (const ActionSpec& s : specs) ptrs.push_back(&s);
  return CompileActions({type, &kDomainA, &kDevice}, ptrs);
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
      if (next != ActionState::kErr) EXPECT_EQ(next == ActionState::kTerm, IsTerminating(type)) << t;
    }
  }
}

TEST(ActionCompilerTest, ProgramIsIndependentOfListOrder) {
  ActionSpec tag = Spec(T::kTag);
  tag.tag = 0x123;
  ActionSpec qp = Spec(T::kQp);
  qp.qp_num = 7;
  absl::StatusOr<hw::ActionProgram> p = Compile(kRx, {tag, qp});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->set_tag);
  EXPECT_EQ(p->tag, 0x123u);
  EXPECT_EQ(p->destination, hw::Destination::kQueue);
  EXPECT_EQ(p->queue, 7u);

  absl::StatusOr<hw::ActionProgram> none = Compile(kRx, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->destination, hw::Destination::kNone);
  EXPECT_FALSE(none->set_tag);
}

TEST(ActionCompilerTest, StateMachineRejectionsNameTheAction) {
  ExpectError(Compile(kRx, {Spec(T::kQp), Spec(T::kTag)}).status(), absl::StatusCode::kUnimplemented,
              "action[1] (tag) cannot follow action[0] (dest_ibv_qp) in a NIC_RX domain (only flow_counter");
  EXPECT_TRUE(Compile(kRx, {Spec(T::kQp), Spec(T::kCtr)}).status().code() !=
              absl::StatusCode::kInvalidArgument);  // legal order; counters execute in a later issue
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
  qp.queue_device = &kOtherDevice;
  ExpectError(Compile(kRx, {qp}).status(), absl::StatusCode::kInvalidArgument,
              "action[0] (dest_ibv_qp): the queue belongs to another device");
}

TEST(ActionCompilerTest, DestinationTableMustShareTheDomain) {
  ActionSpec ft = Spec(T::kFt);
  ft.table_domain = &kDomainB;
  ExpectError(Compile(kRx, {ft}).status(), absl::StatusCode::kInvalidArgument,
              "action[0] (dest_table): the destination table belongs to another domain");
}

}  // namespace
}  // namespace drsim::actions
