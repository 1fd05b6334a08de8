#include "tests/reference_classifier.h"

#include <algorithm>
#include <cstring>

namespace drsim::testing {

using hw::Field;

namespace {

uint32_t Get(const uint8_t* b, Field f) { return hw::GetField(b, f); }

bool IsPort(Field f) {
  return f == Field::kOuterTcpSport || f == Field::kOuterTcpDport || f == Field::kOuterUdpSport ||
         f == Field::kOuterUdpDport || f == Field::kInnerTcpSport || f == Field::kInnerTcpDport ||
         f == Field::kInnerUdpSport || f == Field::kInnerUdpDport;
}

// The (tcp, udp) pair of one port direction that `f` belongs to.
std::pair<Field, Field> PortPair(Field f) {
  switch (f) {
    case Field::kOuterTcpSport:
    case Field::kOuterUdpSport:
      return {Field::kOuterTcpSport, Field::kOuterUdpSport};
    case Field::kOuterTcpDport:
    case Field::kOuterUdpDport:
      return {Field::kOuterTcpDport, Field::kOuterUdpDport};
    case Field::kInnerTcpSport:
    case Field::kInnerUdpSport:
      return {Field::kInnerTcpSport, Field::kInnerUdpSport};
    default:
      return {Field::kInnerTcpDport, Field::kInnerUdpDport};
  }
}

// The VLAN qualifier pair `f` belongs to, if any.
bool QualifierPair(Field f, Field* a, Field* b) {
  static const std::pair<Field, Field> kPairs[] = {
      {Field::kOuterCvlanTag, Field::kOuterSvlanTag},
      {Field::kInnerCvlanTag, Field::kInnerSvlanTag},
      {Field::kOuterSecondCvlanTag, Field::kOuterSecondSvlanTag},
      {Field::kInnerSecondCvlanTag, Field::kInnerSecondSvlanTag}};
  for (auto [x, y] : kPairs) {
    if (f == x || f == y) {
      *a = x;
      *b = y;
      return true;
    }
  }
  return false;
}

}  // namespace

int ReferenceClassifier::AddTable(uint32_t level) {
  table_levels_.push_back(level);
  return static_cast<int>(table_levels_.size()) - 1;
}

int ReferenceClassifier::AddMatcher(int table, uint16_t priority, uint8_t criteria, const uint8_t* mask) {
  Matcher m{table, priority, ++seq_, {}, {}, table_levels_[table] == 0, true};
  if (mask != nullptr) {
    for (int s = 0; s < hw::kNumSections; ++s) {
      const auto sec = static_cast<hw::Section>(s);
      if (criteria & hw::CriteriaBit(sec)) {
        std::memcpy(m.mask.data() + hw::SectionOffset(sec), mask + hw::SectionOffset(sec), hw::kSectionBytes);
      }
    }
  }
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    if (Get(m.mask.data(), hw::FieldAt(i)) != 0) m.fields.push_back(hw::FieldAt(i));
  }
  matchers_.push_back(std::move(m));
  return static_cast<int>(matchers_.size()) - 1;
}

void ReferenceClassifier::RemoveMatcher(int matcher) { matchers_[matcher].alive = false; }

int ReferenceClassifier::AddRule(int matcher, const uint8_t* value, const RefAction& action,
                                 uint32_t user_id) {
  Rule r{matcher, ++seq_, {}, action, user_id, true};
  std::memcpy(r.value.data(), value, hw::kMatchParamBytes);
  rules_.push_back(r);
  return static_cast<int>(rules_.size()) - 1;
}

void ReferenceClassifier::RemoveRule(int rule) { rules_[rule].alive = false; }

