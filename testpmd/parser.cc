#include "testpmd/parser.h"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "testpmd/parse_elements.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

// The command must end here.
absl::Status ExpectEnd(const Cursor& c) { return c.AtEnd() ? absl::OkStatus() : c.Expected("end of line"); }

// Each Parse* below parses the rest of one kind of command into `out`. Structural errors are returned;
// errors inside pattern and action lists are appended to `errors` (and `out` is then incomplete).

// The rule of `out`'s command of type T (made when `out` holds another command), reset but for its lists,
// left for ParseList to parse into (which keeps their room).
template <typename T>
FlowRule& ReusedRule(CommandBody* out) {
  T* cmd = std::get_if<T>(out);
  if (cmd == nullptr) cmd = &out->template emplace<T>();
  ResetAllBut(&cmd->rule, &FlowRule::pattern, &FlowRule::actions);
  return cmd->rule;
}

absl::Status ParseFlowRule(Cursor& c, std::vector<absl::Status>* errors, FlowRule* rule) {
  DRSIM_ASSIGN_OR_RETURN(const Token* port, c.Next("a port id"));
  DRSIM_ASSIGN_OR_RETURN(uint64_t port_id, ParseUnsigned(*port, 16, "the port id"));
  rule->port = static_cast<uint16_t>(port_id);
  rule->port_pos = port->pos;
  while (!c.PeekIs("pattern")) {
    if (c.PeekIs("group") || c.PeekIs("priority")) {
      const Token& attr = c.Take();
      DRSIM_ASSIGN_OR_RETURN(uint32_t value, Number<uint32_t>(c, 32, absl::StrCat("the ", attr.text)));
      (attr.text == "group" ? rule->attr.group : rule->attr.priority) = value;
      (attr.text == "group" ? rule->attr.group_pos : rule->attr.priority_pos) = attr.pos;
    } else if (c.PeekIs("ingress")) {
      c.Take();
      rule->attr.ingress = true;
    } else if (c.PeekIs("egress")) {
      c.Take();
      rule->attr.egress = true;
    } else if (c.PeekIs("transfer")) {
      c.Take();
      rule->attr.transfer = true;
    } else if (c.PeekIs("user_id")) {
      c.Take();
      DRSIM_ASSIGN_OR_RETURN(rule->attr.user_id, Number<uint64_t>(c, 64, "the user_id"));
    } else {
      return c.Expected("group, priority, ingress, egress, transfer, user_id or pattern");
    }
  }
  rule->pattern_pos = c.Take().pos;
  if (!ParseList<Item>(c, "end", {"actions"}, ParseItem, &rule->pattern, errors)) return absl::OkStatus();
  if (!c.PeekIs("actions")) return c.Expected("'actions'");
  rule->actions_pos = c.Take().pos;
  if (!ParseList<Action>(c, "end", {}, ParseAction, &rule->actions, errors)) return absl::OkStatus();
  return ExpectEnd(c);
}

// flow aged PORT [destroy]
absl::Status ParseFlowAged(Cursor& c, CommandBody* out) {
  FlowAgedCmd cmd;
  DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
  if (c.PeekIs("destroy")) {
    c.Take();
    cmd.destroy = true;
  }
  DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
  *out = cmd;
  return absl::OkStatus();
}

// The `action ACTION / end` of an indirect action's create or update.
absl::Status ParseIndirectActionSpec(Cursor& c, std::vector<absl::Status>* errors, IndirectActionCmd* cmd) {
  if (!c.PeekIs("action")) return c.Expected("'action'");
  cmd->action_pos = c.Take().pos;
  if (!ParseList<Action>(c, "end", {}, ParseAction, &cmd->actions, errors)) return absl::OkStatus();
  if (cmd->actions.size() != 1) {
    return ErrorAt(
        cmd->action_pos, StatusCode::kInvalidArgument,
        absl::StrFormat("an indirect action is one action, found %d before 'end'", cmd->actions.size()));
  }
  return ExpectEnd(c);
}

