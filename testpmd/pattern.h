// Pattern items -> a DR matcher mask and rule value (hw::MatchParams), with mlx5's semantics.
//
//  - Fields: each item's effective mask is the mask written with is/mask/prefix, or rte_flow's default mask
//    of the item when only spec was written (rte_flow's rule; `udp dst spec 53` therefore also matches
//    src 0); an item without spec matches the protocol's presence only. `last` must equal the spec under the
//    mask, or be 0 (no range): DR matches exact values, so ranges are rejected (Unimplemented), except the
//    IPv4 fragment_offset idioms that mean "is a fragment".
//  - Implicit fields, as mlx5 sets them: ipv4/ipv6 -> ip_version (flow_dv_set_match_ip_version: the mask
//    is 0xf in a root table, group 0 on a level-0 table, where the kernel and firmware compare the field
//    bit for bit, and the version itself elsewhere, as rdma-core's STE builders want; the value is the
//    version; the level's ethertype is dropped), an eth or vlan type of 0x0800 / 0x86dd with a full mask ->
//    ip_version in place of the ethertype, tcp/udp/icmp/icmp6/gre -> ip_protocol,
//    vxlan/vxlan-gpe/geneve/gtp/ib_bth -> the outer UDP destination port when the udp item left it open,
//    vlan -> the cvlan/svlan qualifier, gre_key/nvgre -> the GRE K bit, nvgre -> GRE protocol 0x6558, mpls
//    after udp/gre -> UDP port 6635 / GRE protocol 0x8847.
//  - Items after a tunnel item (vxlan, vxlan-gpe, geneve, gre, nvgre, mpls, gtp) match inner headers.
//  - geneve-opt (right after geneve) matches the first data word of the option of its class, type and
//    length (misc3.geneve_tlv_option_0_data), with mlx5's checks (flow_dv_validate_item_geneve_opt): the
//    three given with full masks, a length of 1..7 words that fits the geneve item's optlen, data given
//    and not all zero under its mask. TranslatedPattern::geneve_option names the option.
//  - Layer order is checked as mlx5 checks it: an L4 item needs an L3 item of its level, a tunnel its outer
//    layers, one tunnel level at most; ICMP/ICMPv6 only on the outer level (the layout's ICMP fields are
//    the outer packet's).
// docs/testpmd.md lists every field's destination. Errors carry the offending item's or field's position:
// InvalidArgument for a malformed pattern, Unimplemented for a field DR cannot match.
//
// Pure functions; thread-safe.
#ifndef DRSIM_TESTPMD_PATTERN_H_
#define DRSIM_TESTPMD_PATTERN_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/match_params.h"
#include "testpmd/ast.h"

namespace drsim::testpmd {

enum class L3 : uint8_t { kNone, kIpv4, kIpv6 };
enum class L4 : uint8_t { kNone, kTcp, kUdp, kIcmp, kIcmp6 };

// What the pattern pins of one header level.
struct HeaderLayers {
  bool eth = false;
  int vlans = 0;
  L3 l3 = L3::kNone;
  L4 l4 = L4::kNone;
};

struct PatternInfo {
  HeaderLayers outer, inner;
  bool tunnel = false;  // items after a tunnel item matched inner headers
  // The first outer vlan item's VID and PCP, when the pattern gives them exactly (push-VLAN defaults).
  std::optional<uint16_t> vlan_vid, vlan_pcp;
};

struct PatternContext {
  mlx5dv_dr_domain_type domain = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  // The vport of testpmd port `port` for port_id / represented_port items, or an error.
  std::function<absl::StatusOr<uint16_t>(uint32_t port)> vport_of_port;
  // Transfer rules: the source vport matched when no port_id / represented_port item gives one (mlx5
  // matches the port that created the rule).
  std::optional<uint16_t> implicit_source_vport;
  // The rule goes to a root (level-0) table: ip_version masks are 0xf there.
  bool root_table = false;
};

// The GENEVE TLV option a geneve-opt item matches (the data of): mlx5 creates the device's option parser
// object for it when a flow first uses it (geneve_option.h).
struct GeneveOptionUse {
  uint16_t option_class = 0;
  uint8_t type = 0;
  uint8_t length = 0;  // data words
  SourcePos pos;       // the item
};

struct TranslatedPattern {
  hw::MatchParams mask;
  hw::MatchParams value;
  PatternInfo info;
  std::optional<GeneveOptionUse> geneve_option;
};

absl::StatusOr<TranslatedPattern> TranslatePattern(absl::Span<const Item> items, const PatternContext& ctx);
// The same into `out`, whose match buffers are reused: a loader translating rule after rule allocates none.
// On an error `out` holds a partial translation.
absl::Status TranslatePatternInto(absl::Span<const Item> items, const PatternContext& ctx,
                                  TranslatedPattern* out);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_PATTERN_H_
