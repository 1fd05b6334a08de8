// The software NIC an ACL set is installed on by the bench and the churn check: every frame from the wire
// enters NIC_RX's root, whose one catch-all rule jumps to a level-1 table, `acl`, where InstallAcl puts
// the set (dr_acl.h). Frames then end as the set's rules say, or at NIC_RX's default (drop) on a miss.
#ifndef DRSIM_CLASSBENCH_ACL_NIC_H_
#define DRSIM_CLASSBENCH_ACL_NIC_H_

#include "dr/dr.h"
#include "sim/nic.h"

namespace drsim::classbench {

struct AclNic {
  // Creating these objects on a fresh NIC cannot fail.
  AclNic();
  AclNic(const AclNic&) = delete;
  AclNic& operator=(const AclNic&) = delete;

  // In this order, so they are destroyed in reverse: the NIC last.
  sim::Nic nic;
  dr::Domain domain;  // the PF's NIC_RX
  dr::Table root;     // level 0
  dr::Table acl;      // level 1: where the set goes
  dr::Action to_acl;
  dr::Matcher all;
  dr::Rule jump;
};

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_ACL_NIC_H_