// flow indirect_action PORT create|update|destroy|query ...
absl::Status ParseIndirectAction(Cursor& c, std::vector<absl::Status>* errors, CommandBody* out) {
  IndirectActionCmd cmd;
  DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
  constexpr absl::string_view ops = "create, update, destroy or query after the port";
  DRSIM_ASSIGN_OR_RETURN(const Token* op, c.Next(ops));
  auto id = [&](absl::string_view what) -> absl::Status {
    DRSIM_ASSIGN_OR_RETURN(const Token* t, c.Next(what));
    DRSIM_ASSIGN_OR_RETURN(uint64_t v, ParseUnsigned(*t, 32, what));
    cmd.ids.push_back(static_cast<uint32_t>(v));
    if (!cmd.id_pos.known()) cmd.id_pos = t->pos;
    return absl::OkStatus();
  };
  if (op->text == "create") {
    cmd.op = IndirectActionCmd::Op::kCreate;
    while (!c.PeekIs("action")) {
      if (c.PeekIs("action_id")) {
        if (!cmd.ids.empty()) return c.Expected("one action_id");
        c.Take();
        DRSIM_RETURN_IF_ERROR(id("the indirect action id"));
      } else if (c.PeekIsAny({"ingress", "egress", "transfer"})) {
        const Token& t = c.Take();
        (t.text == "ingress" ? cmd.ingress : t.text == "egress" ? cmd.egress : cmd.transfer) = true;
      } else {
        return c.Expected("action_id, ingress, egress, transfer or action");
      }
    }
    DRSIM_RETURN_IF_ERROR(ParseIndirectActionSpec(c, errors, &cmd));
  } else if (op->text == "update") {
    cmd.op = IndirectActionCmd::Op::kUpdate;
    DRSIM_RETURN_IF_ERROR(id("the indirect action id"));
    DRSIM_RETURN_IF_ERROR(ParseIndirectActionSpec(c, errors, &cmd));
  } else if (op->text == "destroy") {
    cmd.op = IndirectActionCmd::Op::kDestroy;
    do {
      DRSIM_RETURN_IF_ERROR(c.Expect("action_id"));
      DRSIM_RETURN_IF_ERROR(id("the indirect action id"));
    } while (!c.AtEnd());
  } else if (op->text == "query") {
    cmd.op = IndirectActionCmd::Op::kQuery;
    DRSIM_RETURN_IF_ERROR(id("the indirect action id"));
    DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
  } else {
    return ErrorAt(op->pos, StatusCode::kInvalidArgument,
                   absl::StrFormat("expected %s, found '%s'", ops, op->text));
  }
  *out = std::move(cmd);
  return absl::OkStatus();
}

absl::Status ParseFlow(Cursor& c, std::vector<absl::Status>* errors, CommandBody* out) {
  constexpr absl::string_view subcommands =
      "validate, create, destroy, flush, list, query, aged or indirect_action after 'flow'";
  DRSIM_ASSIGN_OR_RETURN(const Token* sub, c.Next(subcommands));
  if (sub->text == "validate") return ParseFlowRule(c, errors, &ReusedRule<FlowValidateCmd>(out));
  if (sub->text == "create") return ParseFlowRule(c, errors, &ReusedRule<FlowCreateCmd>(out));
  if (sub->text == "destroy") {
    FlowDestroyCmd cmd;
    DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
    DRSIM_RETURN_IF_ERROR(c.Expect("rule"));
    while (true) {
      DRSIM_ASSIGN_OR_RETURN(uint32_t id, Number<uint32_t>(c, 32, "a rule id"));
      cmd.rule_ids.push_back(id);
      if (!c.PeekIs("rule")) break;
      c.Take();
    }
    DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
    *out = std::move(cmd);
    return absl::OkStatus();
  }
  if (sub->text == "flush") {
    FlowFlushCmd cmd;
    DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
    DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
    *out = cmd;
    return absl::OkStatus();
  }
  if (sub->text == "list") {
    FlowListCmd cmd;
    DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
    while (!c.AtEnd()) {
      DRSIM_RETURN_IF_ERROR(c.Expect("group"));
      DRSIM_ASSIGN_OR_RETURN(uint32_t group, Number<uint32_t>(c, 32, "a group"));
      cmd.groups.push_back(group);
    }
    *out = std::move(cmd);
    return absl::OkStatus();
  }
  if (sub->text == "query") {
    FlowQueryCmd cmd;
    DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
    DRSIM_ASSIGN_OR_RETURN(cmd.rule_id, Number<uint64_t>(c, 64, "a rule id"));
    if (!c.PeekIs("count") && !c.PeekIs("age")) return c.Expected("'count' or 'age' (the queryable actions)");
    cmd.what = c.PeekIs("age") ? FlowQueryCmd::What::kAge : FlowQueryCmd::What::kCount;
    cmd.action_pos = c.Take().pos;
    if (c.PeekIs("user_id")) {
      c.Take();
      cmd.by_user_id = true;
    }
    DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
    *out = cmd;
    return absl::OkStatus();
  }
  if (sub->text == "aged") return ParseFlowAged(c, out);
  if (sub->text == "indirect_action") return ParseIndirectAction(c, errors, out);
  return ErrorAt(sub->pos, StatusCode::kInvalidArgument,
                 absl::StrFormat("expected %s, found '%s'", subcommands, sub->text));
}

