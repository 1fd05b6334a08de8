#include "testpmd/indirect_conntrack.h"

#include <infiniband/mlx5dv.h>

#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "sim/conntrack.h"
#include "testpmd/action_lowering.h"
#include "testpmd/context.h"
#include "testpmd/registers.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

// Ports that may own a CT object (MLX5_INDIRECT_ACT_CT_MAX_PORT).
constexpr uint16_t kMaxCtOwnerPort = 16;

// What the flow writes around its CT action that mlx5 refuses there: before it
// (flow_dv_validate_action_aso_ct's action_flags) a fate action (drop, queue, rss, jump:
// MLX5_FLOW_FATE_ACTIONS, which port_id and represented_port are not), an ASO action (meter, age, an indirect
// age) or an encap; after it a sample (flow_dv_validate_action_sample).
struct AroundCt {
  const Action* fate = nullptr;
  const Action* aso = nullptr;
  const Action* encap = nullptr;
  const Action* sample_after = nullptr;
};

// `c` is the flow as ActionLowering::AddCounting classified it, its indirect actions resolved by kind.
AroundCt ActionsAround(const Classified& c, const Action& ct) {
  AroundCt b;
  bool after = false;
  for (const Action& a : c.all) {
    if (&a == &ct) after = true;
    if (after) {
      if (a.def->type == ActionType::kSample && b.sample_after == nullptr) b.sample_after = &a;
      continue;
    }
    switch (a.def->type) {
      case ActionType::kDrop:
      case ActionType::kQueue:
      case ActionType::kRss:
      case ActionType::kJump:
        if (b.fate == nullptr) b.fate = &a;
        break;
      case ActionType::kMeter:
      case ActionType::kAge:
        if (b.aso == nullptr) b.aso = &a;
        break;
      case ActionType::kIndirect:
        if (&a == c.indirect_age && b.aso == nullptr) b.aso = &a;
        break;
      case ActionType::kVxlanEncap:
      case ActionType::kNvgreEncap:
      case ActionType::kRawEncap:
        if (b.encap == nullptr) b.encap = &a;
        break;
      default:
        break;
    }
  }
  return b;
}

// mlx5_validate_action_ct's checks, then the PRM's field widths.
absl::Status CheckProfile(const ConntrackProfile& p, const Action& origin) {
  if (static_cast<uint8_t>(p.context.state) >= sim::kCtStateCount) {
    return ActionError(origin, StatusCode::kInvalidArgument,
                       absl::StrFormat("Invalid CT state %d (set conntrack com ... state: 0..%d)",
                                       static_cast<int>(p.context.state), sim::kCtStateCount - 1));
  }
  if (p.context.last_index > sim::kCtIndexRst) {
    return ActionError(origin, StatusCode::kInvalidArgument,
                       absl::StrFormat("Invalid last TCP packet flag %d (set conntrack com ... last_index: "
                                       "0, 1, 2, 4, 8 or 16)",
                                       p.context.last_index));
  }
  const absl::Status fields = sim::CheckCtContext(p.context);
  if (!fields.ok()) return ActionError(origin, fields.code(), fields.message());
  return absl::OkStatus();
}

std::string FormatDirection(absl::string_view name, const sim::CtDirection& d) {
  return absl::StrFormat(
      "  %s Dir:\n    scale: %d, fin: %d, ack seen: %d\n unacked data: %d\n    Sent end: %u,    Reply end: "
      "%u, Max win: %u, Max ACK: %u\n",
      name, d.scale, d.close_initiated, d.last_ack_seen, d.data_unacked, d.sent_end, d.reply_end, d.max_win,
      d.max_ack);
}

class IndirectConntrack : public IndirectObject {
 public:
  IndirectConntrack(const ActionDef& def, sim::Nic& nic, uint32_t object, const ConntrackProfile& profile)
      : def_(def),
        nic_(nic),
        object_(object),
        peer_port_(profile.peer_port),
        original_(profile.is_original) {}
  ~IndirectConntrack() override { nic_.DestroyAsoObject(object_).IgnoreError(); }
  IndirectConntrack(const IndirectConntrack&) = delete;
  IndirectConntrack& operator=(const IndirectConntrack&) = delete;

  const ActionDef& def() const override { return def_; }

