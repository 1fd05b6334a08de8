// The ACL churn check: a ClassBench filter set installed as DR rules (dr_acl.h) on a software NIC, a trace
// sent through it by worker threads while a control thread keeps deleting one filter's rules and putting
// them back, and every frame's verdict compared with classbench::FirstMatch, a plain scan that shares no
// code with the NIC.
//
// A walk passes the table's matchers one after another while filters come and go, so it can miss each
// filter being churned at the moment it passes that filter's matcher (a rule is seen whole or not at all,
// never half). A frame whose burst overlapped churns may therefore end with any filter the header fits
// (or none) as long as every filter before it that the header fits was churned during the burst; without
// churn, only its first filter. Workers bracket each burst with the control thread's churn counters to
// know which filters those are; a burst that overlapped more churns than their log holds (a worker
// preempted mid-burst, mostly) is not checked. After the churn stops, one more pass must give every frame
// exactly its first filter.
//
// With move_keys a churn puts the filter's rules back with other addresses for a while (MoveOf, in
// dr_acl.h) before it puts them back as they were: a frame may also end with a churned filter whose moved
// version the header fits. With batch_updates a churn replaces each of the filter's rules in turn (one
// dr::Rule::UpdateMany call each time) rather than removing them all first: while it lasts, some of its
// rules may be old or moved and others gone, which the bound above allows.
//
// Frames are IPv4 with the header's protocol; only TCP (6) and UDP (17) frames carry ports, so for other
// protocols the model sees ports 0, as the NIC's parser does.
#ifndef DRSIM_CLASSBENCH_CHURN_CHECK_H_
#define DRSIM_CLASSBENCH_CHURN_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "classbench/filter.h"

namespace drsim::classbench {

struct ChurnCheckOptions {
  int workers = 2;           // frame-processing threads, each with its own sim::Worker
  double seconds = 2;        // how long the control thread churns
  uint32_t seed = 1;         // which filters are churned, in what order
  size_t max_reported = 10;  // mismatches described in the report
  size_t churn_log = 4096;   // churns a burst may overlap and still be checked (at least 1)
  // A churn puts the filter's rules back with other keys first, then with their own (MovedFilter): an
  // update that changes a rule's match, as well as one that keeps it.
  bool move_keys = false;
  // A churn changes the filter's rules in one dr::Rule::UpdateMany call each time (moved, then back, with
  // move_keys; else back to what they were: updates of their actions) instead of deleting them all and
  // inserting them again.
  bool batch_updates = false;
  // Every quiet_every seconds of churn (0: never) the control thread stops for quiet_for seconds: long
  // enough for the ACL's table to compile itself (hw::TableIndex::Compile) and serve lookups compiled.
  double quiet_every = 0;
  double quiet_for = 0.25;
};

struct ChurnCheckReport {
  uint64_t frames = 0;         // verdicts checked, the final pass included
  uint64_t unchecked = 0;      // frames whose burst overlapped too many churns to bound (not compared)
  uint64_t filter_churns = 0;  // filters deleted and put back
  uint64_t rule_updates = 0;   // DR rule deletes plus inserts
  uint64_t quiet_spells = 0;   // times the control thread stopped (quiet_every)
  uint64_t mismatches = 0;
  // How the ACL table's compiled trees kept up with the churn (hw::TableIndex::tree_upkeep): folds
  // published, forms retired because a change did not fit, and whether trees served at the end.
  uint64_t tree_folds = 0;
  uint64_t tree_overflows = 0;
  bool compiled_at_end = false;
  std::vector<std::string> examples;  // the first mismatches, described
};

// Runs the check. InvalidArgument for an empty set or trace, fewer than 1 or more workers than the NIC
// allows, an empty churn log, or a set InstallAcl refuses; the report otherwise (mismatches > 0 is a
// failed check).
absl::StatusOr<ChurnCheckReport> RunChurnCheck(const std::vector<Filter>& filters,
                                               const std::vector<Header>& trace,
                                               const ChurnCheckOptions& options);

}  // namespace drsim::classbench

#endif  // DRSIM_CLASSBENCH_CHURN_CHECK_H_