// The `keyword value` pairs of set vxlan / nvgre, in their fixed order.
absl::Status ParseSetTunnel(Cursor& c, absl::string_view variant, CommandBody* out) {
  SetTunnelCmd cmd;
  cmd.kind = absl::StartsWith(variant, "nvgre") ? SetTunnelCmd::Kind::kNvgre : SetTunnelCmd::Kind::kVxlan;
  cmd.with_vlan = absl::EndsWith(variant, "-with-vlan");
  cmd.tos_ttl = variant == "vxlan-tos-ttl";
  std::vector<absl::string_view> keys = {"ip-version"};
  if (cmd.kind == SetTunnelCmd::Kind::kVxlan) {
    keys.insert(keys.end(), {"vni", "udp-src", "udp-dst"});
    if (cmd.tos_ttl) keys.insert(keys.end(), {"ip-tos", "ip-ttl"});
  } else {
    keys.push_back("tni");
  }
  keys.insert(keys.end(), {"ip-src", "ip-dst"});
  if (cmd.with_vlan) keys.push_back("vlan-tci");
  keys.insert(keys.end(), {"eth-src", "eth-dst"});
  for (absl::string_view key : keys) {
    DRSIM_RETURN_IF_ERROR(c.Expect(key));
    const std::string what = absl::StrFormat("'%s'", key);
    DRSIM_ASSIGN_OR_RETURN(const Token* t, c.Next(absl::StrFormat("a value for %s", what)));
    if (key == "ip-version") {
      if (t->text != "ipv4" && t->text != "ipv6") {
        return ErrorAt(t->pos, StatusCode::kInvalidArgument,
                       absl::StrFormat("expected ipv4 or ipv6 for 'ip-version', found '%s'", t->text));
      }
      cmd.ipv6 = t->text == "ipv6";
    } else if (key == "vni" || key == "tni") {
      DRSIM_ASSIGN_OR_RETURN(uint64_t v, ParseUnsigned(*t, 24, what));
      cmd.vni = static_cast<uint32_t>(v);
    } else if (key == "udp-src" || key == "udp-dst" || key == "vlan-tci") {
      DRSIM_ASSIGN_OR_RETURN(uint64_t v, ParseUnsigned(*t, 16, what));
      (key == "udp-src"   ? cmd.udp_src
       : key == "udp-dst" ? cmd.udp_dst
                          : cmd.vlan_tci) = static_cast<uint16_t>(v);
    } else if (key == "ip-tos" || key == "ip-ttl") {
      DRSIM_ASSIGN_OR_RETURN(uint64_t v, ParseUnsigned(*t, 8, what));
      (key == "ip-tos" ? cmd.ip_tos : cmd.ip_ttl) = static_cast<uint8_t>(v);
    } else if (key == "ip-src" || key == "ip-dst") {
      DRSIM_ASSIGN_OR_RETURN(absl::uint128 ip,
                             ParseScalar(*t, cmd.ipv6 ? ValueKind::kIpv6 : ValueKind::kIpv4, 128, what));
      if (cmd.ipv6) {
        hw::Ipv6Address& a = key == "ip-src" ? cmd.ipv6_src : cmd.ipv6_dst;
        for (int i = 0; i < 16; ++i) a.bytes[i] = static_cast<uint8_t>(ip >> (8 * (15 - i)));
      } else {
        (key == "ip-src" ? cmd.ipv4_src : cmd.ipv4_dst).value = static_cast<uint32_t>(ip);
      }
    } else {  // eth-src, eth-dst
      DRSIM_ASSIGN_OR_RETURN(absl::uint128 mac, ParseScalar(*t, ValueKind::kMac, 48, what));
      hw::MacAddress& m = key == "eth-src" ? cmd.eth_src : cmd.eth_dst;
      for (int i = 0; i < 6; ++i) m.bytes[i] = static_cast<uint8_t>(mac >> (8 * (5 - i)));
    }
  }
  DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
  *out = cmd;
  return absl::OkStatus();
}

