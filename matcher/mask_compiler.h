// The matcher compiler: validates a matcher's mask exactly as rdma-core's mlx5dv_dr_matcher_create does
// and compiles it once into a definer, so that every rule insertion and every packet lookup afterwards is
// a short loop of masked word loads; and validates rule values against it (mlx5dv_dr_rule_create).
//
// Matching semantics compiled in (the hardware's, not a plain bit compare):
//  - ip_version is matched as the packet's parsed L3 type: the mask's 4 or 6 compares all four bits;
//  - cvlan_tag/svlan_tag (and the second-tag pair) form one VLAN qualifier: masking either compares both,
//    so a value of 0 means "no tag" rather than "not a C-tag";
//  - source_sqn compares all 24 bits when masked;
//  - TCP and UDP ports are one L4 port field (a tcp_dport mask also matches UDP packets with that port,
//    as the 5-tuple steering lookups do; add ip_protocol to tell them apart).
//
// Stateless functions; CompiledMask is immutable and thread-safe once built.
#ifndef DRSIM_MATCHER_MASK_COMPILER_H_
#define DRSIM_MATCHER_MASK_COMPILER_H_

#include <infiniband/mlx5dv.h>

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hw/definer.h"
#include "hw/match_layout.h"
#include "hw/parsed_fields.h"
#include "matcher/mask_consumption.h"

namespace drsim::matcher {

// A rule insert reads the criteria and the definer's words (one line) and the mask's enabled sections, each
// a line of its own (of a cold matcher, mostly: a 5-tuple's value is checked and keyed from two lines).
struct alignas(64) CompiledMask {
  uint8_t criteria = 0;
  hw::Definer definer;                  // over the effective mask (see above)
  std::vector<SteBuilder> rx_builders;  // per pipe; empty when the domain lacks the pipe
  std::vector<SteBuilder> tx_builders;
  alignas(64) std::array<uint8_t, hw::kMatchParamBytes> mask{};  // the user's mask, enabled sections only
};

// Compiles a matcher mask for a domain type. `mask` may be null (all zero). Errors, in rdma-core's order:
//  - InvalidArgument (EINVAL): criteria >= 0x80; mask->match_sz > 448; criteria nonzero with nothing masked;
//  - Unimplemented (EOPNOTSUPP): ip_version mask not 0, 4 or 6; a masked field no builder consumes;
//  - Unimplemented (ENOTSUP): a source_port mask other than 0 or 0xffff;
//  - Unimplemented (EOPNOTSUPP): a masked field outside `parsed`, the fields the device's parser fills.
// Every message names the field or parameter at fault.
absl::StatusOr<CompiledMask> CompileMask(mlx5dv_dr_domain_type domain, uint8_t criteria,
                                         const mlx5dv_flow_match_parameters* mask,
                                         const hw::ParsedFields& parsed);

// Validates a rule value against `compiled` and writes its lookup key (compiled.definer.key_words() words).
// Errors: InvalidArgument (EINVAL) for a null value, a match_sz that is not a multiple of 4 or exceeds 448,
// or value bits outside the mask (naming the field); Unimplemented (EOPNOTSUPP) when the value's
// ip_version differs from the mask's. Bytes past match_sz read as zero; match_sz 0 is the all-zero value.
// `normalized`, when given (448 bytes), receives the value as checked: enabled sections only.
absl::Status BuildRuleKey(const CompiledMask& compiled, const mlx5dv_flow_match_parameters* value, uint32_t* key,
                          uint8_t* normalized = nullptr);

}  // namespace drsim::matcher

#endif  // DRSIM_MATCHER_MASK_COMPILER_H_
