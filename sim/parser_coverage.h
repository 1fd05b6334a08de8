// The match-layout fields the software NIC's packet parser (sim/packet_parser.h) fills, as the
// hw::ParsedFields its functions report to the driver (hw::Device::parsed_fields()).
//
// Filled: outer and inner L2 (two VLAN tags each), L3 and L4, ICMP/ICMPv6, TCP seq/ack,
// source_port/source_sqn, the metadata registers, one level of tunnel (VXLAN, VXLAN-GPE, GENEVE with
// option 0, GRE, MPLS over Ethernet/UDP/GRE, GTP-U, the raw tunnel header words) and RoCE v2 BTH.
// Not filled: the l3_ok/l4_ok/checksum-ok bits, ESP SPIs, the vhca and EMD fields (the matcher compiler
// refuses all of these first, as rdma-core's STE builders do), misc4's programmable samples, misc5's
// MACsec tags, and misc2.inner_first_mpls_* (MPLS inside a tunnel's inner Ethernet frame would be a
// second tunnel level, which the parser does not parse).
#ifndef DRSIM_SIM_PARSER_COVERAGE_H_
#define DRSIM_SIM_PARSER_COVERAGE_H_

#include "hw/parsed_fields.h"

namespace drsim::sim {

const hw::ParsedFields& SoftwareParserFields();

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PARSER_COVERAGE_H_
