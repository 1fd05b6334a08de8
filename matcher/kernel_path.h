// The checks a root (level-0) table's matchers and rules meet on hardware: the kernel's and the firmware's,
// not rdma-core's STE builders'.
//
// What
//   rdma-core creates root matchers and rules through the kernel (dr_matcher_init_root ->
//   mlx5dv_create_flow_matcher; dr_rule_create_rule_root -> mlx5dv_create_flow), so neither
//   dr_ste_build_pre_check nor the STE builders ever see them. What they meet instead, in order:
//    - the uverbs attributes' sizes: 1 byte at least, at most the kernel's 512-byte fte_match_param (the
//      layout's 448 bytes and a 64-byte reserved tail, reserved_at_e00), zero-extended;
//    - at rule creation, mlx5_core's check_valid_spec (fs_core.c, _mlx5_add_flow_rules): every value bit
//      under the mask as the kernel holds it, in every section and in the tail, else EINVAL;
//    - then the firmware, when the kernel makes the flow group for the mask (fs_core.c
//      create_auto_flow_group -> CREATE_FLOW_GROUP): a masked field the device's flow tables cannot match
//      (one its parser does not fill), or a reserved bit, the tail's included, fails the command with
//      BAD_PARAM, which the kernel returns as EINVAL (cmd_status_to_err). The matcher itself was accepted:
//      the kernel only stores its mask (flow_matcher_create in drivers/infiniband/hw/mlx5/fs.c).
//   Nothing restricts ip_version to 4 or 6, asks for it before L3/L4 fields, or limits a matcher to one
//   tunnel family: the firmware compares each fte_match_param field under its mask, bit for bit.
//
// How
//   CompileMask (mask_compiler.h) calls these on the kernel path; RootRuleRefusal's result is kept with the
//   compiled mask and returned by every rule insert, after the value checks, as the kernel orders them.
//
// Thread-safety: stateless functions.
#ifndef DRSIM_MATCHER_KERNEL_PATH_H_
#define DRSIM_MATCHER_KERNEL_PATH_H_

#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "hw/parsed_fields.h"

namespace drsim::matcher {

// The kernel's fte_match_param: the layout's 7 sections and a 64-byte reserved tail.
inline constexpr size_t kKernelMatchParamBytes = 512;

// The sizes the kernel takes a root-table mask or value in (`what` names it in errors): InvalidArgument for
// 0 bytes or more than 512.
absl::Status CheckKernelSize(const char* what, const mlx5dv_flow_match_parameters& param);

// mlx5_core's check_valid_spec: InvalidArgument naming the first field of `value` (checked with
// CheckKernelSize first) that sets a bit outside `kernel_mask` (512 bytes, every section as given and the
// reserved tail).
absl::Status CheckKernelValue(const uint8_t* kernel_mask, const mlx5dv_flow_match_parameters& value);

// What the firmware says of the flow group of `kernel_mask` (512 bytes) under `criteria`: OK, or
// InvalidArgument naming the first masked reserved bit of an enabled section or of the tail, or the first
// masked field of an enabled section outside `parsed` (the fields the device's flow tables match).
absl::Status RootRuleRefusal(const uint8_t* kernel_mask, uint8_t criteria, const hw::ParsedFields& parsed);

}  // namespace drsim::matcher

#endif  // DRSIM_MATCHER_KERNEL_PATH_H_