  // flow_dv_validate_action_aso_ct's checks, in its order, on the actions written before CT; then a sample
  // after CT (flow_dv_validate_action_sample). The DR action is made in the port's NIC_RX domain, as
  // flow_dv_aso_ct_alloc does, so DR refuses it in egress and transfer rules (Blame says why).
  absl::Status AddToRule(ActionLowering& lowering, const Classified& c, bool root, const Action& origin,
                         DrList* list) override {
    if (root) {
      return ActionError(origin, StatusCode::kUnimplemented,
                         "Only support non-root table (conntrack needs a group above 0)");
    }
    const AroundCt around = ActionsAround(c, origin);
    if (around.fate != nullptr) {
      return ActionError(
          origin, StatusCode::kUnimplemented,
          absl::StrFormat("CT cannot follow a fate action ('%s' at %d:%d)", around.fate->def->name,
                          around.fate->pos.line, around.fate->pos.column));
    }
    if (around.aso != nullptr) {
      return ActionError(
          origin, StatusCode::kInvalidArgument,
          absl::StrFormat("Only one ASO action is supported ('%s' at %d:%d, before CT, is one too)",
                          around.aso->def->name, around.aso->pos.line, around.aso->pos.column));
    }
    if (around.encap != nullptr) {
      return ActionError(origin, StatusCode::kInvalidArgument, "Encap cannot exist before CT");
    }
    if (lowering.info().outer.l4 != L4::kTcp) {
      return ActionError(origin, StatusCode::kInvalidArgument,
                         "Not a outer TCP packet (the pattern must match outer tcp)");
    }
    if (around.sample_after != nullptr) {
      return ActionError(*around.sample_after, StatusCode::kInvalidArgument,
                         absl::StrFormat("Sample after CT not supported (CT is at %d:%d)", origin.pos.line,
                                         origin.pos.column));
    }
    DRSIM_ASSIGN_OR_RETURN(const dr::Domain* rx, lowering.PortDomain(MLX5DV_DR_DOMAIN_TYPE_NIC_RX));
    const uint32_t flags = original_ ? MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_INITIATOR
                                     : MLX5DV_DR_ACTION_FLAGS_ASO_CT_DIRECTION_RESPONDER;
    absl::StatusOr<dr::Action> aso = dr::Action::Aso(*rx, object_, 0, flags, kMeterRegC);
    if (!aso.ok()) return lowering.Fail(aso.status(), &origin);
    list->Add(lowering.Own(*std::move(aso)), &origin);
    return absl::OkStatus();
  }

  absl::Status Query(sim::Nic& nic, CommandResult* result) const override {
    DRSIM_ASSIGN_OR_RETURN(const sim::CtContext ct, nic.QueryAsoConnTrack(object_, 0));
    result->conntrack = ct;
    result->text = absl::StrFormat(
        "Conntrack Context:\n  Peer: %d, Flow dir: %s, Enable: %d\n  Live: %d, SACK: %d, CACK: %d\n  Packet "
        "dir: %s, Liberal: %d, State: %d\n  Factor: %d, Retrans: %d, TCP flags: %d\n  Last Seq: %u, Last "
        "ACK: %u\n  Last Win: %d, Last End: %u\n",
        peer_port_, original_ ? "Original" : "Reply", ct.enable, ct.live_connection, ct.selective_ack,
        ct.challenge_ack_passed, ct.last_direction_original ? "Original" : "Reply",
        ct.original.liberal && ct.reply.liberal, static_cast<int>(ct.state), ct.max_ack_window,
        ct.retransmission_limit, ct.last_index, ct.last_seq, ct.last_ack, ct.last_window, ct.last_end);
    result->text += FormatDirection("Original", ct.original) + FormatDirection("Reply", ct.reply);
    return absl::OkStatus();
  }

  // conntrack_update dir: the direction from the profile; ctx: the context from the profile.
  absl::Status Update(EngineContext& ctx, const Action& action) override {
    if (action.def->type != ActionType::kConntrackUpdate) {
      return ActionError(action, StatusCode::kInvalidArgument,
                         "an indirect conntrack action is updated with conntrack_update [dir] [ctx]");
    }
    const bool dir = action.Find("dir") != nullptr, context = action.Find("ctx") != nullptr;
    if (context) {
      DRSIM_RETURN_IF_ERROR(CheckProfile(ctx.conntrack, action));
      const absl::Status s = nic_.ConfigureAsoConnTrack(object_, 0, ctx.conntrack.context);
      if (!s.ok()) return ActionError(action, s.code(), s.message());
    }
    if (dir) original_ = ctx.conntrack.is_original;
    return absl::OkStatus();
  }

 private:
  const ActionDef& def_;
  sim::Nic& nic_;
  uint32_t object_;
  uint16_t peer_port_;
  bool original_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<IndirectObject>> MakeIndirectConntrack(EngineContext& ctx, uint16_t port,
                                                                      const Action& action) {
  // mlx5 keeps the owner port in 4 bits of a CT handle (flow_dv_translate_create_conntrack).
  if (port >= kMaxCtOwnerPort) {
    return ActionError(
        action, StatusCode::kInvalidArgument,
        absl::StrFormat("CT supports port indexes up to MLX5_ACTION_CTX_CT_MAX_PORT (port %d: mlx5 "
                        "creates CT objects on ports 0..%d only, as a CT handle keeps its owner port "
                        "in 4 bits)",
                        port, kMaxCtOwnerPort - 1));
  }
  const ConntrackProfile& profile = ctx.conntrack;
  DRSIM_RETURN_IF_ERROR(CheckProfile(profile, action));
  absl::StatusOr<uint32_t> object = ctx.nic.CreateAsoObject(hw::AsoKind::kConnTrack, 0);
  if (!object.ok()) return ActionError(action, object.status().code(), object.status().message());
  const absl::Status s = ctx.nic.ConfigureAsoConnTrack(*object, 0, profile.context);
  if (!s.ok()) {
    ctx.nic.DestroyAsoObject(*object).IgnoreError();
    return ActionError(action, s.code(), s.message());
  }
  return std::make_shared<IndirectConntrack>(*action.def, ctx.nic, *object, profile);
}

}  // namespace drsim::testpmd