// set conntrack com|orig|rply: `keyword value` pairs in testpmd's fixed order.
absl::Status ParseSetConntrack(Cursor& c, CommandBody* out) {
  SetConntrackCmd cmd;
  DRSIM_ASSIGN_OR_RETURN(const Token* part, c.Next("com, orig or rply after 'set conntrack'"));
  sim::CtContext& ct = cmd.values.context;
  struct Key {
    absl::string_view name;
    int width;
    std::function<void(uint64_t)> store;
  };
  std::vector<Key> keys;
  if (part->text == "com") {
    cmd.part = SetConntrackCmd::Part::kCommon;
    keys = {
        {"peer", 16, [&](uint64_t v) { cmd.values.peer_port = static_cast<uint16_t>(v); }},
        {"is_orig", 1, [&](uint64_t v) { cmd.values.is_original = v != 0; }},
        {"enable", 1, [&](uint64_t v) { ct.enable = v != 0; }},
        {"live", 1, [&](uint64_t v) { ct.live_connection = v != 0; }},
        {"sack", 1, [&](uint64_t v) { ct.selective_ack = v != 0; }},
        {"cack", 1, [&](uint64_t v) { ct.challenge_ack_passed = v != 0; }},
        {"last_dir", 1, [&](uint64_t v) { ct.last_direction_original = v != 0; }},
        {"liberal", 1, [&](uint64_t v) { ct.original.liberal = ct.reply.liberal = v != 0; }},
        {"state", 8, [&](uint64_t v) { ct.state = static_cast<sim::CtState>(v); }},
        {"max_ack_win", 8, [&](uint64_t v) { ct.max_ack_window = static_cast<uint8_t>(v); }},
        {"r_lim", 8, [&](uint64_t v) { ct.retransmission_limit = static_cast<uint8_t>(v); }},
        {"last_win", 16, [&](uint64_t v) { ct.last_window = static_cast<uint16_t>(v); }},
        {"last_seq", 32, [&](uint64_t v) { ct.last_seq = static_cast<uint32_t>(v); }},
        {"last_ack", 32, [&](uint64_t v) { ct.last_ack = static_cast<uint32_t>(v); }},
        {"last_end", 32, [&](uint64_t v) { ct.last_end = static_cast<uint32_t>(v); }},
        {"last_index", 8, [&](uint64_t v) { ct.last_index = static_cast<uint8_t>(v); }},
    };
  } else if (part->text == "orig" || part->text == "rply") {
    cmd.part = part->text == "orig" ? SetConntrackCmd::Part::kOriginal : SetConntrackCmd::Part::kReply;
    sim::CtDirection& d = part->text == "orig" ? ct.original : ct.reply;
    keys = {
        {"scale", 8, [&](uint64_t v) { d.scale = static_cast<uint8_t>(v); }},
        {"fin", 1, [&](uint64_t v) { d.close_initiated = v != 0; }},
        {"acked", 1, [&](uint64_t v) { d.last_ack_seen = v != 0; }},
        {"unack_data", 1, [&](uint64_t v) { d.data_unacked = v != 0; }},
        {"sent_end", 32, [&](uint64_t v) { d.sent_end = static_cast<uint32_t>(v); }},
        {"reply_end", 32, [&](uint64_t v) { d.reply_end = static_cast<uint32_t>(v); }},
        {"max_win", 32, [&](uint64_t v) { d.max_win = static_cast<uint32_t>(v); }},
        {"max_ack", 32, [&](uint64_t v) { d.max_ack = static_cast<uint32_t>(v); }},
    };
  } else {
    return ErrorAt(
        part->pos, StatusCode::kInvalidArgument,
        absl::StrFormat("expected com, orig or rply after 'set conntrack', found '%s'", part->text));
  }
  for (const Key& key : keys) {
    DRSIM_RETURN_IF_ERROR(c.Expect(key.name));
    const std::string what = absl::StrFormat("'%s'", key.name);
    DRSIM_ASSIGN_OR_RETURN(const Token* t, c.Next(absl::StrFormat("a value for %s", what)));
    DRSIM_ASSIGN_OR_RETURN(const uint64_t v, ParseUnsigned(*t, key.width, what));
    key.store(v);
  }
  DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
  *out = cmd;
  return absl::OkStatus();
}

