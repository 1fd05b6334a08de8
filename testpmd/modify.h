// Header-rewrite actions -> DR modify-header words (PRM set/add/copy, hw/modify_header.h). All of a rule's
// rewrites become one DR modify-header action, as the mlx5 PMD merges them.
//
//   set_mac_src/dst         SET SMAC/DMAC_47_16 + _15_0
//   set_ipv4_src/dst        SET SIPV4/DIPV4                    (needs an ipv4 item, as mlx5 checks)
//   set_ipv6_src/dst        SET SIPV6/DIPV6 (four words)       (needs an ipv6 item)
//   set_tp_src/dst          SET TCP_/UDP_SPORT/DPORT           (needs a tcp or udp item)
//   set_ttl, of_set_nw_ttl  SET IP_TTL / IPV6_HOPLIMIT         (needs an L3 item)
//   dec_ttl, of_dec_nw_ttl  ADD 0xff to IP_TTL / IPV6_HOPLIMIT
//   set_ipv4/6_dscp         SET IP_DSCP
//   inc/dec_tcp_seq/ack     ADD to TCP_SEQ_NUM / TCP_ACK_NUM   (needs a tcp item)
//   of_set_vlan_vid/pcp     SET FIRST_VID bits 0..11 / 13..15 (on an existing tag; after of_push_vlan the
//                           engine writes them into the pushed tag instead)
//   set_tag, set_meta       SET reg_c_2+index / reg_c_1 (registers.h), one SET per contiguous run of mask
//   bits modify_field            SET (src_type value), COPY (src_type a field), ADD (op add/sub, value) on
//   the
//                           fields of docs/testpmd.md; offsets count from the field's least significant bit;
//                           an immediate value is src_value's bytes read big-endian over the field's length
//                           (rte_flow's "same byte order and length as the item"), its bits at dst_offset
//                           used
// The layer checks use the headers the rewrite applies to: the outer ones, or the inner ones when the rule
// also decapsulates (DR rewrites after decapsulating).
//
// Pure functions; thread-safe.
#ifndef DRSIM_TESTPMD_MODIFY_H_
#define DRSIM_TESTPMD_MODIFY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "testpmd/ast.h"
#include "testpmd/pattern.h"

namespace drsim::testpmd {

// Is `type` one of the rewrites above (of_set_vlan_vid/pcp included)?
bool IsModifyAction(ActionType type);

// Appends the words of rewrite `action` on headers with `layers` to `words`. Errors at the action or its
// parameter: InvalidArgument for a value out of range or a missing pattern layer, Unimplemented for a
// modify_field field or operation DR cannot rewrite.
absl::Status AppendModifyWords(const Action& action, const HeaderLayers& layers,
                               std::vector<uint64_t>* words);

// The words setting the bits of `mask` in reg_c_`reg` to those of `value`, one SET per run of set bits.
std::vector<uint64_t> SetRegisterWords(int reg, uint32_t value, uint32_t mask);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_MODIFY_H_
