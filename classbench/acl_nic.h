// The software NIC an ACL set is installed on by the bench, the churn check and the tests: every frame enters
// the root table of one domain of the PF, whose one catch-all rule jumps to a level-1 table, `acl`, where
// InstallAcl puts the set (dr_acl.h). Frames then end as the set's rules say, or at the domain's default on
// a miss. The domain is NIC_RX (frames from the wire; the default drops), FDB (frames from the wire through
// the eSwitch; the default delivers to the PF) or NIC_TX (frames the PF sends; the default goes on to the
// wire). The NIC has kVfs VFs, which FDB rules may forward to.
#ifndef DRSIM_CLASSBENCH_ACL_NIC_H_
#define DRSIM_CLASSBENCH_ACL_NIC_H_

#include <infiniband/mlx5dv.h>

#include "dr/dr.h"
#include "sim/nic.h"

namespace drsim::classbench {

struct AclNic {
  static constexpr int kVfs = 2;
  // Creating these objects on a fresh NIC cannot fail.
  explicit AclNic(mlx5dv_dr_domain_type type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  AclNic(const AclNic&) = delete;
  AclNic& operator=(const AclNic&) = delete;

  // In this order, so they are destroyed in reverse: the NIC last.
  sim::Nic nic;
  dr::Domain domain;  // the PF's, of the type given
  dr::Table root;     // level 0
  dr::Table acl;      // level 1: where the set goes
  dr::Action to_acl;
  dr::Matcher all;
  dr::Rule jump;
};

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_ACL_NIC_H_