absl::Status ParseSet(Cursor& c, std::vector<absl::Status>* errors, CommandBody* out) {
  constexpr absl::string_view variants =
      "raw_encap, raw_decap, sample_actions, vxlan, vxlan-with-vlan, vxlan-tos-ttl, nvgre, nvgre-with-vlan "
      "or conntrack after 'set'";
  DRSIM_ASSIGN_OR_RETURN(const Token* what, c.Next(variants));
  if (what->text == "raw_encap" || what->text == "raw_decap") {
    SetRawCmd cmd;
    cmd.decap = what->text == "raw_decap";
    if (c.PeekIsNumber()) {
      DRSIM_ASSIGN_OR_RETURN(cmd.index, Number<uint32_t>(c, 32, "the index"));
    }
    if (!ParseList<Item>(c, "end_set", {}, ParseItem, &cmd.items, errors)) return absl::OkStatus();
    DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
    *out = std::move(cmd);
    return absl::OkStatus();
  }
  if (what->text == "sample_actions") {
    SetSampleActionsCmd cmd;
    DRSIM_ASSIGN_OR_RETURN(cmd.index, Number<uint32_t>(c, 32, "the index"));
    if (!ParseList<Action>(c, "end", {}, ParseAction, &cmd.actions, errors)) return absl::OkStatus();
    DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
    *out = std::move(cmd);
    return absl::OkStatus();
  }
  if (what->text == "vxlan" || what->text == "vxlan-with-vlan" || what->text == "vxlan-tos-ttl" ||
      what->text == "nvgre" || what->text == "nvgre-with-vlan") {
    return ParseSetTunnel(c, what->text, out);
  }
  if (what->text == "conntrack") return ParseSetConntrack(c, out);
  return ErrorAt(what->pos, StatusCode::kInvalidArgument,
                 absl::StrFormat("expected %s, found '%s'", variants, what->text));
}

absl::Status ParseMeterProfile(Cursor& c, CommandBody* out) {
  AddMeterProfileCmd cmd;
  constexpr absl::string_view algorithms = "srtcm_rfc2697, trtcm_rfc2698 or trtcm_rfc4115";
  DRSIM_ASSIGN_OR_RETURN(const Token* alg, c.Next(algorithms));
  if (alg->text == "srtcm_rfc2697") {
    cmd.algorithm = MeterAlgorithm::kSrTcmRfc2697;
  } else if (alg->text == "trtcm_rfc2698") {
    cmd.algorithm = MeterAlgorithm::kTrTcmRfc2698;
  } else if (alg->text == "trtcm_rfc4115") {
    cmd.algorithm = MeterAlgorithm::kTrTcmRfc4115;
  } else {
    return ErrorAt(alg->pos, StatusCode::kInvalidArgument,
                   absl::StrFormat("expected %s, found '%s'", algorithms, alg->text));
  }
  DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
  DRSIM_ASSIGN_OR_RETURN(cmd.profile_id, Number<uint32_t>(c, 32, "the profile id"));
  DRSIM_ASSIGN_OR_RETURN(cmd.cir, Number<uint64_t>(c, 64, "the cir"));
  if (cmd.algorithm == MeterAlgorithm::kSrTcmRfc2697) {
    DRSIM_ASSIGN_OR_RETURN(cmd.cbs, Number<uint64_t>(c, 64, "the cbs"));
    DRSIM_ASSIGN_OR_RETURN(cmd.ebs, Number<uint64_t>(c, 64, "the ebs"));
  } else {
    const bool peak = cmd.algorithm == MeterAlgorithm::kTrTcmRfc2698;
    DRSIM_ASSIGN_OR_RETURN(cmd.eir, Number<uint64_t>(c, 64, peak ? "the pir" : "the eir"));
    DRSIM_ASSIGN_OR_RETURN(cmd.cbs, Number<uint64_t>(c, 64, "the cbs"));
    DRSIM_ASSIGN_OR_RETURN(cmd.ebs, Number<uint64_t>(c, 64, peak ? "the pbs" : "the ebs"));
  }
  if (!c.AtEnd()) {
    DRSIM_ASSIGN_OR_RETURN(cmd.packet_mode, Number<bool>(c, 1, "packet_mode (0 or 1)"));
  }
  DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
  *out = cmd;
  return absl::OkStatus();
}

