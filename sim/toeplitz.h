// The Toeplitz hash of Receive Side Scaling (Microsoft's RSS specification), as a ConnectX TIR computes
// it for rx_hash_fn = TOEPLITZ, and the RSS hash inputs built from header fields.
//
// The hash: for every bit of the input, most significant bit of input[0] first, when the bit is set the
// result is XORed with the 32 key bits starting at that bit's position (the key's leftmost 32 bits for
// the first input bit, then one bit further right per input bit). A key must therefore be at least 4
// bytes longer than the input; the 40-byte Microsoft verification key hashes inputs of up to 36 bytes
// (IPv6 addresses and both ports).
//
// The inputs: the selected fields concatenated in the specification's order — source address,
// destination address, source port, destination port — each in network byte order. Field selection uses
// rdma-core's `enum ibv_rx_hash_fields` (<infiniband/verbs.h>), the mask an RSS QP's TIR is created with:
// an unselected field is left out of the input, as the specification's address-only inputs leave out the
// ports.
//
// Symmetric hashing (the same hash for both directions of a flow) follows the two input transforms Linux
// defines for `ethtool -X ... symmetric-xor` and `symmetric-or-xor` (include/uapi/linux/ethtool.h,
// RXH_XFRM_SYM_XOR and RXH_XFRM_SYM_OR_XOR). mlx5e reports its TIRs' rx_hash_symmetric bit as
// symmetric-or-xor, so that is the transform modelled for mlx5. Note that the kernel's mlx5_ib sets
// rx_hash_symmetric on the TIR of every Toeplitz RSS QP it creates (create_rss_raw_qp_tir): a verbs RSS
// QP on a ConnectX hashes with kOrXor, not with the plain inputs of Microsoft's specification.
#ifndef DRSIM_SIM_TOEPLITZ_H_
#define DRSIM_SIM_TOEPLITZ_H_

#include <infiniband/verbs.h>

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/net_addr.h"

namespace drsim::sim {

// The key of Microsoft's RSS verification suite (also the default of many drivers and DPDK's tests).
inline constexpr std::array<uint8_t, 40> kMicrosoftRssKey = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

// The Toeplitz hash of `input` under `key`. InvalidArgument (naming both lengths) when the key is shorter
// than input.size() + 4 bytes. An empty input hashes to 0.
absl::StatusOr<uint32_t> ToeplitzHash(absl::Span<const uint8_t> input,
                                      absl::Span<const uint8_t> key = kMicrosoftRssKey);

// The specification's standard inputs, network byte order. Addresses are hw:: values (host-order IPv4).
std::vector<uint8_t> RssInputIpv4(hw::Ipv4Address src, hw::Ipv4Address dst);  // 8 bytes
std::vector<uint8_t> RssInputIpv4L4(hw::Ipv4Address src, hw::Ipv4Address dst, uint16_t sport,
                                    uint16_t dport);  // 12 bytes, TCP or UDP ports
std::vector<uint8_t> RssInputIpv6(const hw::Ipv6Address& src, const hw::Ipv6Address& dst);  // 32 bytes
std::vector<uint8_t> RssInputIpv6L4(const hw::Ipv6Address& src, const hw::Ipv6Address& dst, uint16_t sport,
                                    uint16_t dport);  // 36 bytes

// The header fields RSS hashes, as a parser extracts them from a packet.
struct RssHeaderFields {
  int ip_version = 4;  // 4 or 6
  hw::Ipv4Address ipv4_src;
  hw::Ipv4Address ipv4_dst;
  hw::Ipv6Address ipv6_src;
  hw::Ipv6Address ipv6_dst;
  uint8_t ip_protocol = 0;  // 6 (TCP) or 17 (UDP) when the ports below are present
  uint16_t sport = 0;
  uint16_t dport = 0;
};

enum class RssSymmetry : uint8_t {
  kNone,
  // symmetric-xor: each selected src/dst pair becomes (src ^ dst, src ^ dst).
  kXor,
  // symmetric-or-xor (mlx5's rx_hash_symmetric): each selected src/dst pair becomes (src | dst, src ^ dst).
  kOrXor,
};

// The input for a TIR whose rx_hash_fields_mask is `fields` (bits of enum ibv_rx_hash_fields).
// IBV_RX_HASH_INNER says the fields are the inner headers' of a tunnelled packet: `packet` must then hold
// those; the bit itself changes nothing here.
// InvalidArgument, naming the culprit, when:
//  - `fields` has a bit other than the eight address and port bits and IBV_RX_HASH_INNER (IPSEC_SPI is not
//    modelled), or selects both IPv4 and IPv6 addresses, or both TCP and UDP ports (verbs.h forbids both);
//  - the packet lacks a selected field: IPv4 bits on an IPv6 packet (or the reverse), TCP port bits on a
//    packet whose ip_protocol is not TCP, UDP port bits on one that is not UDP;
//  - `symmetry` is not kNone and a source field is selected without its destination or the reverse.
// `fields` = 0 gives an empty input (hash 0), as a TIR that hashes nothing.
absl::StatusOr<std::vector<uint8_t>> RssInput(const RssHeaderFields& packet, uint64_t fields,
                                              RssSymmetry symmetry = RssSymmetry::kNone);

// ToeplitzHash(RssInput(packet, fields, symmetry), key), with the errors of both.
absl::StatusOr<uint32_t> RssHash(const RssHeaderFields& packet, uint64_t fields,
                                 absl::Span<const uint8_t> key = kMicrosoftRssKey,
                                 RssSymmetry symmetry = RssSymmetry::kNone);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_TOEPLITZ_H_
