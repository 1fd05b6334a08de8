// The parsed form of testpmd commands: a small AST that keeps every value as written (typed) and where it
// was written. The parser (parser.h) makes it; the engine (engine.h) executes it.
//
// Pattern items keep rte_flow's spec / last / mask per storage word of the item (see schema.h), filled
// exactly as testpmd fills them: `is` sets the spec and a full mask for the field, `spec` only the spec,
// `last` the range end, `mask` the mask, `prefix N` a mask of N leading ones; later mentions override
// earlier ones. `mask_given` says whether testpmd would hand the PMD a mask at all (any is/mask/prefix):
// without one, rte_flow's default mask of the item applies to the spec.
//
// Plain values; thread-compatible.
#ifndef DRSIM_TESTPMD_AST_H_
#define DRSIM_TESTPMD_AST_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/numeric/int128.h"
#include "hw/net_addr.h"
#include "sim/conntrack.h"
#include "testpmd/schema.h"
#include "testpmd/source.h"

namespace drsim::testpmd {

// One storage word of a pattern item.
struct ItemWord {
  absl::uint128 spec = 0, last = 0, mask = 0;
  bool spec_set = false, last_set = false, mask_set = false;
  SourcePos pos;  // the field name that last touched the word
};

struct Item {
  const ItemDef* def = nullptr;
  SourcePos pos;
  std::vector<ItemWord> words;  // one per def->storage
  bool mask_given = false;
};

// One slot of a pattern: field `field` of item `item` (an index into the pattern), given with `is` or
// `spec`, whose value varies among the flows of one template (pattern_template.h).
struct PatternSlot {
  uint16_t item = 0;
  const FieldDef* field = nullptr;
};

// A parameter value of an action.
struct ParamValue {
  SourcePos pos;
  std::string text;              // as written (keywords)
  absl::uint128 number = 0;      // unsigned, bool, MAC, IPv4, IPv6
  std::vector<uint8_t> bytes;    // hex strings
  std::vector<ParamValue> list;  // keyword and number lists
};

struct ActionArg {
  const ParamDef* def = nullptr;
  SourcePos pos;  // the parameter's name
  ParamValue value;
};

struct Action {
  const ActionDef* def = nullptr;
  SourcePos pos;
  std::vector<ActionArg> args;  // in the order written; a repeated parameter's last value counts