absl::Status ParseMeterPolicy(Cursor& c, std::vector<absl::Status>* errors, CommandBody* out) {
  AddMeterPolicyCmd cmd;
  DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
  DRSIM_ASSIGN_OR_RETURN(cmd.policy_id, Number<uint32_t>(c, 32, "the policy id"));
  if (!c.PeekIs("g_actions")) return c.Expected("'g_actions'");
  struct Colour {
    absl::string_view keyword;
    std::vector<Action>* list;
    SourcePos* pos;
  };
  const Colour colours[] = {{"g_actions", &cmd.green, &cmd.green_pos},
                            {"y_actions", &cmd.yellow, &cmd.yellow_pos},
                            {"r_actions", &cmd.red, &cmd.red_pos}};
  for (const Colour& colour : colours) {
    if (!c.PeekIs(colour.keyword)) continue;
    *colour.pos = c.Take().pos;
    if (!ParseList<Action>(c, "end", {"y_actions", "r_actions"}, ParseAction, colour.list, errors)) {
      return absl::OkStatus();
    }
  }
  DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
  *out = std::move(cmd);
  return absl::OkStatus();
}

absl::Status ParseCreateMeter(Cursor& c, CommandBody* out) {
  DRSIM_RETURN_IF_ERROR(c.Expect("port"));
  DRSIM_RETURN_IF_ERROR(c.Expect("meter"));
  CreateMeterCmd cmd;
  DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
  DRSIM_ASSIGN_OR_RETURN(cmd.meter_id, Number<uint32_t>(c, 32, "the meter id"));
  DRSIM_ASSIGN_OR_RETURN(const Token* profile, c.Next("the profile id"));
  DRSIM_ASSIGN_OR_RETURN(uint64_t profile_id, ParseUnsigned(*profile, 32, "the profile id"));
  cmd.profile_id = static_cast<uint32_t>(profile_id);
  cmd.profile_pos = profile->pos;
  DRSIM_ASSIGN_OR_RETURN(const Token* policy, c.Next("the policy id"));
  DRSIM_ASSIGN_OR_RETURN(uint64_t policy_id, ParseUnsigned(*policy, 32, "the policy id"));
  cmd.policy_id = static_cast<uint32_t>(policy_id);
  cmd.policy_pos = policy->pos;
  DRSIM_ASSIGN_OR_RETURN(const Token* enable, c.Next("yes or no (meter_enable)"));
  if (enable->text != "yes" && enable->text != "no") {
    return ErrorAt(enable->pos, StatusCode::kInvalidArgument,
                   absl::StrFormat("expected yes or no (meter_enable), found '%s'", enable->text));
  }
  cmd.enable = enable->text == "yes";
  DRSIM_ASSIGN_OR_RETURN(cmd.stats_mask, Number<uint64_t>(c, 64, "the stats_mask"));
  DRSIM_ASSIGN_OR_RETURN(cmd.shared, Number<uint32_t>(c, 32, "shared"));
  if (!c.AtEnd() && !c.PeekIsNumber()) {
    const Token& colour = c.Take();
    const std::string s = absl::AsciiStrToLower(colour.text);
    if (s != "g" && s != "y" && s != "r") {
      return ErrorAt(colour.pos, StatusCode::kInvalidArgument,
                     absl::StrFormat("expected g, y or r (default_input_color), found '%s'", colour.text));
    }
    cmd.default_color = s == "g" ? 0 : s == "y" ? 1 : 2;
  }
  if (!c.AtEnd()) {
    const Token& use_pre = c.Take();
    DRSIM_ASSIGN_OR_RETURN(uint64_t v, ParseUnsigned(use_pre, 32, "use_pre_meter_color"));
    if (v != 0 || !c.AtEnd()) {
      return ErrorAt(
          use_pre.pos, StatusCode::kUnimplemented,
          "use_pre_meter_color and DSCP/VLAN input colour tables are not modelled: a DR flow meter "
          "colours by its start colour only");
    }
  }
  *out = cmd;
  return absl::OkStatus();
}

