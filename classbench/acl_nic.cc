#include "classbench/acl_nic.h"

#include "hw/match_params.h"

namespace drsim::classbench {

AclNic::AclNic(mlx5dv_dr_domain_type type)
    : nic(kVfs),
      domain(*dr::Domain::Create(nic.pf(), type)),
      root(*dr::Table::Create(domain, 0)),
      acl(*dr::Table::Create(domain, 1)),
      to_acl(*dr::Action::DestTable(acl)),
      all(*dr::Matcher::Create(root, 0, 0, nullptr)),
      jump(*dr::Rule::Create(all, hw::MatchParams(), {&to_acl})) {}

}  // namespace drsim::classbench
