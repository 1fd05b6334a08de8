// The matcher compiler: validates a matcher's mask exactly as rdma-core's mlx5dv_dr_matcher_create does
// and compiles it once into a definer, so that every rule insertion and every packet lookup afterwards is
// a short loop of masked word loads; and validates rule values against it (mlx5dv_dr_rule_create).
//
// Matching semantics compiled in for non-root tables (the STE lookups', not a plain bit compare):
//  - ip_version is matched as the packet's parsed L3 type: the mask's 4 or 6 compares all four bits;
//  - cvlan_tag/svlan_tag (and the second-tag pair) form one VLAN qualifier: masking either compares both,
//    so a value of 0 means "no tag" rather than "not a C-tag";
//  - source_sqn compares all 24 bits when masked;
//  - TCP and UDP ports are one L4 port field (a tcp_dport mask also matches UDP packets with that port,
//    as the 5-tuple steering lookups do; add ip_protocol to tell them apart).
// Root (level-0) tables compare the user's mask bit for bit, as the firmware's flow tables compare
// fte_match_param, and are checked as the kernel and the firmware check them (kernel_path.h).
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
#include "matcher/kernel_path.h"
#include "matcher/mask_consumption.h"

namespace drsim::matcher {

// Which way rdma-core takes a matcher's rules, which decides the sizes its mask and values may have.
enum class RulePath : uint8_t {
  // Non-root tables: rdma-core's software steering checks them (dr_matcher_copy_param, dr_rule_verify).
  // A mask is 0 to 448 bytes; a value 0 to 448 bytes in whole 32-bit words; bits a disabled section holds
  // are ignored.
  kSoftwareSteering,
  // Root (level-0) tables: rdma-core passes mask and value to the kernel (dr_matcher_init_root,
  // dr_rule_create_rule_root), which checks them as kernel_path.h says. Any size from 1 to 512 bytes is
  // zero-extended.
  kKernel,
};

// A rule insert reads the criteria and the definer's words (one line) and the mask's enabled sections, each
// a line of its own (of a cold matcher, mostly: a 5-tuple's value is checked and keyed from two lines).
struct alignas(64) CompiledMask {
  uint8_t criteria = 0;
  RulePath path = RulePath::kSoftwareSteering;
  hw::Definer definer;                  // over the effective mask (see above)
  std::vector<SteBuilder> rx_builders;  // per pipe; empty when the domain lacks the pipe
  std::vector<SteBuilder> tx_builders;
  // kKernel only (else empty): the whole mask as the kernel holds it, disabled sections and the reserved
  // tail too (kKernelMatchParamBytes).
  std::vector<uint8_t> kernel_mask;
  // kKernel only: what every rule insert fails with after its value checks, as the firmware refuses the
  // flow group of the mask (RootRuleRefusal); OK when it accepts it.
  absl::Status root_rule_refusal;
  alignas(64) std::array<uint8_t, hw::kMatchParamBytes> mask{};  // the user's mask, enabled sections only
};

// Compiles a matcher mask for a domain type, for rules taking `path`. `mask` may be null (all zero; on the
// kernel path rdma-core would dereference it). Errors, in rdma-core's order:
//  - InvalidArgument (EINVAL): criteria >= 0x80; mask->match_sz > 448 (kSoftwareSteering), or 0 or over
//    512 (kKernel); criteria nonzero with nothing masked (kSoftwareSteering);
//  - kSoftwareSteering only: Unimplemented (EOPNOTSUPP) for an ip_version mask not 0, 4 or 6, or a masked
//    field no builder consumes; Unimplemented (ENOTSUP) for a source_port mask other than 0 or 0xffff;
//    Unimplemented (EOPNOTSUPP) for a masked field outside `parsed`, the fields the device's parser fills.
// On kKernel a mask the firmware would refuse is accepted, as the kernel accepts it; its rules fail
// (root_rule_refusal). Every message names the field or parameter at fault.
absl::StatusOr<CompiledMask> CompileMask(mlx5dv_dr_domain_type domain, uint8_t criteria,
                                         const mlx5dv_flow_match_parameters* mask,
                                         const hw::ParsedFields& parsed,
                                         RulePath path = RulePath::kSoftwareSteering);

// Validates a rule value against `compiled` and writes its lookup key (compiled.definer.key_words() words).
// Errors: InvalidArgument (EINVAL) for a null value; for a match_sz that is not a multiple of 4 or exceeds
// 448 (kSoftwareSteering), or that is 0 or exceeds 512 (kKernel); for value bits outside the mask (naming
// the field; on kKernel in any section, disabled ones and the reserved tail included); Unimplemented
// (EOPNOTSUPP) when the value's ip_version differs from the mask's (kSoftwareSteering); on kKernel, then
// compiled.root_rule_refusal (InvalidArgument) when the firmware refuses the mask. Bytes past match_sz read
// as zero; on kSoftwareSteering match_sz 0 is the all-zero value.
// `normalized`, when given (448 bytes), receives the value as checked: enabled sections only.
absl::Status BuildRuleKey(const CompiledMask& compiled, const mlx5dv_flow_match_parameters* value,
                          uint32_t* key, uint8_t* normalized = nullptr);

}  // namespace drsim::matcher

#endif  // DRSIM_MATCHER_MASK_COMPILER_H_
