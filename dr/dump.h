// Dumps of the steering state in rdma-core's CSV format: mlx5dv_dump_dr_domain/table/matcher/rule
// (providers/mlx5/dr_dbg.c), the input of Mellanox's mlx_steering_dump.
//
// What. One record per line, each a record type id (3000 domain ... 3424 dest root table action) and
// comma-separated fields in rdma-core's order and number formats. Scope follows rdma-core:
//  - DumpDomain: the domain's records, then every table (creation order), each followed by its matchers
//    (lookup order) and each matcher by its rules (creation order), each rule by its actions (rule order);
//  - DumpTable: the domain's records and that table with everything below it;
//  - DumpMatcher: the domain's and the table's records, and that matcher with its rules;
//  - DumpRule: the domain's, table's and matcher's records, and that rule with its actions.
// Where a field is hardware-only (ICM addresses, STE bytes, firmware object ids) drsim prints its own
// deterministic encoding or 0; docs/dump.md lists what every record holds here and each difference from
// a ConnectX dump. The mask (3205) is rdma-core's host-layout encoding, which mlx_steering_dump decodes;
// a rule entry (3303/3304) is drsim's match-table key (dr/dump_encoding.h), which it reports as an
// unsupported entry.
//
// Ids. By default objects are identified as rdma-core does, by address ("0x%lx"), and the domain id is
// (pid << 8 | type). With DumpOptions::stable_ids they are the objects' ids instead (Domain::id(),
// Table::id(), Matcher::id(), Rule::id(), Action::id(), the ids traces and error messages use) and the
// domain id is (Domain::id() << 8 | type): the same program dumps the same bytes on every run.
//
// Errors. InvalidArgument (EINVAL) for an empty (destroyed or moved-from) handle or a null stream; a
// failed write stops the dump and returns dr::StatusFromErrno of its errno (ENOSPC, EBADF, EIO, ...), which
// ErrnoFromStatus gives back unchanged. What was written before the failure stays written. The stream
// is flushed before the call returns.
//
// Thread-safety. A dump holds its domain's lock while it writes, like every control call of dr/, so it
// sees no half-made change; other domains are not locked.
#ifndef DRSIM_DR_DUMP_H_
#define DRSIM_DR_DUMP_H_

#include <cstdio>

#include "absl/status/status.h"
#include "dr/dr.h"

namespace drsim::dr {

struct DumpOptions {
  // Object ids instead of addresses (see "Ids" above).
  bool stable_ids = false;
};

// The domain and everything in it.
absl::Status DumpDomain(const Domain& domain, std::FILE* out, const DumpOptions& options = {});
// The table's domain records, then the table and its matchers, rules and actions.
absl::Status DumpTable(const Table& table, std::FILE* out, const DumpOptions& options = {});
// The domain and table records, then the matcher and its rules and actions.
absl::Status DumpMatcher(const Matcher& matcher, std::FILE* out, const DumpOptions& options = {});
// The domain, table and matcher records, then the rule and its actions.
absl::Status DumpRule(const Rule& rule, std::FILE* out, const DumpOptions& options = {});

}  // namespace drsim::dr

#endif  // DRSIM_DR_DUMP_H_
