#include "sim/roce_entropy.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace drsim::sim {
namespace {

absl::Status CheckQpn(const char* qp_type, const char* which, uint32_t qpn, bool multicast_ok) {
  if (qpn > kMaxQpn) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s %s QPN 0x%x does not fit 24 bits", qp_type, which, qpn));
  }
  if (qpn == kMulticastQpn && !multicast_ok) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s %s QPN 0x%x is the multicast QPN, which only a UD destination can be", qp_type, which, qpn));
  }
  return absl::OkStatus();
}

uint16_t Fold(uint32_t qpn) { return static_cast<uint16_t>((qpn & 0xFFFF) ^ (qpn >> 16)); }

// The RFC's formula for both QP types once the inputs are checked.
uint16_t QpSport(uint32_t src_qpn, uint32_t dst_qpn, bool dst_is_peer) {
  const uint16_t hash = dst_is_peer && src_qpn != dst_qpn ? Fold(src_qpn) ^ Fold(dst_qpn) : Fold(src_qpn);
  return static_cast<uint16_t>(hash | IB_ROCE_UDP_ENCAP_VALID_PORT_MIN);
}

}  // namespace

uint16_t RoceCmUdpSport(uint16_t cm_dst_port, uint16_t cm_src_port) {
  return static_cast<uint16_t>((cm_dst_port ^ cm_src_port) | IB_ROCE_UDP_ENCAP_VALID_PORT_MIN);
}

absl::StatusOr<uint16_t> FoldQpn(uint32_t qpn) {
  if (qpn > kMaxQpn) return absl::InvalidArgumentError(absl::StrFormat("QPN 0x%x does not fit 24 bits", qpn));
  return Fold(qpn);
}

absl::StatusOr<uint16_t> RoceRcUdpSport(uint32_t src_qpn, uint32_t dst_qpn) {
  DRSIM_RETURN_IF_ERROR(CheckQpn("RC", "source", src_qpn, false));
  DRSIM_RETURN_IF_ERROR(CheckQpn("RC", "destination", dst_qpn, false));
  return QpSport(src_qpn, dst_qpn, /*dst_is_peer=*/true);
}

absl::StatusOr<uint16_t> RoceUdUdpSport(uint32_t src_qpn, uint32_t dst_qpn) {
  DRSIM_RETURN_IF_ERROR(CheckQpn("UD", "source", src_qpn, false));
  DRSIM_RETURN_IF_ERROR(CheckQpn("UD", "destination", dst_qpn, true));
  return QpSport(src_qpn, dst_qpn, /*dst_is_peer=*/dst_qpn != kMulticastQpn);
}

}  // namespace drsim::sim
