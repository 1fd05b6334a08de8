// The legal orders of a rule's actions, as a table: for each action domain (pipe) and state, the action
// types allowed next and the state each leads to. Transcribed from the reference (section 4.2), which
// lists rdma-core's next_action_state table; anything not listed is an error (EOPNOTSUPP).
#include "actions/action_state_table.h"

#include <array>
#include <initializer_list>

namespace drsim::actions {
namespace {

using D = ActionDomain;
using S = ActionState;
using T = ActionType;

struct Transition {
  T type;
  S next;
};

struct Row {
  D domain;
  S from;
  std::initializer_list<Transition> transitions;
};

using Table = std::array<std::array<std::array<S, kNumActionTypes>, kNumActionStates>, kNumActionDomains>;

const Table& BuildTable() {
  static const Table* table = [] {
    auto* t = new Table{};  // every entry starts as S::kErr
    const Row rows[] = {
    // NIC_INGRESS
    {D::kNicIngress, S::kNoAction, {{T::kDrop, S::kTerm}, {T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kTag, S::kNonTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kTnlL2ToL2, S::kDecap}, {T::kTnlL3ToL2, S::kDecap}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kMiss, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kDecap, {{T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kTag, S::kDecap}, {T::kCtr, S::kDecap}, {T::kAsoFirstHit, S::kDecap}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kModifyHdr, S::kModifyHdr}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kModifyHdr, {{T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kTag, S::kModifyHdr}, {T::kCtr, S::kModifyHdr}, {T::kAsoFirstHit, S::kModifyHdr}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kPushVlan, S::kPushVlan}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kPopVlan, {{T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kTag, S::kPopVlan}, {T::kCtr, S::kPopVlan}, {T::kAsoFirstHit, S::kPopVlan}, {T::kPopVlan, S::kPopVlan}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kModifyHdr, S::kModifyHdr}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kPushVlan, {{T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kTag, S::kPushVlan}, {T::kCtr, S::kPushVlan}, {T::kAsoFirstHit, S::kPushVlan}, {T::kPushVlan, S::kPushVlan}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kNonTerm, {{T::kDrop, S::kTerm}, {T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kTag, S::kNonTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kTnlL2ToL2, S::kDecap}, {T::kTnlL3ToL2, S::kDecap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kMiss, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kAso, {{T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kCtr, S::kAso}, {T::kAsoFirstHit, S::kAso}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kEncap, {{T::kQp, S::kTerm}, {T::kFt, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kMeter, S::kTerm}, {T::kTag, S::kEncap}, {T::kCtr, S::kEncap}, {T::kAsoFirstHit, S::kAso}, {T::kRootFt, S::kTerm}}},
    {D::kNicIngress, S::kTerm, {{T::kCtr, S::kTerm}}},
    // NIC_EGRESS
    {D::kNicEgress, S::kNoAction, {{T::kDrop, S::kTerm}, {T::kFt, S::kTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kMeter, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPushVlan, S::kPushVlan}, {T::kPopVlan, S::kPopVlan}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kMiss, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kNicEgress, S::kEncap, {{T::kFt, S::kTerm}, {T::kCtr, S::kEncap}, {T::kAsoFirstHit, S::kEncap}, {T::kMeter, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kNicEgress, S::kModifyHdr, {{T::kFt, S::kTerm}, {T::kCtr, S::kModifyHdr}, {T::kAsoFirstHit, S::kModifyHdr}, {T::kMeter, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kPushVlan, S::kPushVlan}, {T::kRootFt, S::kTerm}}},
    {D::kNicEgress, S::kPopVlan, {{T::kFt, S::kTerm}, {T::kMeter, S::kTerm}, {T::kCtr, S::kPopVlan}, {T::kAsoFirstHit, S::kPopVlan}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kModifyHdr, S::kModifyHdr}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kNicEgress, S::kPushVlan, {{T::kFt, S::kTerm}, {T::kMeter, S::kTerm}, {T::kCtr, S::kPushVlan}, {T::kAsoFirstHit, S::kPushVlan}, {T::kPushVlan, S::kPushVlan}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kNicEgress, S::kNonTerm, {{T::kDrop, S::kTerm}, {T::kFt, S::kTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kMeter, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPushVlan, S::kPushVlan}, {T::kPopVlan, S::kPopVlan}, {T::kMiss, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kRootFt, S::kTerm}}},
    {D::kNicEgress, S::kAso, {{T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPushVlan, S::kPushVlan}, {T::kCtr, S::kAso}, {T::kAsoFirstHit, S::kAso}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kDrop, S::kTerm}, {T::kFt, S::kTerm}, {T::kMiss, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kNicEgress, S::kTerm, {{T::kCtr, S::kTerm}}},
    // FDB_INGRESS
    {D::kFdbIngress, S::kNoAction, {{T::kDrop, S::kTerm}, {T::kFt, S::kTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kTnlL2ToL2, S::kDecap}, {T::kTnlL3ToL2, S::kDecap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kVport, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kMiss, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kFdbIngress, S::kDecap, {{T::kFt, S::kTerm}, {T::kCtr, S::kDecap}, {T::kAsoFirstHit, S::kDecap}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kModifyHdr, S::kModifyHdr}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kVport, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kFdbIngress, S::kEncap, {{T::kFt, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kVport, S::kTerm}, {T::kMeter, S::kTerm}, {T::kCtr, S::kEncap}, {T::kAsoFirstHit, S::kAso}, {T::kRootFt, S::kTerm}}},
    {D::kFdbIngress, S::kModifyHdr, {{T::kFt, S::kTerm}, {T::kCtr, S::kModifyHdr}, {T::kAsoFirstHit, S::kModifyHdr}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kVport, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kPushVlan, S::kPushVlan}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kFdbIngress, S::kPopVlan, {{T::kFt, S::kTerm}, {T::kPopVlan, S::kPopVlan}, {T::kCtr, S::kPopVlan}, {T::kAsoFirstHit, S::kPopVlan}, {T::kVport, S::kTerm}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kModifyHdr, S::kModifyHdr}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kFdbIngress, S::kPushVlan, {{T::kFt, S::kTerm}, {T::kPushVlan, S::kPushVlan}, {T::kCtr, S::kPushVlan}, {T::kAsoFirstHit, S::kPushVlan}, {T::kVport, S::kTerm}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}, {T::kAsoCt, S::kAso}}},
    {D::kFdbIngress, S::kNonTerm, {{T::kDrop, S::kTerm}, {T::kFt, S::kTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kTnlL2ToL2, S::kDecap}, {T::kTnlL3ToL2, S::kDecap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kVport, S::kTerm}, {T::kMiss, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kRootFt, S::kTerm}}},
    {D::kFdbIngress, S::kAso, {{T::kVport, S::kTerm}, {T::kFt, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kCtr, S::kAso}, {T::kAsoFirstHit, S::kAso}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kRootFt, S::kTerm}}},
    {D::kFdbIngress, S::kTerm, {{T::kCtr, S::kTerm}}},
    // FDB_EGRESS
    {D::kFdbEgress, S::kNoAction, {{T::kDrop, S::kTerm}, {T::kFt, S::kTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kModifyHdr, S::kModifyHdr}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kPushVlan, S::kPushVlan}, {T::kPopVlan, S::kPopVlan}, {T::kVport, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kMiss, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kFdbEgress, S::kEncap, {{T::kFt, S::kTerm}, {T::kCtr, S::kEncap}, {T::kAsoFirstHit, S::kEncap}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kVport, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kFdbEgress, S::kModifyHdr, {{T::kFt, S::kTerm}, {T::kCtr, S::kModifyHdr}, {T::kAsoFirstHit, S::kModifyHdr}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kPushVlan, S::kPushVlan}, {T::kVport, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kFdbEgress, S::kPopVlan, {{T::kFt, S::kTerm}, {T::kMeter, S::kTerm}, {T::kCtr, S::kPopVlan}, {T::kAsoFirstHit, S::kPopVlan}, {T::kPopVlan, S::kPopVlan}, {T::kPushVlan, S::kPushVlan}, {T::kModifyHdr, S::kModifyHdr}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kVport, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kFdbEgress, S::kPushVlan, {{T::kFt, S::kTerm}, {T::kPushVlan, S::kPushVlan}, {T::kCtr, S::kPushVlan}, {T::kAsoFirstHit, S::kPushVlan}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kVport, S::kTerm}, {T::kRootFt, S::kTerm}}},
    {D::kFdbEgress, S::kNonTerm, {{T::kDrop, S::kTerm}, {T::kFt, S::kTerm}, {T::kCtr, S::kNonTerm}, {T::kAsoFirstHit, S::kNonTerm}, {T::kModifyHdr, S::kModifyHdr}, {T::kMeter, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kPushVlan, S::kPushVlan}, {T::kPopVlan, S::kPopVlan}, {T::kVport, S::kTerm}, {T::kMiss, S::kTerm}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kRootFt, S::kTerm}}},
    {D::kFdbEgress, S::kAso, {{T::kL2ToTnlL2, S::kEncap}, {T::kL2ToTnlL3, S::kEncap}, {T::kModifyHdr, S::kModifyHdr}, {T::kPushVlan, S::kPushVlan}, {T::kVport, S::kTerm}, {T::kFt, S::kTerm}, {T::kSampler, S::kTerm}, {T::kDestArray, S::kTerm}, {T::kCtr, S::kAso}, {T::kAsoFirstHit, S::kAso}, {T::kAsoFlowMeter, S::kAso}, {T::kAsoCt, S::kAso}, {T::kRootFt, S::kTerm}}},
    {D::kFdbEgress, S::kTerm, {{T::kCtr, S::kTerm}}},
    };
    for (const Row& row : rows) {
      for (const Transition& tr : row.transitions) {
        (*t)[static_cast<int>(row.domain)][static_cast<int>(row.from)][static_cast<int>(tr.type)] = tr.next;
      }
    }
    return t;
  }();
  return *table;
}

}  // namespace

ActionState NextActionState(ActionDomain domain, ActionState state, ActionType type) {
  return BuildTable()[static_cast<int>(domain)][static_cast<int>(state)][static_cast<int>(type)];
}

}  // namespace drsim::actions
