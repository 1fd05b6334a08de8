// Which match-layout fields the software NIC's parser fills. A matcher on a field it does not fill would
// accept rules that never match, so the compiler refuses such masks instead (as rdma-core refuses fields
// a device's flex parsers lack). Today: outer L2 (two VLAN tags), outer L3/L4, ICMP/ICMPv6, TCP seq/ack,
// source_port/source_sqn and the metadata registers; not yet tunnels, inner headers, MPLS or RoCE BTH.
#ifndef DRSIM_HW_PARSER_CAPS_H_
#define DRSIM_HW_PARSER_CAPS_H_

#include "hw/match_layout.h"

namespace drsim::hw {

bool SoftwareNicParses(Field field);

}  // namespace drsim::hw

#endif  // DRSIM_HW_PARSER_CAPS_H_
