// A brute-force reference model of mlx5 Direct Rule steering on NIC_RX, written from the semantics (not
// from the compiler): tables, matchers and rules are kept as plain lists; a packet (its header fields)
// is compared with every live rule of every matcher, field by field under the user's mask: in non-root
// tables with the STE lookups' whole-field rules (ip_version as the L3 type, the VLAN qualifier pair,
// TCP/UDP ports as one L4 port field, source_sqn whole); in level-0 tables, which rdma-core hands to the
// kernel and the firmware, bit for bit as the fields are (an ip_version mask of 0xf with value 4 is IPv4,
// an ethertype of 0x0800 is IPv4 whatever else is masked, a UDP port is not a TCP port). The walk: root = the
// matchers of all level-0 tables, by ascending priority and newest first; the oldest matching rule of the
// first matching matcher wins; tag, then destination; a miss or a rule without a destination takes the NIC_RX
// default (drop). With no matcher in any level-0 table the function is not steered: every frame goes to its
// own interface (kPort, no path).
#ifndef DRSIM_TESTS_REFERENCE_CLASSIFIER_H_
#define DRSIM_TESTS_REFERENCE_CLASSIFIER_H_

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "hw/match_layout.h"
#include "sim/nic.h"

namespace drsim::testing {

struct RefAction {
  enum class Dest { kNone, kDefaultMiss, kDrop, kQueue, kTable };
  bool set_tag = false;
  uint32_t tag = 0;
  Dest dest = Dest::kNone;
  uint32_t queue = 0;
  int table = -1;  // reference table id
};

struct RefVerdict {
  sim::Fate fate = sim::Fate::kDomainDefault;
  uint32_t qp_num = 0;
  bool has_flow_tag = false;
  uint32_t flow_tag = 0;
  std::vector<uint32_t> rule_path;  // the user id of the rule hit in each table visited (0 = miss)
};

class ReferenceClassifier {
 public:
  using Bytes = std::array<uint8_t, hw::kMatchParamBytes>;

  int AddTable(uint32_t level);
  int AddMatcher(int table, uint16_t priority, uint8_t criteria, const uint8_t* mask);
  void RemoveMatcher(int matcher);
  // `user_id` is reported in verdict paths (the driver's rule id, so paths can be compared).
  int AddRule(int matcher, const uint8_t* value, const RefAction& action, uint32_t user_id);
  void RemoveRule(int rule);
  // A live rule of `matcher` with the same value under its mask, if any (its user id), else 0.
  uint32_t FindDuplicate(int matcher, const uint8_t* value) const;
  // Whether values `a` and `b` are the same under `matcher`'s mask: rules with them are duplicates.
  bool SameValue(int matcher, const uint8_t* a, const uint8_t* b) const {
    return Matches(matchers_[matcher], a, b);
  }

  RefVerdict Classify(const uint8_t* fields) const;

 private:
  struct Matcher {
    int table;
    uint16_t priority;
    uint64_t seq;
    Bytes mask;
    std::vector<hw::Field> fields;  // fields with mask bits, for speed
    bool bitwise = false;           // in a level-0 table: every field compared bit for bit
    bool alive = true;
  };
  struct Rule {
    int matcher;
    uint64_t seq;
    Bytes value;
    RefAction action;
    uint32_t user_id;
    bool alive = true;
  };

  // Does `fields` (a packet or a value) equal `value` under matcher m's mask, the hardware way?
  bool Matches(const Matcher& m, const uint8_t* fields, const uint8_t* value) const;
  // Is there a live matcher in a level-0 table?
  bool Steered() const;
  // The winning rule in table `t` (or the root when t < 0), or -1.
  int Lookup(int t, const uint8_t* fields) const;

  std::vector<uint32_t> table_levels_;
  std::vector<Matcher> matchers_;
  std::vector<Rule> rules_;
  uint64_t seq_ = 0;
};

}  // namespace drsim::testing

#endif  // DRSIM_TESTS_REFERENCE_CLASSIFIER_H_
