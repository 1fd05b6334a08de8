// RoCE v2 UDP source-port entropy: the source port a RoCE v2 sender puts in the UDP header so that ECMP
// routers, load balancers and LAG switches that do not parse RoCE spread its flows, as proposed by the
// RFC mail "[RFC] RoCE v2.0 UDP Source Port Entropy" (Alex Rosenbaum; see docs/roce_entropy.md).
//
// Every port is in the IANA ephemeral range 0xC000..0xFFFF (49152..65535; rdma-core's verbs.h names it
// IB_ROCE_UDP_ENCAP_VALID_PORT_MIN/MAX): the functions OR 0xC000 into a 16-bit hash, so bits 15..14 are
// always set. The hashes use XOR, so both ends of a connection compute
// the same port (symmetric), except the UD multicast case, which has no reverse direction.
//
// Folding a 24-bit QP number: the mail treats the QPN as a byte array QP[0..2] and folds it with
// QP[0] ^= QP[2], leaving the result in "QP[0..15]". Here QP[0] is the least significant byte (the QPN
// as a little-endian 24-bit value, bits 7..0) and QP[0..15] are bits 15..0, so
//   Fold(qpn) = (qpn & 0xFFFF) ^ (qpn >> 16).
// docs/roce_entropy.md explains why this reading and not the network-order one.
//
// The mail's UD formula says "AND 0xC000"; that is a typo for OR 0xC000 (it would give only 0x0000,
// 0x4000, 0x8000 or 0xC000, three of them outside the range the same mail mandates), so UD uses OR too.
#ifndef DRSIM_SIM_ROCE_ENTROPY_H_
#define DRSIM_SIM_ROCE_ENTROPY_H_

#include <infiniband/verbs.h>

#include <cstdint>

#include "absl/status/statusor.h"

namespace drsim::sim {

inline constexpr uint32_t kMaxQpn = 0xFFFFFF;        // QP numbers are 24 bits
inline constexpr uint32_t kMulticastQpn = 0xFFFFFF;  // UD destination QPN of a multicast send

// RDMA IP CM service: (DstPort XOR SrcPort) OR 0xC000, where `cm_dst_port` is the port of the CM REQ's
// service ID and `cm_src_port` the source port of its private data (IP CM header). Never fails.
uint16_t RoceCmUdpSport(uint16_t cm_dst_port, uint16_t cm_src_port);

// The folded QP number, (qpn & 0xFFFF) ^ (qpn >> 16). InvalidArgument when qpn > 0xFFFFFF.
absl::StatusOr<uint16_t> FoldQpn(uint32_t qpn);

// RC QP (set once in the QP context): Fold(src) ^ Fold(dst) | 0xC000 when the QPNs differ, else
// Fold(src) | 0xC000. InvalidArgument, naming the QPN, when either is over 24 bits or is 0xFFFFFF (the
// multicast QPN, which no RC QP has).
absl::StatusOr<uint16_t> RoceRcUdpSport(uint32_t src_qpn, uint32_t dst_qpn);

// UD QP (per send): Fold(src) ^ Fold(dst) | 0xC000 when the QPNs differ and dst is not the multicast
// QPN 0xFFFFFF, else Fold(src) | 0xC000. InvalidArgument, naming the QPN, when either is over 24 bits or
// src is 0xFFFFFF.
absl::StatusOr<uint16_t> RoceUdUdpSport(uint32_t src_qpn, uint32_t dst_qpn);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_ROCE_ENTROPY_H_
