// QUERY_HCA_CAP (0x100): the capability pages of a function of the software NIC.
//
// op_mod = (cap type << 1) | current(1)/max(0); nothing is configurable, so both read the same. Pages:
// general device (type 0), Ethernet offloads (1), NIC flow table (7), eSwitch flow table (8), eSwitch (9)
// and QoS (0xc); any other type fails as firmware fails a type it lacks (EREMOTEIO, BAD_PARAM). Offsets
// follow mlx5_ifc.h (Linux, rdma-core, DPDK's mlx5_prm.h agree on every field used here). A field not set
// below reads 0. What is set, and why:
//
//   general device
//     vhca_id                          the function's vport (hw::DeviceInfo::vhca_id)
//     port_type 1, num_ports 1         one Ethernet port
//     nic_flow_table 1                 NIC_RX/NIC_TX steering on every function
//     eswitch_manager,                 1 on the PF only: it alone creates FDB domains
//       vport_group_manager
//     eth_net_offloads 1, qos 1        say the two pages below exist (DPDK reads the flow table pages only
//                                      after eth_net_offloads)
//     flow_counter_bulk_alloc 0xff     bulks of 128 << i counters, i = 0..7 (sim::CounterBank takes any
//     log_max_flow_counter_bulk 23     bulk up to 2^23) ...
//     max_flow_counter 2^24            ... out of 2^24 counter ids (CounterBank::kMaxCounters)
//     log_max_rq, _tir, _rqt 24        no limits of the NIC's own; queue and table numbers are 24-bit
//     log_max_rqt_size 16              the RQ tables CREATE_RQT takes (kMaxRqtSize in devx_tir.cc)
//     general_obj_types                bits 0x0b (GENEVE TLV option), 0x24 (ASO flow meter), 0x25
//                                      (ASO flow hit) and 0x31 (conn_track_offload)
//     max_geneve_tlv_options 1,        the GENEVE TLV option parser's limits (sim/geneve_option.h): one
//       max_geneve_tlv_option_data_len 7 option per device, as DPDK's mlx5 guide says of SW steering
//     flex_parser_id_geneve_opt_0 0    option 0's data is flex parser sample 0 (lookup type
//                                      FLEX_PARSER_0, as the matcher compiler builds it)
//     steering_format_version 1        ConnectX-6 Dx (STE v1): the action order the compiler follows
//     flex_parser_protocols            a bit per protocol the parser fills the fields of (GENEVE, its
//                                      option 0, VXLAN-GPE, MPLS over GRE and UDP, ICMP, ICMPv6, GTP-U and
//                                      its DWs): hw::Device::parsed_fields()
//     left 0: hca_cap_2 (no page 0x20), roce, alloc_flow_counter_pd, flow_counters_dump (no mkeys), and
//     the QP/CQ/MR sizes, which the verbs device reports through ibv_query_device.
//   Ethernet offloads: the page exists, every field 0; checksum, VLAN, LSO and LRO offloads belong to the
//     data path, which reports what it does through verbs.
//   NIC flow table
//     encap_general_header 1           any encapsulation header (reformat data) ...
//     max_encap_header_size 128        ... of up to 128 bytes (dr::Action's kMaxEncapBytes)
//     log_max_packet_reformat_context  24: reformat actions are not a counted resource
//     receive properties               ft_support, flow_tag, flow_counter, flow_modify_en (modify header),
//                                      reformat, decap, reformat_l3_tunnel_to_l2, pop_vlan(_2),
//                                      push_vlan(_2), reformat_and_vlan_action, modify_and_vlan_action,
//                                      reformat_and_modify_action, sw_owner_v2, and the limits below
//     transmit properties              the same without flow_tag (NIC_RX only), decap and
//                                      reformat_l3_tunnel_to_l2 (decapsulation is NIC_RX's), with
//                                      reformat_l2_to_l3_tunnel
//     RDMA and sniffer properties 0    no RDMA or sniffer steering
//     ft_field_support,                a bit per header field the parser fills (kFieldSupportBits):
//       ft_field_bitmask_support       the outer and inner L2-L4 fields, GRE, VXLAN, GENEVE (VNI, OAM,
//                                      protocol type, option length, option 0), MPLS, BTH
//                                      dst QP, source port/SQN (not on transmit, whose tables see
//                                      their own function's frames), reg_a; the same bits for masks,
//                                      as every field takes any mask
//     ft_field_support_2               tunnel_header_0_1/2_3 and outer/inner_ipv4_ihl when the parser
//                                      fills them (misc5 tunnel headers, the IHL fields)
//   eSwitch flow table (the eSwitch manager's; 0 on a VF, which has no FDB)
//     FDB properties                   receive and transmit combined (an FDB rule runs on both pipes),
//                                      without flow_tag, which no FDB rule takes
//   eSwitch: esw_manager_vport_number_valid 1, esw_manager_vport_number 0 (the PF).
//   QoS: flow_meter_old 1 (srTCM/trTCM meters, sim/meter.h), log_max_flow_meter 24; ASO meters:
//     log_meter_aso_granularity 0, log_meter_aso_max_alloc 16 (an object's log_obj_range, lines of two
//     meters), log_max_num_meter_aso 24. flow_meter_reg_id 0x2a: reg_c_1, 3 and 5, the registers both
//     kinds of meter colour (a legacy meter takes any reg_c 0..7, an ASO action only 1, 3 or 5, as
//     rdma-core's dr_action_create_aso checks); DPDK takes its ASO register from this bitmap (reg_c_3
//     when set), rdma-core's test_flow_meter its legacy meter's register (the lowest bit). flow_meter 1:
//     a meter writes its colour into the register's low byte and keeps the other 24 bits, so a program
//     may keep a meter id beside it (DPDK's mtr_reg_share).
//
// Limits that are properties of each flow table type: log_max_ft_size 24 (entries per table: tables grow),
// max_ft_level 255 (the largest level the field holds; the compiler takes any), log_max_ft_num 24,
// log_max_flow 24, log_max_destination 24 (dest arrays take any count), log_max_flow_counter 24,
// log_max_modify_header_context 24, max_modify_header_actions 255 (lists are not limited), and
// log_max_ft_sampler_num 24.
//
// sw_owner_v2 says the flow tables are programmed by software (rdma-core's mlx5dv_dr_* API), which is
// exactly what a program gets on this device: DPDK and rdma-core's DR read it to choose software steering.
// The ICM addresses that real hardware reports beside it (sw_steering_*_icm_address) stay 0: the DR layer
// on this device is drsim's, which needs none.
#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>