absl::Status ParseMeterObject(Cursor& c, absl::string_view verb, CommandBody* out) {
  DRSIM_RETURN_IF_ERROR(c.Expect("port"));
  DRSIM_RETURN_IF_ERROR(c.Expect("meter"));
  MeterObjectCmd cmd;
  if (verb == "enable") {
    cmd.op = MeterObjectCmd::Op::kEnable;
  } else if (verb == "disable") {
    cmd.op = MeterObjectCmd::Op::kDisable;
  } else if (c.PeekIs("profile") || c.PeekIs("policy")) {
    cmd.op =
        c.Take().text == "profile" ? MeterObjectCmd::Op::kDeleteProfile : MeterObjectCmd::Op::kDeletePolicy;
  } else {
    cmd.op = MeterObjectCmd::Op::kDelete;
  }
  DRSIM_ASSIGN_OR_RETURN(cmd.port, Number<uint16_t>(c, 16, "the port id"));
  DRSIM_ASSIGN_OR_RETURN(cmd.id, Number<uint32_t>(c, 32, "the id"));
  DRSIM_RETURN_IF_ERROR(ExpectEnd(c));
  *out = cmd;
  return absl::OkStatus();
}

absl::Status ParseBody(Cursor& c, std::vector<absl::Status>* errors, CommandBody* out) {
  constexpr absl::string_view commands = "a command (flow, set, add, create, enable, disable or del)";
  DRSIM_ASSIGN_OR_RETURN(const Token* verb, c.Next(commands));
  if (verb->text == "flow") return ParseFlow(c, errors, out);
  if (verb->text == "set") return ParseSet(c, errors, out);
  if (verb->text == "add") {
    DRSIM_RETURN_IF_ERROR(c.Expect("port"));
    DRSIM_RETURN_IF_ERROR(c.Expect("meter"));
    if (!c.PeekIs("profile") && !c.PeekIs("policy")) return c.Expected("'profile' or 'policy'");
    if (c.Take().text == "profile") return ParseMeterProfile(c, out);
    return ParseMeterPolicy(c, errors, out);
  }
  if (verb->text == "create") return ParseCreateMeter(c, out);
  if (verb->text == "enable" || verb->text == "disable" || verb->text == "del") {
    return ParseMeterObject(c, verb->text, out);
  }
  return ErrorAt(verb->pos, StatusCode::kInvalidArgument,
                 absl::StrFormat("expected %s, found '%s'", commands, verb->text));
}

}  // namespace

Command* CommandParser::Parse(const CommandTokens& tokens, std::vector<absl::Status>* errors) {
  const size_t errors_before = errors->size();
  Cursor c(tokens);
  absl::Status status = ParseBody(c, errors, &command_.body);
  if (!status.ok()) errors->push_back(std::move(status));
  if (errors->size() != errors_before) return nullptr;
  command_.pos = tokens.tokens.front().pos;
  return &command_;
}

ParsedCommand ParseCommand(const CommandTokens& tokens) {
  ParsedCommand out;
  CommandParser parser;
  if (Command* command = parser.Parse(tokens, &out.errors)) out.command = std::move(*command);
  return out;
}

ParsedText ParseText(absl::string_view text) {
  ParsedText out;
  for (const CommandTokens& tokens : Lex(text)) {
    ParsedCommand parsed = ParseCommand(tokens);
    if (parsed.command) out.commands.push_back(*std::move(parsed.command));
    for (absl::Status& e : parsed.errors) out.errors.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<Command> ParseOne(absl::string_view text) {
  std::vector<CommandTokens> commands = Lex(text);
  if (commands.size() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat("expected one command, found %d", commands.size()));
  }
  ParsedCommand parsed = ParseCommand(commands.front());
  if (!parsed.errors.empty()) return parsed.errors.front();
  return *std::move(parsed.command);
}

}  // namespace drsim::testpmd
