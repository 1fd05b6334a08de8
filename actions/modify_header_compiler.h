// Validates a modify-header action list (mlx5dv_dr_action_create_modify_header) the way rdma-core does
// and decodes it for the device. Per action, in order: the field limits (METADATA_REGA only in NIC_TX
// domains, METADATA_REGB only in NIC_RX, ADD only on IP_TTL, IPV6_HOPLIMIT, TCP_SEQ_NUM, TCP_ACK_NUM:
// EINVAL; an unknown action type: EOPNOTSUPP), then the conversion (an unknown field, or offset + length
// past the field's width: EINVAL), then the list rules (IPv4 and IPv6 fields mixed: ENOTSUP; TCP and UDP
// fields mixed: EINVAL). Errors name the action's index, operation and field. The program it returns also
// says, once for every packet, which checksums the list rewrites and whether it writes the packet at all
// (hw::MakeModifyProgram): the device fixes those checksums and no others, so a list of register or MAC
// writes leaves every checksum as it came.
// Stateless, thread-safe.
#ifndef DRSIM_ACTIONS_MODIFY_HEADER_COMPILER_H_
#define DRSIM_ACTIONS_MODIFY_HEADER_COMPILER_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/modify_header.h"

namespace drsim::actions {

// `words` are the user's __be64 action words as they lie in memory.
absl::StatusOr<hw::ModifyProgram> CompileModifyHeader(mlx5dv_dr_domain_type domain,
                                                      absl::Span<const uint64_t> words);

}  // namespace drsim::actions

#endif  // DRSIM_ACTIONS_MODIFY_HEADER_COMPILER_H_