bool ReferenceClassifier::Matches(const Matcher& m, const uint8_t* fields, const uint8_t* value) const {
  const uint8_t* mask = m.mask.data();
  for (Field f : m.fields) {
    if (m.bitwise) {
      if ((Get(fields, f) & Get(mask, f)) != (Get(value, f) & Get(mask, f))) return false;
      continue;
    }
    if (f == Field::kOuterIpVersion || f == Field::kInnerIpVersion || f == Field::kSourceSqn) {
      if (Get(fields, f) != Get(value, f)) return false;  // compared whole
      continue;
    }
    Field a, b;
    if (QualifierPair(f, &a, &b)) {
      if (Get(fields, a) != Get(value, a) || Get(fields, b) != Get(value, b)) return false;
      continue;
    }
    if (IsPort(f)) {
      auto [tcp, udp] = PortPair(f);
      const uint32_t m_l4 = Get(mask, tcp) | Get(mask, udp);
      const uint32_t packet_l4 = Get(fields, tcp) | Get(fields, udp);
      const uint32_t value_l4 = Get(value, tcp) | Get(value, udp);
      if ((packet_l4 & m_l4) != (value_l4 & m_l4)) return false;
      continue;
    }
    if ((Get(fields, f) & Get(mask, f)) != (Get(value, f) & Get(mask, f))) return false;
  }
  return true;
}

uint32_t ReferenceClassifier::FindDuplicate(int matcher, const uint8_t* value) const {
  for (const Rule& r : rules_) {
    if (r.alive && r.matcher == matcher && Matches(matchers_[matcher], value, r.value.data())) {
      return r.user_id;
    }
  }
  return 0;
}

int ReferenceClassifier::Lookup(int t, const uint8_t* fields) const {
  // Matchers of the table (the root: of every level-0 table) in lookup order.
  std::vector<int> order;
  for (size_t i = 0; i < matchers_.size(); ++i) {
    const Matcher& m = matchers_[i];
    if (!m.alive) continue;
    if (t >= 0 ? m.table == t : table_levels_[m.table] == 0) order.push_back(static_cast<int>(i));
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    if (matchers_[a].priority != matchers_[b].priority) return matchers_[a].priority < matchers_[b].priority;
    return matchers_[a].seq > matchers_[b].seq;
  });
  for (int mi : order) {
    int best = -1;
    for (size_t ri = 0; ri < rules_.size(); ++ri) {
      const Rule& r = rules_[ri];
      if (!r.alive || r.matcher != mi || !Matches(matchers_[mi], fields, r.value.data())) continue;
      if (best < 0 || r.seq < rules_[best].seq) best = static_cast<int>(ri);
    }
    if (best >= 0) return best;
  }
  return -1;
}

bool ReferenceClassifier::Steered() const {
  for (const Matcher& m : matchers_) {
    if (m.alive && table_levels_[m.table] == 0) return true;
  }
  return false;
}

RefVerdict ReferenceClassifier::Classify(const uint8_t* fields) const {
  RefVerdict v;
  if (!Steered()) {
    v.fate = sim::Fate::kPort;
    return v;
  }
  int table = -1;  // the root
  for (int jumps = 0;; ++jumps) {
    if (jumps > sim::Nic::kMaxTableJumps) {
      v.fate = sim::Fate::kTableLoop;
      return v;
    }
    int hit = Lookup(table, fields);
    v.rule_path.push_back(hit < 0 ? 0 : rules_[hit].user_id);
    if (hit < 0) {
      v.fate = sim::Fate::kDomainDefault;
      return v;
    }
    const RefAction& a = rules_[hit].action;
    if (a.set_tag) {
      v.has_flow_tag = true;
      v.flow_tag = a.tag;
    }
    switch (a.dest) {
      case RefAction::Dest::kNone:
      case RefAction::Dest::kDefaultMiss:
        v.fate = sim::Fate::kDomainDefault;
        return v;
      case RefAction::Dest::kDrop:
        v.fate = sim::Fate::kDropped;
        return v;
      case RefAction::Dest::kQueue:
        v.fate = sim::Fate::kQueued;
        v.qp_num = a.queue;
        return v;
      case RefAction::Dest::kTable:
        table = a.table;
        break;
    }
  }
}

}  // namespace drsim::testing