#include "absl/strings/str_format.h"
#include "capi/objects.h"
#include "hw/match_layout.h"
#include "hw/parsed_fields.h"
#include "sim/nic.h"
#include "soft_mlx5/devx_handlers.h"

namespace drsim::soft_mlx5 {
namespace {

constexpr size_t kPageBytes = 4096;  // the union of capability pages (0x8000 bits)
using Page = std::array<uint8_t, kPageBytes>;

enum CapType : uint16_t {
  kGeneralDevice = 0x0,
  kEthernetOffloads = 0x1,
  kNicFlowTable = 0x7,
  kEswitchFlowTable = 0x8,
  kEswitch = 0x9,
  kQos = 0xc,
};

// query_hca_cap_in.
constexpr PrmField kOtherFunction{0x40, 1};
constexpr PrmField kFunctionId{0x50, 16};

// cmd_hca_cap (general device).
constexpr PrmField kVhcaId{0x030, 16};
constexpr PrmField kVportGroupManager{0x1a0, 1};
constexpr PrmField kNicFlowTableCap{0x1a6, 1};
constexpr PrmField kEswitchManager{0x1a7, 1};
constexpr PrmField kPortType{0x1b6, 2};
constexpr PrmField kNumPorts{0x1b8, 8};
constexpr PrmField kQosCap{0x21b, 1};
constexpr PrmField kEthNetOffloads{0x21c, 1};
constexpr PrmField kMaxFlowCounter31_16{0x2c0, 16};
constexpr PrmField kFlowCounterBulkAlloc{0x310, 8};
constexpr PrmField kLogMaxFlowCounterBulk{0x348, 8};
constexpr PrmField kMaxFlowCounter15_0{0x350, 16};
constexpr PrmField kLogMaxRq{0x363, 5};
constexpr PrmField kLogMaxTir{0x373, 5};
constexpr PrmField kLogMaxRqt{0x38b, 5};
constexpr PrmField kLogMaxRqtSize{0x393, 5};
constexpr PrmField kGeneralObjTypes{0x400, 64};
constexpr PrmField kSteeringFormatVersion{0x444, 4};
constexpr PrmField kFlexParserProtocols{0x540, 32};
constexpr PrmField kMaxGeneveTlvOptions{0x560, 8};
constexpr PrmField kMaxGeneveTlvOptionDataLen{0x56b, 5};
constexpr PrmField kFlexParserIdGeneveOpt0{0x6c4, 4};

constexpr uint64_t kObjTypeAsoFlowMeter = 0x24;
constexpr uint64_t kObjTypeAsoFlowHit = 0x25;
constexpr uint64_t kObjTypeConnTrackOffload = 0x31;
constexpr uint64_t kSteeringFormatConnectX6Dx = 1;

// flow_table_nic_cap and flow_table_eswitch_cap.
constexpr PrmField kEncapGeneralHeader{0x20, 1};
constexpr PrmField kLogMaxPacketReformatContext{0x2b, 5};
constexpr PrmField kMaxEncapHeaderSize{0x36, 10};
constexpr uint32_t kNicReceiveProperties = 0x200;
constexpr uint32_t kNicTransmitProperties = 0x800;
constexpr uint32_t kFdbProperties = 0x200;
constexpr uint32_t kNicReceiveFieldSupport2 = 0x1400;
constexpr uint32_t kNicTransmitFieldSupport2 = 0x1700;
constexpr uint32_t kFdbFieldSupport2 = 0x1400;

// flow_table_prop_layout, from the start of one layout.
namespace props {
constexpr PrmField kFtSupport{0x00, 1};
constexpr PrmField kFlowTag{0x01, 1};
constexpr PrmField kFlowCounter{0x02, 1};
constexpr PrmField kFlowModifyEn{0x03, 1};
constexpr PrmField kReformat{0x07, 1};
constexpr PrmField kDecap{0x08, 1};
constexpr PrmField kPopVlan{0x0a, 1};
constexpr PrmField kPushVlan{0x0b, 1};
constexpr PrmField kPopVlan2{0x0d, 1};
constexpr PrmField kPushVlan2{0x0e, 1};
constexpr PrmField kReformatAndVlanAction{0x0f, 1};
constexpr PrmField kModifyAndVlanAction{0x10, 1};
constexpr PrmField kReformatL3TunnelToL2{0x12, 1};
constexpr PrmField kReformatL2ToL3Tunnel{0x13, 1};
constexpr PrmField kReformatAndModifyAction{0x14, 1};
constexpr PrmField kSwOwnerV2{0x1e, 1};
constexpr PrmField kLogMaxFtSize{0x22, 6};
constexpr PrmField kLogMaxModifyHeaderContext{0x28, 8};
constexpr PrmField kMaxModifyHeaderActions{0x30, 8};
constexpr PrmField kMaxFtLevel{0x38, 8};
constexpr PrmField kLogMaxFtSamplerNum{0x48, 8};
constexpr PrmField kLogMaxFtNum{0x78, 8};
constexpr PrmField kLogMaxFlowCounter{0x90, 8};
constexpr PrmField kLogMaxDestination{0x98, 8};
constexpr PrmField kLogMaxFlow{0xb8, 8};
}  // namespace props

// flow_table_fields_supported (ft_field_support, then ft_field_bitmask_support), from the start of one
// flow_table_prop_layout. Each bit is set when the parser fills every field listed for it: a program that
// gates a match on a bit (rdma-core's tests do for GENEVE) finds it set exactly when such rules can match.
// Bit offsets are rdma-core's mlx5_ifc.h (the kernel's agrees); pyverbs' tests/mlx5_prm_structs.py differs
// from both in bits 0x37-0x4c (it names the bits rdma-core reserves and swaps MPLS over UDP and over GRE),
// which this page leaves as rdma-core has them. Bits rdma-core reserves (0x37-0x3d, 0x42-0x44, 0x60-0x7f)
// read 0, and so does metadata_reg_b (0x3e): SW steering's match layout has no reg_b.
constexpr uint32_t kFieldSupport = 0x100;
constexpr uint32_t kFieldBitmaskSupport = 0x180;
struct SupportBit {
  uint32_t bit;
  std::initializer_list<hw::Field> fields;
};
using F = hw::Field;
// The bits of one header stack: the outer one's at `bit`, the inner one's at `bit` + 0x20.
struct StackBit {
  uint32_t bit;
  std::initializer_list<hw::Field> outer, inner;
};
constexpr uint32_t kInnerStackBits = 0x20;
const StackBit kStackBits[] = {
    {0x00, {F::kOuterDmac47_16, F::kOuterDmac15_0}, {F::kInnerDmac47_16, F::kInnerDmac15_0}},
    {0x01, {F::kOuterSmac47_16, F::kOuterSmac15_0}, {F::kInnerSmac47_16, F::kInnerSmac15_0}},
    {0x02, {F::kOuterEthertype}, {F::kInnerEthertype}},
    {0x03, {F::kOuterIpVersion}, {F::kInnerIpVersion}},
    {0x04, {F::kOuterFirstPrio}, {F::kInnerFirstPrio}},
    {0x05, {F::kOuterFirstCfi}, {F::kInnerFirstCfi}},
    {0x06, {F::kOuterFirstVid}, {F::kInnerFirstVid}},
    {0x07, {F::kOuterIpTtlHoplimit}, {F::kInnerIpTtlHoplimit}},
    {0x08, {F::kOuterSecondPrio}, {F::kInnerSecondPrio}},
    {0x09, {F::kOuterSecondCfi}, {F::kInnerSecondCfi}},
    {0x0a, {F::kOuterSecondVid}, {F::kInnerSecondVid}},
    {0x0b, {F::kOuterIpv6FlowLabel}, {F::kInnerIpv6FlowLabel}},
    {0x0c, {F::kOuterSrcIp127_96, F::kOuterSrcIp31_0}, {F::kInnerSrcIp127_96, F::kInnerSrcIp31_0}},
    {0x0d, {F::kOuterDstIp127_96, F::kOuterDstIp31_0}, {F::kInnerDstIp127_96, F::kInnerDstIp31_0}},
    {0x0e, {F::kOuterFrag}, {F::kInnerFrag}},
    {0x0f, {F::kOuterIpProtocol}, {F::kInnerIpProtocol}},
    {0x10, {F::kOuterIpEcn}, {F::kInnerIpEcn}},
    {0x11, {F::kOuterIpDscp}, {F::kInnerIpDscp}},
    {0x12, {F::kOuterUdpSport}, {F::kInnerUdpSport}},
    {0x13, {F::kOuterUdpDport}, {F::kInnerUdpDport}},
    {0x14, {F::kOuterTcpSport}, {F::kInnerTcpSport}},
    {0x15, {F::kOuterTcpDport}, {F::kInnerTcpDport}},
    {0x16, {F::kOuterTcpFlags}, {F::kInnerTcpFlags}},
};
// The other bits.
const SupportBit kFieldSupportBits[] = {
    {0x17, {F::kGreProtocol}},
    {0x18, {F::kGreKeyH, F::kGreKeyL}},
    {0x19, {F::kVxlanVni}},
    {0x1a, {F::kGeneveVni}},
    {0x1b, {F::kGeneveOam}},
    {0x1c, {F::kGeneveProtocolType}},
    {0x1d, {F::kGeneveOptLen}},
    {0x1e, {F::kSourceVhcaPort}},
    {0x1f, {F::kSourcePort}},
    {0x3f, {F::kMetadataRegA}},
    {0x40, {F::kGeneveTlvOption0Data}},
    {0x41, {F::kGeneveTlvOption0Exist}},
    {0x45, {F::kOuterFirstMplsOverUdpTtl}},
    {0x46, {F::kOuterFirstMplsOverUdpSBos}},
    {0x47, {F::kOuterFirstMplsOverUdpExp}},
    {0x48, {F::kOuterFirstMplsOverUdpLabel}},
    {0x49, {F::kOuterFirstMplsOverGreTtl}},
    {0x4a, {F::kOuterFirstMplsOverGreSBos}},
    {0x4b, {F::kOuterFirstMplsOverGreExp}},
    {0x4c, {F::kOuterFirstMplsOverGreLabel}},
    {0x4d, {F::kInnerFirstMplsTtl}},
    {0x4e, {F::kInnerFirstMplsSBos}},
    {0x4f, {F::kInnerFirstMplsExp}},
    {0x50, {F::kInnerFirstMplsLabel}},
    {0x51, {F::kOuterFirstMplsTtl}},
    {0x52, {F::kOuterFirstMplsSBos}},
    {0x53, {F::kOuterFirstMplsExp}},
    {0x54, {F::kOuterFirstMplsLabel}},
    {0x55, {F::kOuterEmdTag}},
    {0x56, {F::kInnerEspSpi}},
    {0x57, {F::kOuterEspSpi}},
    {0x58, {F::kInnerIpTtlHoplimit}},
    {0x59, {F::kOuterIpTtlHoplimit}},
    {0x5a, {F::kBthDstQp}},
    {0x5b, {F::kInnerSvlanTag}},
    {0x5c, {F::kInnerSecondSvlanTag}},
    {0x5d, {F::kOuterSvlanTag}},
    {0x5e, {F::kOuterSecondSvlanTag}},
    {0x5f, {F::kSourceSqn}},
};

// flow_table_fields_supported_2, from its start.
constexpr PrmField kTunnelHeader2_3{0x0f, 1};
constexpr PrmField kTunnelHeader0_1{0x10, 1};
constexpr PrmField kInnerIpv4Ihl{0x14, 1};
constexpr PrmField kOuterIpv4Ihl{0x15, 1};

// e_switch_cap.
constexpr PrmField kEswManagerVportNumberValid{0x60, 1};
constexpr PrmField kEswManagerVportNumber{0x70, 16};

// qos_cap.
constexpr PrmField kFlowMeterOld{0x07, 1};
constexpr PrmField kLogMaxFlowMeter{0x10, 8};
constexpr PrmField kFlowMeterRegId{0x18, 8};
constexpr PrmField kFlowMeter{0x28, 1};
constexpr uint64_t kMeterColourRegisters = (1u << 1) | (1u << 3) | (1u << 5);  // bit i: reg_c_i
constexpr PrmField kLogMeterAsoGranularity{0x123, 5};
constexpr PrmField kLogMeterAsoMaxAlloc{0x12b, 5};
constexpr PrmField kLogMaxNumMeterAso{0x133, 5};

// The size limits this file reports as "not limited by the NIC" (see above).
constexpr uint64_t kUnlimitedLog = 24;

void Set(Page& page, PrmField f, uint64_t value) { PrmSet(absl::MakeSpan(page), f, value); }

// The flex parser protocol bits (cmd_hca_cap.flex_parser_protocols) and a field each proves parsed.
struct FlexParser {
  uint32_t bit;
  hw::Field field;
};
constexpr FlexParser kFlexParsers[] = {
    {1u << 3, hw::Field::kGeneveVni},
    {1u << 4, hw::Field::kOuterFirstMplsOverGreLabel},
    {1u << 5, hw::Field::kOuterFirstMplsOverUdpLabel},
    {1u << 7, hw::Field::kOuterVxlanGpeVni},
    {1u << 8, hw::Field::kIcmpType},
    {1u << 9, hw::Field::kIcmpv6Type},
    {1u << 10, hw::Field::kGeneveTlvOption0Data},
    {1u << 11, hw::Field::kGtpuMsgType},
    {1u << 16, hw::Field::kGtpuDw2},
    {1u << 17, hw::Field::kGtpuFirstExtDw0},
    {1u << 18, hw::Field::kGtpuDw0},
    {1u << 19, hw::Field::kGtpuTeid},
};

void GeneralDevicePage(const sim::Function& fn, Page& page) {
  Set(page, kVhcaId, fn.Describe().vhca_id);
  Set(page, kPortType, 1);  // Ethernet
  Set(page, kNumPorts, fn.Describe().num_ports);
  Set(page, kNicFlowTableCap, 1);
  Set(page, kEswitchManager, fn.IsEswitchManager());
  Set(page, kVportGroupManager, fn.IsEswitchManager());
  Set(page, kEthNetOffloads, 1);
  Set(page, kQosCap, 1);
  Set(page, kFlowCounterBulkAlloc, 0xff);
  Set(page, kLogMaxFlowCounterBulk, 23);
  Set(page, kMaxFlowCounter31_16, (1u << 24) >> 16);
  Set(page, kMaxFlowCounter15_0, 0);
  Set(page, kLogMaxRq, kUnlimitedLog);
  Set(page, kLogMaxTir, kUnlimitedLog);
  Set(page, kLogMaxRqt, kUnlimitedLog);
  Set(page, kLogMaxRqtSize, 16);
  Set(page, kGeneralObjTypes,
      (uint64_t{1} << kObjTypeGeneveTlvOption) | (uint64_t{1} << kObjTypeAsoFlowMeter) |
          (uint64_t{1} << kObjTypeAsoFlowHit) | (uint64_t{1} << kObjTypeConnTrackOffload));
  Set(page, kMaxGeneveTlvOptions, sim::GeneveOptionParser::kMaxOptions);
  Set(page, kMaxGeneveTlvOptionDataLen, sim::GeneveOptionParser::kMaxDataWords);
  Set(page, kFlexParserIdGeneveOpt0, 0);
  Set(page, kSteeringFormatVersion, kSteeringFormatConnectX6Dx);
  uint32_t flex = 0;
  for (const FlexParser& p : kFlexParsers) {
    if (fn.parsed_fields().Contains(p.field)) flex |= p.bit;
  }
  Set(page, kFlexParserProtocols, flex);
}

// Which pipes a flow table type's rules run on.
struct Pipes {
  bool rx;
  bool tx;
};

void TableProperties(Page& page, uint32_t base, Pipes pipes, bool flow_tag) {
  auto set = [&](PrmField f, uint64_t v) { Set(page, f.At(base), v); };
  set(props::kFtSupport, 1);
  set(props::kFlowTag, flow_tag);
  set(props::kFlowCounter, 1);
  set(props::kFlowModifyEn, 1);
  set(props::kReformat, 1);
  set(props::kDecap, pipes.rx);
  set(props::kReformatL3TunnelToL2, pipes.rx);
  set(props::kReformatL2ToL3Tunnel, pipes.tx);
  set(props::kPopVlan, 1);
  set(props::kPushVlan, 1);
  set(props::kPopVlan2, 1);
  set(props::kPushVlan2, 1);
  set(props::kReformatAndVlanAction, 1);
  set(props::kModifyAndVlanAction, 1);
  set(props::kReformatAndModifyAction, 1);
  set(props::kSwOwnerV2, 1);
  set(props::kLogMaxFtSize, kUnlimitedLog);
  set(props::kLogMaxModifyHeaderContext, kUnlimitedLog);
  set(props::kMaxModifyHeaderActions, 255);
  set(props::kMaxFtLevel, 255);
  set(props::kLogMaxFtSamplerNum, kUnlimitedLog);
  set(props::kLogMaxFtNum, kUnlimitedLog);
  set(props::kLogMaxFlowCounter, kUnlimitedLog);
  set(props::kLogMaxDestination, kUnlimitedLog);
  set(props::kLogMaxFlow, kUnlimitedLog);
}

void FieldSupport2(const sim::Function& fn, Page& page, uint32_t base) {
  const hw::ParsedFields& parsed = fn.parsed_fields();
  Set(page, kTunnelHeader0_1.At(base),
      parsed.Contains(hw::Field::kTunnelHeader0) && parsed.Contains(hw::Field::kTunnelHeader1));
  Set(page, kTunnelHeader2_3.At(base),
      parsed.Contains(hw::Field::kTunnelHeader2) && parsed.Contains(hw::Field::kTunnelHeader3));
  Set(page, kOuterIpv4Ihl.At(base), parsed.Contains(hw::Field::kOuterIpv4Ihl));
  Set(page, kInnerIpv4Ihl.At(base), parsed.Contains(hw::Field::kInnerIpv4Ihl));
}

// ft_field_support, and the same in ft_field_bitmask_support: the compiler takes any mask on a field.
// NIC_TX tables do not match the frame's source (source_port, source_sqn): the function that sent it is
// the table's own (rdma-core's dr_matcher builds src_gvmi_qpn only on NIC_RX and FDB).
void FieldSupport(const sim::Function& fn, Page& page, uint32_t properties, bool nic_tx) {
  const hw::ParsedFields& parsed = fn.parsed_fields();
  auto set = [&](uint32_t bit, std::initializer_list<hw::Field> fields) {
    const bool all = std::all_of(fields.begin(), fields.end(), [&](F f) {
      return parsed.Contains(f) && !(nic_tx && (f == F::kSourcePort || f == F::kSourceSqn));
    });
    Set(page, PrmField{bit, 1}.At(properties + kFieldSupport), all);
    Set(page, PrmField{bit, 1}.At(properties + kFieldBitmaskSupport), all);
  };
  for (const StackBit& b : kStackBits) {
    set(b.bit, b.outer);
    set(b.bit + kInnerStackBits, b.inner);
  }
  for (const SupportBit& b : kFieldSupportBits) set(b.bit, b.fields);
}

void ReformatLimits(Page& page) {
  Set(page, kEncapGeneralHeader, 1);
  Set(page, kLogMaxPacketReformatContext, kUnlimitedLog);
  Set(page, kMaxEncapHeaderSize, 128);
}

void NicFlowTablePage(const sim::Function& fn, Page& page) {
  ReformatLimits(page);
  TableProperties(page, kNicReceiveProperties, {/*rx=*/true, /*tx=*/false}, /*flow_tag=*/true);
  TableProperties(page, kNicTransmitProperties, {/*rx=*/false, /*tx=*/true}, /*flow_tag=*/false);
  FieldSupport(fn, page, kNicReceiveProperties, /*nic_tx=*/false);
  FieldSupport(fn, page, kNicTransmitProperties, /*nic_tx=*/true);
  FieldSupport2(fn, page, kNicReceiveFieldSupport2);
  FieldSupport2(fn, page, kNicTransmitFieldSupport2);
}

void EswitchFlowTablePage(const sim::Function& fn, Page& page) {
  if (!fn.IsEswitchManager()) return;
  ReformatLimits(page);
  TableProperties(page, kFdbProperties, {/*rx=*/true, /*tx=*/true}, /*flow_tag=*/false);
  FieldSupport(fn, page, kFdbProperties, /*nic_tx=*/false);
  FieldSupport2(fn, page, kFdbFieldSupport2);
}

void EswitchPage(Page& page) {
  Set(page, kEswManagerVportNumberValid, 1);
  Set(page, kEswManagerVportNumber, 0);
}

void QosPage(Page& page) {
  Set(page, kFlowMeterOld, 1);
  Set(page, kLogMaxFlowMeter, kUnlimitedLog);
  Set(page, kFlowMeterRegId, kMeterColourRegisters);
  Set(page, kFlowMeter, 1);
  Set(page, kLogMeterAsoGranularity, 0);
  Set(page, kLogMeterAsoMaxAlloc, 16);
  Set(page, kLogMaxNumMeterAso, kUnlimitedLog);
}

}  // namespace

Outcome QueryHcaCap(const drsim_function_context& fn, Mailbox m) {
  if (Outcome o = RequireInput(m, kFunctionId, "function_id"); !o.ok()) return o;
  capi::Context& ctx = *fn.owner;
  uint16_t vport = fn.vport;
  if (PrmGet(m.in, kOtherFunction) != 0) {
    const uint64_t id = PrmGet(m.in, kFunctionId);
    if (!ctx.function(fn.vport).IsEswitchManager()) {
      return FirmwareError(PrmStatus::kBadParam, kOtherFunction,
                           absl::StrFormat("other_function: vport %d is not the eSwitch manager, which "
                                           "alone may query another function",
                                           fn.vport));
    }
    if (id >= ctx.functions.size()) {
      return FirmwareError(PrmStatus::kBadParam, kFunctionId,
                           absl::StrFormat("function_id %d: the NIC's functions are 0 (PF) to %d", id,
                                           ctx.functions.size() - 1));
    }
    vport = static_cast<uint16_t>(id);
  }
  const sim::Function& function = ctx.function(vport);
  const uint16_t type = static_cast<uint16_t>(PrmGet(m.in, prm::kOpMod) >> 1);
  Page page{};
  switch (type) {
    case kGeneralDevice:
      GeneralDevicePage(function, page);
      break;
    case kEthernetOffloads:
      break;
    case kNicFlowTable:
      NicFlowTablePage(function, page);
      break;
    case kEswitchFlowTable:
      EswitchFlowTablePage(function, page);
      break;
    case kEswitch:
      EswitchPage(page);
      break;
    case kQos:
      QosPage(page);
      break;
    default:
      return FirmwareError(
          PrmStatus::kBadParam, prm::kOpMod,
          absl::StrFormat("op_mod 0x%x: capability type 0x%x is not one the software NIC has (0 general, "
                          "1 Ethernet offloads, 7 NIC flow table, 8 eSwitch flow table, 9 eSwitch, 0xc "
                          "QoS)",
                          PrmGet(m.in, prm::kOpMod), type));
  }
  // The page follows the 16-byte header; an output shorter than the page gets its beginning (pyverbs'
  // QueryCmdHcaCapOut reads 2048 bytes of it).
  const size_t n = std::min(kPageBytes, m.out.size() - prm::kOutHeaderBytes);
  std::memcpy(m.out.data() + prm::kOutHeaderBytes, page.data(), n);
  return Done();
}

}  // namespace drsim::soft_mlx5
