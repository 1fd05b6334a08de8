// The lockstep half of a NIC_RX differential run, shared by tests/differential_test.cc and
// fuzz/rule_churn_fuzzer.cc: a sim::Nic whose PF has one NIC_RX domain programmed through dr::, every
// change mirrored into the brute-force ReferenceClassifier, and every result of the driver checked against
// what the model expects of it:
//  - matchers: the masks given are valid for their table, so creating one succeeds (ExpectMatcherRefused
//    checks the refusals, such as a mask only root tables take in a non-root one); destroying one that still
//    has rules fails with FailedPrecondition (EBUSY) and changes nothing; a destroyed matcher's handle is
//    empty, so destroying it again or inserting into it is InvalidArgument;
//  - rules: the actions come from a menu of shapes (ActionShape) whose outcome the model knows: in a
//    non-root table a tag after a terminating action is Unimplemented (the action-order state machine; root
//    tables take the kernel path, which has none), two tags are InvalidArgument, and a duplicate value
//    (ReferenceClassifier::FindDuplicate) is AlreadyExists in a non-root table of a domain that disallows
//    duplicates; destroying a destroyed rule is InvalidArgument;
//  - frames: each frame's verdict from the NIC (fate, QP, flow tag, the rule hit in each table visited)
//    equals the reference's on the header fields the packet model (tests/packet_model.h) states for the
//    frame, and the NIC's parser agrees with the packet model.
// A disagreement comes back as an InternalError saying what was done, what the driver did and what the
// model expected; the caller (a test, a fuzzer) reports it. No other errors are returned. Indices of
// tables, matchers and rules are stable: a destroyed object keeps its index.
#ifndef DRSIM_TESTS_DIFFERENTIAL_MODEL_H_
#define DRSIM_TESTS_DIFFERENTIAL_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "tests/reference_classifier.h"

namespace drsim::testing {

// A frame description for messages: L2, L3 and L4 of each header stack, and the tunnel.
std::string Describe(const sim::FrameSpec& s);
std::string Describe(const sim::TunnelFrameSpec& t);
// The nonzero fields of a match buffer ("outer.ip_version=0x4 outer.tcp_dport=0x50"); "" when all are 0.
std::string DescribeFields(const hw::MatchParams& params);

// The value a rule needs to match a packet whose header fields are `fields` under `mask`, the hardware's
// way: in a non-root table each masked field's bits (TCP and UDP ports read as one L4 port field), and the
// mask's ip_version (a value's must equal it); in a root table (`root`) each masked field's bits as they
// are. Random `fields` give a random valid value.
hw::MatchParams ValueFor(const hw::MatchParams& mask, const hw::MatchParams& fields, bool root = false);

// The action lists the model knows the outcome of.
enum class ActionShape : uint8_t {
  kQueue,
  kTagQueue,
  kDrop,
  kTag,
  kTagJump,
  kJump,
  kDefaultMiss,
  kNone,      // the domain default
  kQueueTag,  // a tag after a terminating action: Unimplemented in a non-root table
  kTagTag,    // two tags: InvalidArgument
};
inline constexpr int kNumActionShapes = 10;
// "queue", "tag+queue", ..., "none", "queue+tag", "tag+tag".
const char* ActionShapeName(ActionShape shape);

// A rule's actions: a shape, and the tag, queue and jump it uses (indices modulo the counts available).
struct RuleActions {
  ActionShape shape = ActionShape::kNone;
  size_t tag = 0;
  size_t queue = 0;
  size_t jump = 0;
};

class NicRxModel {
 public:
  // A NIC whose PF has `queues` receive queues and a tag action for each of `tags` (both at least one),
  // a NIC_RX domain on it (allowing duplicate rules, the default), and the drop and default-miss actions.
  NicRxModel(int queues, const std::vector<uint32_t>& tags);

  // Domain::AllowDuplicateRules: later inserts of duplicates fail (AlreadyExists) or not.
  absl::Status SetAllowDuplicates(bool allow);

  // A table at `level`, and for a level above 0 a dest_table action to it (a jump). Returns its index.
  int AddTable(uint32_t level);
  // A matcher of `priority` in table `table` (an index), its criteria from the sections `mask` sets.
  // Returns its index.
  absl::StatusOr<int> AddMatcher(int table, uint16_t priority, const hw::MatchParams& mask);
  // Checks that the driver refuses a matcher of `mask` in table `table` with `code`, and that the frames of
  // `specs` are steered as before (nothing was installed).
  absl::Status ExpectMatcherRefused(int table, uint16_t priority, const hw::MatchParams& mask,
                                    absl::StatusCode code, absl::Span<const sim::TunnelFrameSpec> specs);
  // Inserts a rule; the shapes with a jump need a table above level 0. Returns the rule's index, or -1
  // when the driver rejected the rule as the model expected.
  absl::StatusOr<int> AddRule(int matcher, const hw::MatchParams& value, const RuleActions& actions);
  // Inserts one rule per value with the same actions in one dr::Rule::CreateMany call, all or none.
  // Returns the index of the first, or -1 when the driver rejected them all as the model expected.
  absl::StatusOr<int> AddRules(int matcher, const std::vector<hw::MatchParams>& values,
                               const RuleActions& actions);
  // One change for UpdateRules: rule `rule` (an index) gives way to a rule of its matcher with `value` and
  // `actions`, which takes its index.
  struct RuleChange {
    int rule;
    hw::MatchParams value;
    RuleActions actions;
  };
  // Applies `changes` in one dr::Rule::UpdateMany call, all or none. Returns whether the driver applied
  // them (false: it rejected them as the model expected, and every rule is as it was).
  absl::StatusOr<bool> UpdateRules(const std::vector<RuleChange>& changes);
  absl::Status DestroyRule(int rule);
  // Destroys the matcher, or fails as expected while it has rules (see matcher_alive()).
  absl::Status DestroyMatcher(int matcher);
  // Sizes the matcher for 2^log_rules rules (a resizable layout: what it matches does not change), or fails
  // as expected: a destroyed matcher, a root table's.
  absl::Status SizeMatcher(int matcher, uint32_t log_rules);

