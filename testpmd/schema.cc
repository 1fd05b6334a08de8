#include "testpmd/schema.h"

#include <array>
#include <utility>

namespace drsim::testpmd {
namespace {

using absl::uint128;
using VK = ValueKind;

constexpr uint128 kAll128 = absl::Uint128Max();

// ---- Items (rte_flow item structures; defaults from rte_flow_item_<type>_mask) ----

constexpr StorageDef kEthStorage[] = {
    {"dst", 48, 0xffffffffffff}, {"src", 48, 0xffffffffffff}, {"type", 16, 0}, {"has_vlan", 1, 0}};
constexpr FieldDef kEthFields[] = {{"dst", VK::kMac, 0, 0, 48},
                                   {"src", VK::kMac, 1, 0, 48},
                                   {"type", VK::kUnsigned, 2, 0, 16},
                                   {"has_vlan", VK::kUnsigned, 3, 0, 1}};

constexpr StorageDef kVlanStorage[] = {{"tci", 16, 0x0fff}, {"inner_type", 16, 0}, {"has_more_vlan", 1, 0}};
constexpr FieldDef kVlanFields[] = {
    {"tci", VK::kUnsigned, 0, 0, 16},        {"pcp", VK::kUnsigned, 0, 13, 3},
    {"dei", VK::kUnsigned, 0, 12, 1},        {"vid", VK::kUnsigned, 0, 0, 12},
    {"inner_type", VK::kUnsigned, 1, 0, 16}, {"has_more_vlan", VK::kUnsigned, 2, 0, 1}};

constexpr StorageDef kIpv4Storage[] = {
    {"version_ihl", 8, 0},      {"tos", 8, 0}, {"length", 16, 0}, {"packet_id", 16, 0},
    {"fragment_offset", 16, 0}, {"ttl", 8, 0}, {"proto", 8, 0},   {"src", 32, 0xffffffff},
    {"dst", 32, 0xffffffff}};
constexpr FieldDef kIpv4Fields[] = {{"version_ihl", VK::kUnsigned, 0, 0, 8},
                                    {"tos", VK::kUnsigned, 1, 0, 8},
                                    {"length", VK::kUnsigned, 2, 0, 16},
                                    {"packet_id", VK::kUnsigned, 3, 0, 16},
                                    {"fragment_offset", VK::kUnsigned, 4, 0, 16},
                                    {"ttl", VK::kUnsigned, 5, 0, 8},
                                    {"proto", VK::kUnsigned, 6, 0, 8},
                                    {"src", VK::kIpv4, 7, 0, 32},
                                    {"dst", VK::kIpv4, 8, 0, 32}};

constexpr StorageDef kIpv6Storage[] = {{"vtc_flow", 32, 0},   {"length", 16, 0},     {"proto", 8, 0},
                                       {"hop", 8, 0},         {"src", 128, kAll128}, {"dst", 128, kAll128},
                                       {"has_frag_ext", 1, 0}};
constexpr FieldDef kIpv6Fields[] = {
    {"tc", VK::kUnsigned, 0, 20, 8},     {"flow", VK::kUnsigned, 0, 0, 20},
    {"length", VK::kUnsigned, 1, 0, 16}, {"proto", VK::kUnsigned, 2, 0, 8},
    {"hop", VK::kUnsigned, 3, 0, 8},     {"src", VK::kIpv6, 4, 0, 128},
    {"dst", VK::kIpv6, 5, 0, 128},       {"has_frag_ext", VK::kUnsigned, 6, 0, 1}};

constexpr StorageDef kIcmpStorage[] = {
    {"type", 8, 0xff}, {"code", 8, 0xff}, {"ident", 16, 0}, {"seq", 16, 0}};
constexpr FieldDef kIcmpFields[] = {{"type", VK::kUnsigned, 0, 0, 8},
                                    {"code", VK::kUnsigned, 1, 0, 8},
                                    {"ident", VK::kUnsigned, 2, 0, 16},
                                    {"seq", VK::kUnsigned, 3, 0, 16}};

constexpr StorageDef kIcmp6Storage[] = {{"type", 8, 0xff}, {"code", 8, 0xff}};
constexpr FieldDef kIcmp6Fields[] = {{"type", VK::kUnsigned, 0, 0, 8}, {"code", VK::kUnsigned, 1, 0, 8}};

constexpr StorageDef kUdpStorage[] = {{"src", 16, 0xffff}, {"dst", 16, 0xffff}};
constexpr FieldDef kUdpFields[] = {{"src", VK::kUnsigned, 0, 0, 16}, {"dst", VK::kUnsigned, 1, 0, 16}};

constexpr StorageDef kTcpStorage[] = {{"src", 16, 0xffff}, {"dst", 16, 0xffff}, {"flags", 8, 0}};
constexpr FieldDef kTcpFields[] = {
    {"src", VK::kUnsigned, 0, 0, 16}, {"dst", VK::kUnsigned, 1, 0, 16}, {"flags", VK::kUnsigned, 2, 0, 8}};

// The 8-byte VXLAN header as two big-endian words: flags, reserved / GBP / GPE bytes; VNI and a reserved
// byte.
constexpr StorageDef kVxlanStorage[] = {{"word0", 32, 0}, {"word1", 32, 0xffffff00}};
constexpr FieldDef kVxlanFields[] = {
    {"vni", VK::kUnsigned, 1, 8, 24},        {"flag_g", VK::kUnsigned, 0, 31, 1},
    {"flag_ver", VK::kUnsigned, 0, 28, 2},   {"flag_i", VK::kUnsigned, 0, 27, 1},
    {"flag_p", VK::kUnsigned, 0, 26, 1},     {"flag_b", VK::kUnsigned, 0, 25, 1},
    {"flag_o", VK::kUnsigned, 0, 24, 1},     {"flag_d", VK::kUnsigned, 0, 22, 1},
    {"flag_a", VK::kUnsigned, 0, 19, 1},     {"group_policy_id", VK::kUnsigned, 0, 0, 16},
    {"protocol", VK::kUnsigned, 0, 0, 8},    {"first_rsvd", VK::kUnsigned, 0, 16, 8},
    {"second_rsvd", VK::kUnsigned, 0, 8, 8}, {"third_rsvd", VK::kUnsigned, 0, 0, 8},
    {"last_rsvd", VK::kUnsigned, 1, 0, 8}};

constexpr StorageDef kVxlanGpeStorage[] = {
    {"flags", 8, 0}, {"rsvd0", 16, 0}, {"protocol", 8, 0}, {"vni", 24, 0xffffff}, {"rsvd1", 8, 0}};
constexpr FieldDef kVxlanGpeFields[] = {{"vni", VK::kUnsigned, 3, 0, 24},
                                        {"protocol", VK::kUnsigned, 2, 0, 8},
                                        {"flags", VK::kUnsigned, 0, 0, 8},
                                        {"rsvd0", VK::kUnsigned, 1, 0, 16},
                                        {"rsvd1", VK::kUnsigned, 4, 0, 8}};

// rte_flow_item_geneve: ver_opt_len_o_c_rsvd0 (option length in bits 8..13), protocol, vni.
constexpr StorageDef kGeneveStorage[] = {
    {"ver_opt_len_o_c_rsvd0", 16, 0}, {"protocol", 16, 0}, {"vni", 24, 0xffffff}};
constexpr FieldDef kGeneveFields[] = {{"vni", VK::kUnsigned, 2, 0, 24},
                                      {"protocol", VK::kUnsigned, 1, 0, 16},
                                      {"optlen", VK::kUnsigned, 0, 8, 6}};

// rte_flow_item_geneve_opt: option_class, option_type, option_len (4-byte words, 0..31) and the data's
// first word (mlx5 matches no more: misc3.geneve_tlv_option_0_data). rte_flow's default mask is the type
// only; data's, a null pointer there, is the whole word here.
constexpr StorageDef kGeneveOptStorage[] = {
    {"option_class", 16, 0}, {"option_type", 8, 0xff}, {"option_len", 5, 0}, {"data", 32, 0xffffffff}};
constexpr FieldDef kGeneveOptFields[] = {{"class", VK::kUnsigned, 0, 0, 16},
                                         {"type", VK::kUnsigned, 1, 0, 8},
                                         {"length", VK::kUnsigned, 2, 0, 5},
                                         {"data", VK::kHex, 3, 0, 32}};

// rte_flow_item_gre: c_rsvd0_ver (C 0x8000, K 0x2000, S 0x1000), protocol.
constexpr StorageDef kGreStorage[] = {{"c_rsvd0_ver", 16, 0}, {"protocol", 16, 0xffff}};
constexpr FieldDef kGreFields[] = {{"protocol", VK::kUnsigned, 1, 0, 16},
                                   {"c_rsvd0_ver", VK::kUnsigned, 0, 0, 16},
                                   {"c_bit", VK::kBool, 0, 15, 1},
                                   {"k_bit", VK::kBool, 0, 13, 1},
                                   {"s_bit", VK::kBool, 0, 12, 1}};

constexpr StorageDef kGreKeyStorage[] = {{"value", 32, 0xffffffff}};
constexpr FieldDef kGreKeyFields[] = {{"value", VK::kUnsigned, 0, 0, 32}};

constexpr StorageDef kNvgreStorage[] = {{"tni", 24, 0xffffff}};
constexpr FieldDef kNvgreFields[] = {{"tni", VK::kUnsigned, 0, 0, 24}};

// rte_flow_item_mpls: label_tc_s (label 4..23, TC 1..3, S 0), ttl.
constexpr StorageDef kMplsStorage[] = {{"label_tc_s", 24, 0xfffff0}, {"ttl", 8, 0}};
constexpr FieldDef kMplsFields[] = {{"label", VK::kUnsigned, 0, 4, 20},
                                    {"tc", VK::kUnsigned, 0, 1, 3},
                                    {"s", VK::kUnsigned, 0, 0, 1},
                                    {"ttl", VK::kUnsigned, 1, 0, 8}};

constexpr StorageDef kGtpStorage[] = {{"v_pt_rsv_flags", 8, 0}, {"msg_type", 8, 0}, {"teid", 32, 0xffffffff}};
constexpr FieldDef kGtpFields[] = {{"v_pt_rsv_flags", VK::kUnsigned, 0, 0, 8},
                                   {"msg_type", VK::kUnsigned, 1, 0, 8},
                                   {"teid", VK::kUnsigned, 2, 0, 32}};

constexpr StorageDef kGtpPscStorage[] = {{"pdu_type", 4, 0}, {"qfi", 6, 0x3f}};
constexpr FieldDef kGtpPscFields[] = {{"pdu_t", VK::kUnsigned, 0, 0, 4}, {"qfi", VK::kUnsigned, 1, 0, 6}};

constexpr StorageDef kIbBthStorage[] = {
    {"opcode", 8, 0xff}, {"pkey", 16, 0}, {"dst_qp", 24, 0xffffff}, {"psn", 24, 0}};
constexpr FieldDef kIbBthFields[] = {{"opcode", VK::kUnsigned, 0, 0, 8},
                                     {"pkey", VK::kUnsigned, 1, 0, 16},
                                     {"dst_qp", VK::kUnsigned, 2, 0, 24},
                                     {"psn", VK::kUnsigned, 3, 0, 24}};

constexpr StorageDef kMetaStorage[] = {{"data", 32, 0xffffffff}};
constexpr FieldDef kMetaFields[] = {{"data", VK::kUnsigned, 0, 0, 32}};

constexpr StorageDef kTagStorage[] = {{"data", 32, 0xffffffff}, {"index", 8, 0xff}};
constexpr FieldDef kTagFields[] = {{"data", VK::kUnsigned, 0, 0, 32},
                                   {"index", VK::kUnsigned, 1, 0, 8, true}};

// rte_flow_item_conntrack: its flags (RTE_FLOW_CONNTRACK_PKT_STATE_*), written bare: `conntrack is 1`.
constexpr StorageDef kConntrackStorage[] = {{"flags", 32, 0xffffffff}};
constexpr FieldDef kConntrackFields[] = {{"flags", VK::kUnsigned, 0, 0, 32}};
constexpr StorageDef kPortIdStorage[] = {{"id", 32, 0xffffffff}};
constexpr FieldDef kPortIdFields[] = {{"id", VK::kUnsigned, 0, 0, 32}};

constexpr StorageDef kEthdevStorage[] = {{"port_id", 16, 0xffff}};
constexpr FieldDef kRepresentedPortFields[] = {{"ethdev_port_id", VK::kUnsigned, 0, 0, 16}};

constexpr StorageDef kMeterColorStorage[] = {{"color", 32, 0xffffffff}};
constexpr FieldDef kMeterColorFields[] = {{"color", VK::kColor, 0, 0, 32}};

constexpr ItemDef kItems[] = {
    {"void", "VOID", ItemType::kVoid, {}, {}},
    {"eth", "ETH", ItemType::kEth, kEthStorage, kEthFields},
    {"vlan", "VLAN", ItemType::kVlan, kVlanStorage, kVlanFields},
    {"ipv4", "IPV4", ItemType::kIpv4, kIpv4Storage, kIpv4Fields},
    {"ipv6", "IPV6", ItemType::kIpv6, kIpv6Storage, kIpv6Fields},
    {"icmp", "ICMP", ItemType::kIcmp, kIcmpStorage, kIcmpFields},
    {"icmp6", "ICMP6", ItemType::kIcmp6, kIcmp6Storage, kIcmp6Fields},
    {"udp", "UDP", ItemType::kUdp, kUdpStorage, kUdpFields},
    {"tcp", "TCP", ItemType::kTcp, kTcpStorage, kTcpFields},
    {"vxlan", "VXLAN", ItemType::kVxlan, kVxlanStorage, kVxlanFields},
    {"vxlan-gpe", "VXLAN_GPE", ItemType::kVxlanGpe, kVxlanGpeStorage, kVxlanGpeFields},
    {"geneve", "GENEVE", ItemType::kGeneve, kGeneveStorage, kGeneveFields},
    {"geneve-opt", "GENEVE_OPT", ItemType::kGeneveOpt, kGeneveOptStorage, kGeneveOptFields},
    {"gre", "GRE", ItemType::kGre, kGreStorage, kGreFields},
    {"gre_key", "GRE_KEY", ItemType::kGreKey, kGreKeyStorage, kGreKeyFields},
    {"nvgre", "NVGRE", ItemType::kNvgre, kNvgreStorage, kNvgreFields},
    {"mpls", "MPLS", ItemType::kMpls, kMplsStorage, kMplsFields},
    {"gtp", "GTP", ItemType::kGtp, kGtpStorage, kGtpFields},
    {"gtpu", "GTPU", ItemType::kGtp, kGtpStorage, kGtpFields},
    {"gtp_psc", "GTP_PSC", ItemType::kGtpPsc, kGtpPscStorage, kGtpPscFields},
    {"ib_bth", "IB_BTH", ItemType::kIbBth, kIbBthStorage, kIbBthFields},
    {"meta", "META", ItemType::kMeta, kMetaStorage, kMetaFields},
    {"tag", "TAG", ItemType::kTag, kTagStorage, kTagFields},
    {"port_id", "PORT_ID", ItemType::kPortId, kPortIdStorage, kPortIdFields},
    {"represented_port", "REPRESENTED_PORT", ItemType::kRepresentedPort, kEthdevStorage,
     kRepresentedPortFields},
    {"meter", "METER_COLOR", ItemType::kMeterColor, kMeterColorStorage, kMeterColorFields},
    {"conntrack", "CONNTRACK", ItemType::kConntrack, kConntrackStorage, kConntrackFields},
};

constexpr std::pair<absl::string_view, const char*> kUnsupportedItems[] = {
    {"invert", "DR has no inverted match: a matcher matches exact values under its mask"},
    {"any", "DR has no wildcard layers: a matcher matches exact values under its mask"},
    {"raw", "DR matches header fields of the mlx5 match layout, not byte strings at offsets"},
    {"fuzzy", "DR has no approximate matching"},
    {"mark", "the flow tag is reported in the completion, it is not a field of the match layout"},
    {"sctp", "the mlx5 match layout has no SCTP fields"},
    {"e_tag", "the mlx5 match layout has no 802.1BR E-Tag fields"},
    {"arp_eth_ipv4", "the mlx5 match layout has no ARP fields"},
    {"ipv6_ext", "the mlx5 match layout has no IPv6 extension header fields"},
    {"ipv6_frag_ext",
     "the mlx5 match layout has no IPv6 fragment header fields (ipv6 has_frag_ext matches its presence)"},
    {"ipv6_routing_ext", "the mlx5 match layout has no IPv6 routing header fields"},
    {"icmp6_echo_request",
     "the mlx5 match layout has ICMPv6 type, code and header data, not echo fields by name"},
    {"icmp6_echo_reply",
     "the mlx5 match layout has ICMPv6 type, code and header data, not echo fields by name"},
    {"icmp6_nd_ns", "the mlx5 match layout has no neighbour discovery fields"},
    {"icmp6_nd_na", "the mlx5 match layout has no neighbour discovery fields"},
    {"icmp6_nd_opt", "the mlx5 match layout has no neighbour discovery fields"},
    {"icmp6_nd_opt_sla_eth", "the mlx5 match layout has no neighbour discovery fields"},
    {"icmp6_nd_opt_tla_eth", "the mlx5 match layout has no neighbour discovery fields"},
    {"gre_option",
     "only the GRE key is a field of the match layout (use gre_key); checksum and sequence are not"},
    {"gtpc", "the software NIC parses GTP-U (UDP 2152) only; GTP-C is not parsed"},
    {"pppoes", "the mlx5 match layout has no PPPoE fields"},
    {"pppoed", "the mlx5 match layout has no PPPoE fields"},
    {"pppoe_proto_id", "the mlx5 match layout has no PPPoE fields"},
    {"higig2", "the mlx5 match layout has no HiGig2 fields"},
    {"esp", "ESP SPIs are in the layout but no steering lookup consumes them (rdma-core rejects them)"},
    {"ah", "the mlx5 match layout has no AH fields"},
    {"pfcp", "the mlx5 match layout has no PFCP fields"},
    {"l2tpv3oip", "the mlx5 match layout has no L2TPv3 fields"},
    {"l2tpv2", "the mlx5 match layout has no L2TPv2 fields"},
    {"ppp", "the mlx5 match layout has no PPP fields"},
    {"ecpri", "eCPRI needs programmable flex-parser samples (misc4), which the software NIC does not model"},
    {"flex",
     "flex items need programmable flex-parser samples (misc4), which the software NIC does not model"},
    {"integrity", "l3_ok/l4_ok and the checksum-ok bits are never matchable on the modelled path"},
    {"port_representor",
     "the software NIC has no representor ethdevs: ports are the PCI functions (use represented_port)"},
    {"random", "the mlx5 match layout has no random field"},
    {"quota", "quota objects are HW steering only"},
    {"aggr_affinity", "the software NIC has one physical port"},
    {"tx_queue", "send queues are not testpmd ports' queues on the software NIC"},
    {"ptype", "packet types are HW steering only"},
    {"nsh", "the mlx5 match layout has no NSH fields"},
    {"compare", "comparisons are HW steering only"},
    {"nat64", "NAT64 is HW steering only"},
};

// ---- Actions ----

constexpr absl::string_view kRssFuncs[] = {"default", "toeplitz", "simple_xor", "symmetric_toeplitz"};
// RSS types as testpmd names them (rss_type_table in app/test-pmd/config.c).
constexpr absl::string_view kRssTypes[] = {
    "all",         "none",        "ip",          "udp",         "tcp",
    "sctp",        "tunnel",      "vlan",        "ipv4",        "ipv4-frag",
    "ipv4-tcp",    "ipv4-udp",    "ipv4-sctp",   "ipv4-other",  "ipv6",
    "ipv6-frag",   "ipv6-tcp",    "ipv6-udp",    "ipv6-sctp",   "ipv6-other",
    "l2-payload",  "ipv6-ex",     "ipv6-tcp-ex", "ipv6-udp-ex", "port",
    "vxlan",       "geneve",      "nvgre",       "gtpu",        "eth",
    "s-vlan",      "c-vlan",      "esp",         "ah",          "l2tpv3",
    "pfcp",        "pppoe",       "ecpri",       "mpls",        "ipv4-chksum",
    "l4-chksum",   "l2tpv2",      "l3-pre96",    "l3-pre64",    "l3-pre56",
    "l3-pre48",    "l3-pre40",    "l3-pre32",    "l2-dst-only", "l2-src-only",
    "l4-dst-only", "l4-src-only", "l3-dst-only", "l3-src-only", "ipv6-flow-label",
    "ib-bth"};
constexpr absl::string_view kModifyOps[] = {"set", "add", "sub"};
constexpr absl::string_view kFieldIds[] = {"start",
                                           "mac_dst",
                                           "mac_src",
                                           "vlan_type",
                                           "vlan_id",
                                           "mac_type",
                                           "ipv4_dscp",
                                           "ipv4_ttl",
                                           "ipv4_src",
                                           "ipv4_dst",
                                           "ipv6_dscp",
                                           "ipv6_hoplimit",
                                           "ipv6_src",
                                           "ipv6_dst",
                                           "tcp_port_src",
                                           "tcp_port_dst",
                                           "tcp_seq_num",
                                           "tcp_ack_num",
                                           "tcp_flags",
                                           "udp_port_src",
                                           "udp_port_dst",
                                           "vxlan_vni",
                                           "geneve_vni",
                                           "gtp_teid",
                                           "tag",
                                           "mark",
                                           "meta",
                                           "pointer",
                                           "value",
                                           "ipv4_ecn",
                                           "ipv6_ecn",
                                           "gtp_psc_qfi",
                                           "meter_color",
                                           "ipv6_proto",
                                           "flex_item",
                                           "hash_result",
                                           "geneve_opt_type",
                                           "geneve_opt_class",
                                           "geneve_opt_data",
                                           "mpls",
                                           "tcp_data_off",
                                           "ipv4_ihl",
                                           "ipv4_total_len",
                                           "ipv6_payload_len",
                                           "ipv4_proto",
                                           "ipv6_flow_label",
                                           "ipv6_traffic_class",
                                           "esp_spi",
                                           "esp_seq_num",
                                           "esp_proto",
                                           "random",
                                           "vxlan_last_rsvd"};

constexpr ParamDef kCountParams[] = {{"identifier", VK::kUnsigned, 32}};
constexpr ParamDef kQueueParams[] = {{"index", VK::kUnsigned, 16}};
constexpr ParamDef kMarkParams[] = {{"id", VK::kUnsigned, 32}};
constexpr ParamDef kJumpParams[] = {{"group", VK::kUnsigned, 32}};
constexpr ParamDef kRssParams[] = {{"func", VK::kKeyword, 0, kRssFuncs},
                                   {"level", VK::kUnsigned, 32},
                                   {"types", VK::kKeywordList, 0, kRssTypes},
                                   {"key", VK::kHex},
                                   {"key_len", VK::kUnsigned, 32},
                                   {"queues", VK::kUnsignedList, 16}};
constexpr ParamDef kMeterParams[] = {{"mtr_id", VK::kUnsigned, 32}};
constexpr ParamDef kPortIdParams[] = {{"original", VK::kBool}, {"id", VK::kUnsigned, 32}};
constexpr ParamDef kRepresentedPortParams[] = {{"ethdev_port_id", VK::kUnsigned, 16}};
constexpr ParamDef kRawIndexParams[] = {{"index", VK::kUnsigned, 32}};
constexpr ParamDef kPushVlanParams[] = {{"ethertype", VK::kUnsigned, 16}};
constexpr ParamDef kSetVlanVidParams[] = {{"vlan_vid", VK::kUnsigned, 16}};
constexpr ParamDef kSetVlanPcpParams[] = {{"vlan_pcp", VK::kUnsigned, 8}};
constexpr ParamDef kSetNwTtlParams[] = {{"nw_ttl", VK::kUnsigned, 8}};
constexpr ParamDef kMacParams[] = {{"mac_addr", VK::kMac}};
constexpr ParamDef kIpv4Params[] = {{"ipv4_addr", VK::kIpv4}};
constexpr ParamDef kIpv6Params[] = {{"ipv6_addr", VK::kIpv6}};
constexpr ParamDef kTpParams[] = {{"port", VK::kUnsigned, 16}};
constexpr ParamDef kTtlParams[] = {{"ttl_value", VK::kUnsigned, 8}};
constexpr ParamDef kDscpParams[] = {{"dscp_value", VK::kUnsigned, 8}};
constexpr ParamDef kTcpValueParams[] = {{"value", VK::kUnsigned, 32}};
constexpr ParamDef kSetTagParams[] = {
    {"data", VK::kUnsigned, 32}, {"index", VK::kUnsigned, 8}, {"mask", VK::kUnsigned, 32}};
constexpr ParamDef kSetMetaParams[] = {{"data", VK::kUnsigned, 32}, {"mask", VK::kUnsigned, 32}};
constexpr ParamDef kAgeParams[] = {{"timeout", VK::kUnsigned, 24}};  // rte_flow_action_age's 24-bit field
constexpr ParamDef kIndirectParams[] = {{"action_id", VK::kUnsigned, 32}};  // written bare: `indirect 5`
constexpr ParamDef kConntrackUpdateParams[] = {{"dir", VK::kBool}, {"ctx", VK::kBool}};  // written bare
constexpr ParamDef kSampleParams[] = {{"ratio", VK::kUnsigned, 32}, {"index", VK::kUnsigned, 32}};
constexpr ParamDef kModifyFieldParams[] = {
    {"op", VK::kKeyword, 0, kModifyOps}, {"dst_type", VK::kKeyword, 0, kFieldIds},
    {"dst_level", VK::kUnsigned, 8},     {"dst_tag_index", VK::kUnsigned, 8},
    {"dst_type_id", VK::kUnsigned, 8},   {"dst_class", VK::kUnsigned, 16},
    {"dst_offset", VK::kUnsigned, 32},   {"src_type", VK::kKeyword, 0, kFieldIds},
    {"src_level", VK::kUnsigned, 8},     {"src_tag_index", VK::kUnsigned, 8},
    {"src_type_id", VK::kUnsigned, 8},   {"src_class", VK::kUnsigned, 16},
    {"src_offset", VK::kUnsigned, 32},   {"src_value", VK::kHex},
    {"width", VK::kUnsigned, 32}};

constexpr ActionDef kActions[] = {
    {"void", "VOID", ActionType::kVoid, {}},
    {"drop", "DROP", ActionType::kDrop, {}},
    {"queue", "QUEUE", ActionType::kQueue, kQueueParams},
    {"rss", "RSS", ActionType::kRss, kRssParams},
    {"mark", "MARK", ActionType::kMark, kMarkParams},
    {"flag", "FLAG", ActionType::kFlag, {}},
    {"jump", "JUMP", ActionType::kJump, kJumpParams},
    {"count", "COUNT", ActionType::kCount, kCountParams},
    {"meter", "METER", ActionType::kMeter, kMeterParams},
    {"port_id", "PORT_ID", ActionType::kPortId, kPortIdParams},
    {"represented_port", "REPRESENTED_PORT", ActionType::kRepresentedPort, kRepresentedPortParams},
    {"raw_encap", "RAW_ENCAP", ActionType::kRawEncap, kRawIndexParams},
    {"raw_decap", "RAW_DECAP", ActionType::kRawDecap, kRawIndexParams},
    {"vxlan_encap", "VXLAN_ENCAP", ActionType::kVxlanEncap, {}},
    {"vxlan_decap", "VXLAN_DECAP", ActionType::kVxlanDecap, {}},
    {"nvgre_encap", "NVGRE_ENCAP", ActionType::kNvgreEncap, {}},
    {"nvgre_decap", "NVGRE_DECAP", ActionType::kNvgreDecap, {}},
    {"of_push_vlan", "OF_PUSH_VLAN", ActionType::kOfPushVlan, kPushVlanParams},
    {"of_set_vlan_vid", "OF_SET_VLAN_VID", ActionType::kOfSetVlanVid, kSetVlanVidParams},
    {"of_set_vlan_pcp", "OF_SET_VLAN_PCP", ActionType::kOfSetVlanPcp, kSetVlanPcpParams},
    {"of_pop_vlan", "OF_POP_VLAN", ActionType::kOfPopVlan, {}},
    {"of_set_nw_ttl", "OF_SET_NW_TTL", ActionType::kOfSetNwTtl, kSetNwTtlParams},
    {"of_dec_nw_ttl", "OF_DEC_NW_TTL", ActionType::kOfDecNwTtl, {}},
    {"set_mac_src", "SET_MAC_SRC", ActionType::kSetMacSrc, kMacParams},
    {"set_mac_dst", "SET_MAC_DST", ActionType::kSetMacDst, kMacParams},
    {"set_ipv4_src", "SET_IPV4_SRC", ActionType::kSetIpv4Src, kIpv4Params},
    {"set_ipv4_dst", "SET_IPV4_DST", ActionType::kSetIpv4Dst, kIpv4Params},
    {"set_ipv6_src", "SET_IPV6_SRC", ActionType::kSetIpv6Src, kIpv6Params},
    {"set_ipv6_dst", "SET_IPV6_DST", ActionType::kSetIpv6Dst, kIpv6Params},
    {"set_tp_src", "SET_TP_SRC", ActionType::kSetTpSrc, kTpParams},
    {"set_tp_dst", "SET_TP_DST", ActionType::kSetTpDst, kTpParams},
    {"set_ttl", "SET_TTL", ActionType::kSetTtl, kTtlParams},
    {"dec_ttl", "DEC_TTL", ActionType::kDecTtl, {}},
    {"set_ipv4_dscp", "SET_IPV4_DSCP", ActionType::kSetIpv4Dscp, kDscpParams},
    {"set_ipv6_dscp", "SET_IPV6_DSCP", ActionType::kSetIpv6Dscp, kDscpParams},
    {"inc_tcp_seq", "INC_TCP_SEQ", ActionType::kIncTcpSeq, kTcpValueParams},
    {"dec_tcp_seq", "DEC_TCP_SEQ", ActionType::kDecTcpSeq, kTcpValueParams},
    {"inc_tcp_ack", "INC_TCP_ACK", ActionType::kIncTcpAck, kTcpValueParams},
    {"dec_tcp_ack", "DEC_TCP_ACK", ActionType::kDecTcpAck, kTcpValueParams},
    {"set_tag", "SET_TAG", ActionType::kSetTag, kSetTagParams},
    {"set_meta", "SET_META", ActionType::kSetMeta, kSetMetaParams},
    {"modify_field", "MODIFY_FIELD", ActionType::kModifyField, kModifyFieldParams},
    {"sample", "SAMPLE", ActionType::kSample, kSampleParams},
    {"age", "AGE", ActionType::kAge, kAgeParams},
    {"indirect", "INDIRECT", ActionType::kIndirect, kIndirectParams},
    {"conntrack", "CONNTRACK", ActionType::kConntrack, {}},
    {"conntrack_update", "CONNTRACK_UPDATE", ActionType::kConntrackUpdate, kConntrackUpdateParams},
};

constexpr std::pair<absl::string_view, const char*> kUnsupportedActions[] = {
    {"passthru", "a DR rule hit ends the table walk; there is no fall-through to later rules"},
    {"skip_cman", "congestion management is not modelled"},
    {"pf", "legacy action; on the eSwitch what no transfer rule takes goes to the PF"},
    {"vf", "legacy action; on the eSwitch use represented_port ethdev_port_id N"},
    {"port_representor",
     "the software NIC has no representor ethdevs: ports are the PCI functions (use represented_port)"},
    {"meter_color", "meter colours are HW steering only"},
    {"color", "meter colours are HW steering only"},
    {"meter_mark", "meter_mark is HW steering only (use meter)"},
    {"of_set_mpls_ttl", "DR modify-header has no MPLS fields"},
    {"of_dec_mpls_ttl", "DR modify-header has no MPLS fields"},
    {"of_copy_ttl_out", "DR modify-header copies within one header level only"},
    {"of_copy_ttl_in", "DR modify-header copies within one header level only"},
    {"of_pop_mpls", "DR has no MPLS pop (use raw_decap)"},
    {"of_push_mpls", "DR has no MPLS push (use raw_encap)"},
    {"l2_encap", "not implemented here: use raw_encap with `set raw_encap`"},
    {"l2_decap", "not implemented here: use raw_decap with `set raw_decap`"},
    {"mplsogre_encap", "not implemented here: use raw_encap with `set raw_encap`"},
    {"mplsogre_decap", "not implemented here: use raw_decap with `set raw_decap`"},
    {"mplsoudp_encap", "not implemented here: use raw_encap with `set raw_encap`"},
    {"mplsoudp_decap", "not implemented here: use raw_decap with `set raw_decap`"},
    {"mac_swap", "DR modify-header copies one field at a time; swapping the MACs needs a scratch field"},
    {"age_update", "updating an age through a flow is HW steering only"},
    {"indirect_list", "indirect action lists are HW steering only"},
    {"shared_indirect", "indirect actions of another port are not modelled (use indirect)"},
    {"send_to_kernel", "there is no kernel on the software NIC"},
    {"quota_create", "quota objects are HW steering only"},
    {"quota_update", "quota objects are HW steering only"},
    {"ipv6_ext_remove", "DR has no IPv6 extension header actions"},
    {"ipv6_ext_push", "DR has no IPv6 extension header actions"},
    {"nat64", "NAT64 is HW steering only"},
    {"jump_to_table_index", "template tables are HW steering only"},
};

template <typename Def>
const Def* FindByName(absl::Span<const Def> defs, absl::string_view name) {
  for (const Def& d : defs) {
    if (SameWord(name, d.name)) return &d;
  }
  return nullptr;
}

const char* FindReason(absl::Span<const std::pair<absl::string_view, const char*>> table,
                       absl::string_view name) {
  for (const auto& [n, reason] : table) {
    if (SameWord(name, n)) return reason;
  }
  return nullptr;
}

}  // namespace

const ItemDef* FindItem(absl::string_view name) { return FindByName<ItemDef>(kItems, name); }
const ActionDef* FindAction(absl::string_view name) { return FindByName<ActionDef>(kActions, name); }
const FieldDef* FindField(const ItemDef& def, absl::string_view name) {
  return FindByName<FieldDef>(def.fields, name);
}
const ParamDef* FindParam(const ActionDef& def, absl::string_view name) {
  return FindByName<ParamDef>(def.params, name);
}
const char* UnsupportedItemReason(absl::string_view name) { return FindReason(kUnsupportedItems, name); }
const char* UnsupportedActionReason(absl::string_view name) { return FindReason(kUnsupportedActions, name); }

}  // namespace drsim::testpmd