  // The last value given for parameter `name`, or nullptr.
  const ActionArg* Find(absl::string_view name) const;
};

struct FlowAttr {
  uint32_t group = 0;
  uint32_t priority = 0;
  bool ingress = false;
  bool egress = false;
  bool transfer = false;
  std::optional<uint64_t> user_id;  // `user_id N`: the application's id of the rule (flow query ... user_id)
  SourcePos group_pos, priority_pos;
};

struct FlowRule {
  uint16_t port = 0;
  SourcePos port_pos;
  FlowAttr attr;
  SourcePos pattern_pos, actions_pos;  // the `pattern` and `actions` keywords
  std::vector<Item> pattern;           // without `end`
  std::vector<Action> actions;         // without `end`
};

struct FlowValidateCmd {
  FlowRule rule;
};
struct FlowCreateCmd {
  FlowRule rule;
};
struct FlowDestroyCmd {
  uint16_t port = 0;
  std::vector<uint32_t> rule_ids;
};
struct FlowFlushCmd {
  uint16_t port = 0;
};
struct FlowListCmd {
  uint16_t port = 0;
  std::vector<uint32_t> groups;  // empty: every group
};
// flow query PORT RULE count|age [user_id]
struct FlowQueryCmd {
  enum class What : uint8_t { kCount, kAge } what = What::kCount;
  uint16_t port = 0;
  uint64_t rule_id = 0;
  bool by_user_id = false;  // `rule_id` is a user_id attribute
  SourcePos action_pos;
};

// flow aged PORT [destroy]
struct FlowAgedCmd {
  uint16_t port = 0;
  bool destroy = false;
};

// flow indirect_action PORT create [action_id ID] [ingress] [egress] [transfer] action ACTION / end
// flow indirect_action PORT update ID action ACTION / end
// flow indirect_action PORT destroy action_id ID [action_id ID ...]
// flow indirect_action PORT query ID
struct IndirectActionCmd {
  enum class Op : uint8_t { kCreate, kUpdate, kDestroy, kQuery } op = Op::kCreate;
  uint16_t port = 0;
  std::vector<uint32_t> ids;  // create: the id asked for (none: the next free one); others: their ids
  SourcePos id_pos;
  bool ingress = false, egress = false, transfer = false;
  std::vector<Action> actions;  // create, update: the action (testpmd takes one)
  SourcePos action_pos;         // the `action` keyword
};

// set raw_encap / set raw_decap [index] items / end_set
struct SetRawCmd {
  bool decap = false;
  uint32_t index = 0;
  std::vector<Item> items;
};

// set sample_actions index actions / end
struct SetSampleActionsCmd {
  uint32_t index = 0;
  std::vector<Action> actions;
};

// set vxlan / vxlan-with-vlan / vxlan-tos-ttl, and set nvgre / nvgre-with-vlan: the outer headers of
// vxlan_encap and nvgre_encap.
struct SetTunnelCmd {
  enum class Kind : uint8_t { kVxlan, kNvgre } kind = Kind::kVxlan;
  bool ipv6 = false;
  bool with_vlan = false;
  bool tos_ttl = false;
  uint32_t vni = 0;  // VXLAN VNI or NVGRE TNI
  uint16_t udp_src = 0, udp_dst = 0;
  uint8_t ip_tos = 0, ip_ttl = 0;
  hw::Ipv4Address ipv4_src, ipv4_dst;
  hw::Ipv6Address ipv6_src, ipv6_dst;
  uint16_t vlan_tci = 0;
  hw::MacAddress eth_src, eth_dst;
};

// The context `flow indirect_action ... action conntrack` takes (testpmd's conntrack_context).
struct ConntrackProfile {
  uint16_t peer_port = 0;
  bool is_original = false;  // the direction of rules using the action: original (initiator) or reply
  sim::CtContext context;
};

// set conntrack com peer P is_orig B enable B live B sack B cack B last_dir B liberal B state N
//   max_ack_win N r_lim N last_win N last_seq N last_ack N last_end N last_index N
// set conntrack orig|rply scale N fin B acked B unack_data B sent_end N reply_end N max_win N max_ack N
struct SetConntrackCmd {
  enum class Part : uint8_t { kCommon, kOriginal, kReply } part = Part::kCommon;
  ConntrackProfile values;  // the fields of `part` (the others stay default)
};

enum class MeterAlgorithm : uint8_t { kSrTcmRfc2697, kTrTcmRfc2698, kTrTcmRfc4115 };

// add port meter profile srtcm_rfc2697 port id cir cbs ebs [packet_mode]
// add port meter profile trtcm_rfc2698 port id cir pir cbs pbs [packet_mode]
// add port meter profile trtcm_rfc4115 port id cir eir cbs ebs [packet_mode]
struct AddMeterProfileCmd {
  uint16_t port = 0;
  uint32_t profile_id = 0;
  MeterAlgorithm algorithm = MeterAlgorithm::kSrTcmRfc2697;
  uint64_t cir = 0, eir = 0;  // eir: the PIR for RFC 2698, 0 for RFC 2697
  uint64_t cbs = 0, ebs = 0;  // ebs: the PBS for RFC 2698
  bool packet_mode = false;
};

// add port meter policy port id g_actions ... y_actions ... r_actions ...
struct AddMeterPolicyCmd {
  uint16_t port = 0;
  uint32_t policy_id = 0;
  std::vector<Action> green, yellow, red;
  SourcePos green_pos, yellow_pos, red_pos;
};

// create port meter port mtr_id profile_id policy_id yes|no stats_mask shared [g|y|r] [use_pre_meter_color]
struct CreateMeterCmd {
  uint16_t port = 0;
  uint32_t meter_id = 0;
  uint32_t profile_id = 0;
  uint32_t policy_id = 0;
  SourcePos profile_pos, policy_pos;
  bool enable = true;
  uint64_t stats_mask = 0;
  uint32_t shared = 0;
  uint8_t default_color = 0;  // rte_color: green 0, yellow 1, red 2
};

// enable / disable / del port meter port mtr_id; del port meter profile / policy port id
struct MeterObjectCmd {
  enum class Op : uint8_t { kEnable, kDisable, kDelete, kDeleteProfile, kDeletePolicy } op = Op::kEnable;
  uint16_t port = 0;
  uint32_t id = 0;
};

using CommandBody =
    std::variant<FlowValidateCmd, FlowCreateCmd, FlowDestroyCmd, FlowFlushCmd, FlowListCmd, FlowQueryCmd,
                 FlowAgedCmd, IndirectActionCmd, SetRawCmd, SetSampleActionsCmd, SetTunnelCmd,
                 SetConntrackCmd, AddMeterProfileCmd, AddMeterPolicyCmd, CreateMeterCmd, MeterObjectCmd>;

struct Command {
  SourcePos pos;
  CommandBody body;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_AST_H_