  // Sends the frames of `specs` from the wire twice, untraced and then traced (the untraced data path
  // dispatches some first hits without walking), and compares each verdict, path included when traced,
  // and each parse with the reference's. Returns the reference verdicts. Empties the queues and the PF's
  // interface after each pass.
  absl::StatusOr<std::vector<RefVerdict>> Classify(absl::Span<const sim::TunnelFrameSpec> specs);

  int num_tables() const { return static_cast<int>(tables_.size()); }
  int num_matchers() const { return static_cast<int>(matchers_.size()); }
  bool matcher_alive(int matcher) const { return matchers_[matcher].matcher.valid(); }
  const hw::MatchParams& matcher_mask(int matcher) const { return matchers_[matcher].mask; }
  // Whether the matcher is in a level-0 table (the kernel path: ValueFor's `root`).
  bool matcher_on_root(int matcher) const { return tables_[matchers_[matcher].table].table.level() == 0; }
  // The values of the rules the matcher accepted (destroyed ones too), in insertion order.
  const std::vector<hw::MatchParams>& matcher_values(int matcher) const { return matchers_[matcher].values; }
  int num_rules() const { return static_cast<int>(rules_.size()); }
  int rule_matcher(int rule) const { return rules_[rule].matcher; }
  uint32_t rule_id(int rule) const { return rules_[rule].id; }
  const hw::MatchParams& rule_value(int rule) const { return rules_[rule].value; }
  // Indices of the rules not destroyed, in insertion order.
  std::vector<int> LiveRules() const;

 private:
  // Takes every frame out of the queues and the PF's interface.
  void DrainQueues();
  struct Table {
    dr::Table table;
    int ref;
  };
  struct Matcher {
    dr::Matcher matcher;
    int ref;
    int table;
    hw::MatchParams mask;
    std::vector<hw::MatchParams> values;
  };
  struct Rule {
    dr::Rule rule;
    int ref;
    int matcher;
    uint32_t id;
    hw::MatchParams value;
  };
  struct Jump {
    dr::Action action;
    int table;
  };

  // The actions of `actions` on this model's objects, the reference's action, and the status expected of
  // an insert into a table at `level` (before the duplicate check).
  void Resolve(const RuleActions& actions, uint32_t level, std::vector<const dr::Action*>* list,
               RefAction* ref, absl::StatusCode* expect) const;
  bool HasRules(int matcher) const;
  // The status the driver must return for inserting `values` (one call) into `matcher` with `actions`;
  // fills the model's actions and the reference's.
  absl::StatusCode Expect(int matcher, const std::vector<hw::MatchParams>& values, const RuleActions& actions,
                          std::vector<const dr::Action*>* list, RefAction* ref_action) const;
  // The status the driver must return for UpdateRules(changes) (UpdateMany's checks, in its order); fills
  // each change's actions and the reference's.
  absl::StatusCode ExpectUpdates(const std::vector<RuleChange>& changes,
                                 std::vector<std::vector<const dr::Action*>>* lists,
                                 std::vector<RefAction>* ref_actions) const;
  // "matcher M (table level L), values {..}, actions ..", for a disagreement's message.
  std::string DescribeInsert(int matcher, const std::vector<hw::MatchParams>& values,
                             const std::vector<const dr::Action*>& list) const;
  // Records `rule`, installed with `value` in `matcher`, in the model and the reference.
  void Installed(int matcher, const hw::MatchParams& value, const RefAction& ref_action, dr::Rule rule);

  sim::Nic nic_;  // first: the device outlives every object on it
  dr::Domain domain_;
  bool allow_duplicates_ = true;
  std::vector<uint32_t> qps_;
  std::vector<dr::Action> queue_actions_;
  std::vector<std::pair<dr::Action, uint32_t>> tags_;  // the action and the flow tag it sets
  dr::Action drop_;
  dr::Action miss_;
  std::vector<Table> tables_;
  std::vector<Jump> jumps_;
  std::vector<Matcher> matchers_;
  std::vector<Rule> rules_;
  ReferenceClassifier ref_;
};

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_DIFFERENTIAL_MODEL_H_
