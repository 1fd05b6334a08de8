// Which match-layout fields the software NIC's parser fills. A matcher on a field it does not fill would
// accept rules that never match, so the compiler refuses such masks instead (as rdma-core refuses fields
// a device's flex parsers lack). Filled: outer and inner L2 (two VLAN tags each), L3 and L4, ICMP/ICMPv6,
// TCP seq/ack, source_port/source_sqn, the metadata registers, one level of tunnel (VXLAN, VXLAN-GPE,
// GENEVE with option 0, GRE, MPLS over Ethernet/UDP/GRE, GTP-U, the raw tunnel header words) and RoCE v2
// BTH. Not filled: the l3_ok/l4_ok/checksum-ok bits, ESP SPIs, the vhca and EMD fields (the matcher
// compiler refuses all of these first, as rdma-core's STE builders do), misc4's programmable samples,
// misc5's MACsec tags, and misc2.inner_first_mpls_* (MPLS inside a tunnel's inner Ethernet frame would be a
// second tunnel level, which the parser does not parse).
#ifndef DRSIM_HW_PARSER_CAPS_H_
#define DRSIM_HW_PARSER_CAPS_H_

#include "hw/match_layout.h"

namespace drsim::hw {

bool SoftwareNicParses(Field field);

}  // namespace drsim::hw

#endif  // DRSIM_HW_PARSER_CAPS_H_
