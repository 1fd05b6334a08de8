#include "tests/differential_model.h"

#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hw/match_layout.h"
#include "sim/packet_parser.h"
#include "sim/rx_queue.h"
#include "tests/packet_model.h"

namespace drsim::testing {

using hw::Field;
using hw::MatchParams;

namespace {

std::string DescribeVlans(const std::vector<sim::VlanTag>& vlans) {
  std::vector<std::string> tags;
  for (const sim::VlanTag& t : vlans) tags.push_back(absl::StrFormat("%04x/%04x", t.tpid, t.tci));
  return absl::StrCat("[", absl::StrJoin(tags, " "), "]");
}

std::string DescribeL3(const sim::FrameSpec& s) {
  switch (s.l3) {
    case sim::L3Kind::kIpv4:
      return absl::StrFormat("ipv4 %s>%s", s.ipv4_src.ToString(), s.ipv4_dst.ToString());
    case sim::L3Kind::kIpv6:
      return absl::StrFormat("ipv6 %s>%s", s.ipv6_src.ToString(), s.ipv6_dst.ToString());
    default:
      return absl::StrFormat("none ethertype=0x%04x", s.ethertype);
  }
}

std::string DescribePath(const std::vector<uint32_t>& path) {
  return absl::StrCat("[", absl::StrJoin(path, ", "), "]");
}

std::string DescribeVerdict(sim::Fate fate, uint32_t qp_num, bool has_flow_tag, uint32_t flow_tag,
                            const std::vector<uint32_t>& path) {
  return absl::StrFormat("%s qp 0x%x tag %s path %s", sim::FateName(fate), qp_num,
                         has_flow_tag ? absl::StrFormat("0x%x", flow_tag) : "none", DescribePath(path));
}

// The fields where two match buffers differ, each with both values.
std::string FieldDifferences(const uint8_t* got, const uint8_t* want) {
  std::vector<std::string> diffs;
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    const Field f = hw::FieldAt(i);
    if (hw::GetField(got, f) != hw::GetField(want, f)) {
      diffs.push_back(absl::StrFormat("%s parsed 0x%x, modelled 0x%x", hw::Info(f).name, hw::GetField(got, f),
                                      hw::GetField(want, f)));
    }
  }
  return absl::StrJoin(diffs, "; ");
}

std::string DescribeActions(const std::vector<const dr::Action*>& list) {
  std::vector<std::string> names;
  for (const dr::Action* a : list) names.push_back(a->Describe());
  return absl::StrCat("[", absl::StrJoin(names, ", "), "]");
}

}  // namespace

std::string Describe(const sim::FrameSpec& s) {
  return absl::StrFormat("vlans=%s l3=%s proto=%d sport=%d dport=%d frag=%d/%d ext=%d",
                         DescribeVlans(s.vlans), DescribeL3(s), s.protocol, s.sport, s.dport,
                         s.more_fragments, s.fragment_offset, s.ipv6_extensions.size());
}

std::string Describe(const sim::TunnelFrameSpec& t) {
  if (t.tunnel.kind == sim::Encap::kNone) return Describe(t.outer);
  return absl::StrFormat("outer {%s} tunnel %d {%s}", Describe(t.outer), static_cast<int>(t.tunnel.kind),
                         Describe(t.inner));
}

std::string DescribeFields(const MatchParams& params) {
  std::vector<std::string> fields;
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    const Field f = hw::FieldAt(i);
    if (const uint32_t v = hw::GetField(params.bytes(), f); v != 0) {
      fields.push_back(absl::StrFormat("%s=0x%x", hw::Info(f).name, v));
    }
  }
  return absl::StrJoin(fields, " ");
}

MatchParams ValueFor(const MatchParams& mask, const MatchParams& fields, bool root) {
  MatchParams v;
  const uint8_t* m = mask.bytes();
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    const Field f = hw::FieldAt(i);
    const uint32_t fm = hw::GetField(m, f);
    if (fm == 0) continue;
    uint32_t pv = hw::GetField(fields.bytes(), f);
    if (root) {
      hw::SetField(v.bytes(), f, pv & fm);
      continue;
    }
    auto port_pair = [&](Field tcp, Field udp) {
      if (f == tcp || f == udp) pv = hw::GetField(fields.bytes(), tcp) | hw::GetField(fields.bytes(), udp);
    };
    port_pair(Field::kOuterTcpSport, Field::kOuterUdpSport);
    port_pair(Field::kOuterTcpDport, Field::kOuterUdpDport);
    port_pair(Field::kInnerTcpSport, Field::kInnerUdpSport);
    port_pair(Field::kInnerTcpDport, Field::kInnerUdpDport);
    hw::SetField(v.bytes(), f, pv & fm);
  }
  if (!root) {
    hw::SetField(v.bytes(), Field::kOuterIpVersion, hw::GetField(m, Field::kOuterIpVersion));
    hw::SetField(v.bytes(), Field::kInnerIpVersion, hw::GetField(m, Field::kInnerIpVersion));
  }
  return v;
}

const char* ActionShapeName(ActionShape shape) {
  switch (shape) {
    case ActionShape::kQueue:
      return "queue";
    case ActionShape::kTagQueue:
      return "tag+queue";
    case ActionShape::kDrop:
      return "drop";
    case ActionShape::kTag:
      return "tag";
    case ActionShape::kTagJump:
      return "tag+jump";
    case ActionShape::kJump:
      return "jump";
    case ActionShape::kDefaultMiss:
      return "default_miss";
    case ActionShape::kNone:
      return "none";
    case ActionShape::kQueueTag:
      return "queue+tag";
    case ActionShape::kTagTag:
      return "tag+tag";
  }
  return "?";
}

NicRxModel::NicRxModel(int queues, const std::vector<uint32_t>& tags)
    : domain_(*dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)) {
  // The GENEVE option the packet model reports as option 0 (tests/packet_model.h).
  nic_.CreateGeneveTlvOption({kModelGeneveOptionClass, kModelGeneveOptionType, 1}).IgnoreError();
  for (int q = 0; q < queues; ++q) {
    qps_.push_back(nic_.pf().CreateQueue(1 << 16));
    queue_actions_.push_back(*dr::Action::DestQp(nic_.pf(), qps_.back()));
  }
  // A flow tag is the tag's low 24 bits, the width of a CQE's.
  for (uint32_t tag : tags) tags_.emplace_back(*dr::Action::Tag(tag), tag & 0xffffff);
  drop_ = *dr::Action::Drop();
  miss_ = *dr::Action::DefaultMiss();
}

absl::Status NicRxModel::SetAllowDuplicates(bool allow) {
  if (absl::Status s = domain_.AllowDuplicateRules(allow); !s.ok()) {
    return absl::InternalError(absl::StrFormat("AllowDuplicateRules(%d) failed: %s", allow, s.ToString()));
  }
  allow_duplicates_ = allow;
  return absl::OkStatus();
}

int NicRxModel::AddTable(uint32_t level) {
  const int index = num_tables();
  tables_.push_back({*dr::Table::Create(domain_, level), ref_.AddTable(level)});
  if (level != 0) jumps_.push_back({*dr::Action::DestTable(tables_.back().table), index});
  return index;
}

absl::StatusOr<int> NicRxModel::AddMatcher(int table, uint16_t priority, const MatchParams& mask) {
  const Table& t = tables_[table];
  absl::StatusOr<dr::Matcher> m = dr::Matcher::Create(t.table, priority, mask.criteria(), mask.get());
  if (!m.ok()) {
    return absl::InternalError(
        absl::StrFormat("matcher in table %d (level %d), priority %d, mask {%s}: the driver rejected a valid "
                        "mask: %s",
                        table, t.table.level(), priority, DescribeFields(mask), m.status().ToString()));
  }
  const int ref = ref_.AddMatcher(t.ref, priority, mask.criteria(), mask.bytes());
  matchers_.push_back({*std::move(m), ref, table, mask, {}});
  return num_matchers() - 1;
}

absl::Status NicRxModel::ExpectMatcherRefused(int table, uint16_t priority, const MatchParams& mask,
                                              absl::StatusCode code,
                                              absl::Span<const sim::TunnelFrameSpec> specs) {
  const Table& t = tables_[table];
  absl::StatusOr<dr::Matcher> m = dr::Matcher::Create(t.table, priority, mask.criteria(), mask.get());
  if (m.ok() || m.status().code() != code) {
    return absl::InternalError(absl::StrFormat(
        "matcher in table %d (level %d), priority %d, mask {%s}: the driver returned %s, the model expected "
        "%s",
        table, t.table.level(), priority, DescribeFields(mask), m.ok() ? "a matcher" : m.status().ToString(),
        absl::StatusCodeToString(code)));
  }
  return Classify(specs).status();
}

void NicRxModel::Resolve(const RuleActions& actions, uint32_t level, std::vector<const dr::Action*>* list,
                         RefAction* ref, absl::StatusCode* expect) const {
  auto tag = [&](size_t i) {
    const auto& [action, flow_tag] = tags_[i % tags_.size()];
    list->push_back(&action);
    ref->set_tag = true;
    ref->tag = flow_tag;
  };
  auto queue = [&] {
    const size_t q = actions.queue % qps_.size();
    list->push_back(&queue_actions_[q]);
    ref->dest = RefAction::Dest::kQueue;
    ref->queue = qps_[q];
  };
  auto jump = [&] {
    const Jump& j = jumps_[actions.jump % jumps_.size()];
    list->push_back(&j.action);
    ref->dest = RefAction::Dest::kTable;
    ref->table = tables_[j.table].ref;
  };
  *expect = absl::StatusCode::kOk;
  switch (actions.shape) {
    case ActionShape::kQueue:
      queue();
      break;
    case ActionShape::kTagQueue:
      tag(actions.tag);
      queue();
      break;
    case ActionShape::kDrop:
      list->push_back(&drop_);
      ref->dest = RefAction::Dest::kDrop;
      break;
    case ActionShape::kTag:
      tag(actions.tag);
      break;
    case ActionShape::kTagJump:
      tag(actions.tag);
      jump();
      break;
    case ActionShape::kJump:
      jump();
      break;
    case ActionShape::kDefaultMiss:
      list->push_back(&miss_);
      ref->dest = RefAction::Dest::kDefaultMiss;
      break;
    case ActionShape::kNone:
      break;
    case ActionShape::kQueueTag:
      queue();
      tag(actions.tag);
      // Root tables take the kernel path: no action-order state machine there.
      if (level != 0) *expect = absl::StatusCode::kUnimplemented;
      break;
    case ActionShape::kTagTag:
      tag(actions.tag);
      tag(actions.tag + 1);
      *expect = absl::StatusCode::kInvalidArgument;
      break;
  }
}

absl::StatusCode NicRxModel::Expect(int matcher, const std::vector<MatchParams>& values,
                                    const RuleActions& actions, std::vector<const dr::Action*>* list,
                                    RefAction* ref_action) const {
  const Matcher& m = matchers_[matcher];
  const uint32_t level = tables_[m.table].table.level();
  absl::StatusCode expect;
  Resolve(actions, level, list, ref_action, &expect);
  if (!m.matcher.valid()) return absl::StatusCode::kInvalidArgument;  // a destroyed matcher's handle is empty
  if (expect != absl::StatusCode::kOk || allow_duplicates_ || level == 0) return expect;
  // A value equal to an installed rule's, or to an earlier one of the same call, is refused.
  for (size_t i = 0; i < values.size(); ++i) {
    if (ref_.FindDuplicate(m.ref, values[i].bytes()) != 0) return absl::StatusCode::kAlreadyExists;
    for (size_t j = 0; j < i; ++j) {
      if (ref_.SameValue(m.ref, values[j].bytes(), values[i].bytes())) {
        return absl::StatusCode::kAlreadyExists;
      }
    }
  }
  return expect;
}

std::string NicRxModel::DescribeInsert(int matcher, const std::vector<MatchParams>& values,
                                       const std::vector<const dr::Action*>& list) const {
  const Matcher& m = matchers_[matcher];
  std::vector<std::string> described;
  for (const MatchParams& v : values) described.push_back("{" + DescribeFields(v) + "}");
  return absl::StrFormat("matcher %d (table level %d%s), value%s %s, actions %s", matcher,
                         tables_[m.table].table.level(), m.matcher.valid() ? "" : ", destroyed",
                         values.size() == 1 ? "" : "s", absl::StrJoin(described, " "), DescribeActions(list));
}

void NicRxModel::Installed(int matcher, const MatchParams& value, const RefAction& ref_action,
                           dr::Rule rule) {
  Matcher& m = matchers_[matcher];
  const uint32_t id = rule.id();
  rules_.push_back({std::move(rule), ref_.AddRule(m.ref, value.bytes(), ref_action, id), matcher, id, value});
  m.values.push_back(value);
}

absl::StatusOr<int> NicRxModel::AddRule(int matcher, const MatchParams& value, const RuleActions& actions) {
  std::vector<const dr::Action*> list;
  RefAction ref_action;
  const absl::StatusCode expect = Expect(matcher, {value}, actions, &list, &ref_action);
  absl::StatusOr<dr::Rule> r = dr::Rule::Create(matchers_[matcher].matcher, value, list);
  if (r.status().code() != expect) {
    return absl::InternalError(absl::StrFormat("rule in %s: the driver returned %s, the model expected %s",
                                               DescribeInsert(matcher, {value}, list), r.status().ToString(),
                                               absl::StatusCodeToString(expect)));
  }
  if (!r.ok()) return -1;
  Installed(matcher, value, ref_action, *std::move(r));
  return num_rules() - 1;
}

absl::StatusOr<int> NicRxModel::AddRules(int matcher, const std::vector<MatchParams>& values,
                                         const RuleActions& actions) {
  std::vector<const dr::Action*> list;
  RefAction ref_action;
  const absl::StatusCode expect = Expect(matcher, values, actions, &list, &ref_action);
  std::vector<const mlx5dv_flow_match_parameters*> raw;
  for (const MatchParams& v : values) raw.push_back(v.get());
  std::vector<dr::Rule> made(values.size());
  const absl::Status status =
      dr::Rule::CreateMany(matchers_[matcher].matcher, raw, list, absl::MakeSpan(made));
  if (status.code() != expect) {
    return absl::InternalError(absl::StrFormat(
        "%d rules in one call in %s: the driver returned %s, the model expected %s", values.size(),
        DescribeInsert(matcher, values, list), status.ToString(), absl::StatusCodeToString(expect)));
  }
  if (!status.ok()) return -1;
  const int first = num_rules();
  for (size_t i = 0; i < values.size(); ++i) Installed(matcher, values[i], ref_action, std::move(made[i]));
  return first;
}

absl::StatusCode NicRxModel::ExpectUpdates(const std::vector<RuleChange>& changes,
                                           std::vector<std::vector<const dr::Action*>>* lists,
                                           std::vector<RefAction>* ref_actions) const {
  lists->assign(changes.size(), {});
  ref_actions->assign(changes.size(), {});
  absl::StatusCode expect = absl::StatusCode::kOk;
  for (const RuleChange& c : changes) {
    if (!rules_[c.rule].rule.valid()) expect = absl::StatusCode::kInvalidArgument;  // an empty handle
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    const Matcher& m = matchers_[rules_[changes[i].rule].matcher];
    absl::StatusCode shape;
    Resolve(changes[i].actions, tables_[m.table].table.level(), &(*lists)[i], &(*ref_actions)[i], &shape);
    if (expect == absl::StatusCode::kOk) expect = shape;
  }
  std::set<int> changed;
  for (const RuleChange& c : changes) {
    if (!changed.insert(c.rule).second && expect == absl::StatusCode::kOk) {
      expect = absl::StatusCode::kInvalidArgument;  // a rule named twice
    }
  }
  if (expect != absl::StatusCode::kOk || allow_duplicates_) return expect;
  // A new value equal to that of a rule of its matcher the call keeps, or to an earlier change's in the same
  // matcher, in a table above the root.
  for (size_t i = 0; i < changes.size(); ++i) {
    const int matcher = rules_[changes[i].rule].matcher;
    const Matcher& m = matchers_[matcher];
    if (tables_[m.table].table.level() == 0) continue;
    for (const Rule& kept : rules_) {
      if (kept.matcher == matcher && kept.rule.valid() && !changed.count(&kept - rules_.data()) &&
          ref_.SameValue(m.ref, kept.value.bytes(), changes[i].value.bytes())) {
        return absl::StatusCode::kAlreadyExists;
      }
    }
    for (size_t j = 0; j < i; ++j) {
      if (rules_[changes[j].rule].matcher == matcher &&
          ref_.SameValue(m.ref, changes[j].value.bytes(), changes[i].value.bytes())) {
        return absl::StatusCode::kAlreadyExists;
      }
    }
  }
  return absl::StatusCode::kOk;
}

absl::StatusOr<bool> NicRxModel::UpdateRules(const std::vector<RuleChange>& changes) {
  std::vector<std::vector<const dr::Action*>> lists;
  std::vector<RefAction> ref_actions;
  const absl::StatusCode expect = ExpectUpdates(changes, &lists, &ref_actions);
  std::vector<dr::Rule::Update> updates;
  std::vector<std::string> described;
  std::vector<bool> was_valid;
  for (size_t i = 0; i < changes.size(); ++i) {
    Rule& r = rules_[changes[i].rule];
    was_valid.push_back(r.rule.valid());
    updates.push_back({&r.rule, changes[i].value.get(), lists[i]});
    described.push_back(absl::StrFormat("rule %d (id %d%s) to %s", changes[i].rule, r.id,
                                        r.rule.valid() ? "" : ", destroyed",
                                        DescribeInsert(r.matcher, {changes[i].value}, lists[i])));
  }
  const absl::Status status = dr::Rule::UpdateMany(updates);
  if (status.code() != expect) {
    return absl::InternalError(
        absl::StrFormat("updating %s in one call: the driver returned %s, the model expected %s",
                        absl::StrJoin(described, "; "), status.ToString(), absl::StatusCodeToString(expect)));
  }
  if (!status.ok()) {
    for (size_t i = 0; i < changes.size(); ++i) {
      const Rule& r = rules_[changes[i].rule];
      if (r.rule.valid() != was_valid[i] || (r.rule.valid() && r.rule.id() != r.id)) {
        return absl::InternalError(
            absl::StrFormat("updating %s in one call failed as expected (%s), yet rule %d changed: %s, id %d",
                            absl::StrJoin(described, "; "), status.ToString(), changes[i].rule,
                            r.rule.valid() ? "valid" : "an empty handle", r.rule.id()));
      }
    }
    return false;
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    Rule& r = rules_[changes[i].rule];
    Matcher& m = matchers_[r.matcher];
    ref_.RemoveRule(r.ref);
    r.id = r.rule.id();
    r.ref = ref_.AddRule(m.ref, changes[i].value.bytes(), ref_actions[i], r.id);
    r.value = changes[i].value;
    m.values.push_back(changes[i].value);
  }
  return true;
}

absl::Status NicRxModel::DestroyRule(int rule) {
  Rule& r = rules_[rule];
  const bool alive = r.rule.valid();
  const absl::Status s = r.rule.Destroy();
  const absl::StatusCode expect = alive ? absl::StatusCode::kOk : absl::StatusCode::kInvalidArgument;
  if (s.code() != expect) {
    return absl::InternalError(absl::StrFormat(
        "destroying rule %d (id %d%s): the driver returned %s, the model "
        "expected %s",
        rule, r.id, alive ? "" : ", destroyed", s.ToString(), absl::StatusCodeToString(expect)));
  }
  if (alive) ref_.RemoveRule(r.ref);
  return absl::OkStatus();
}

bool NicRxModel::HasRules(int matcher) const {
  for (const Rule& r : rules_) {
    if (r.matcher == matcher && r.rule.valid()) return true;
  }
  return false;
}

absl::Status NicRxModel::DestroyMatcher(int matcher) {
  Matcher& m = matchers_[matcher];
  const bool alive = m.matcher.valid();
  const absl::StatusCode expect = !alive              ? absl::StatusCode::kInvalidArgument
                                  : HasRules(matcher) ? absl::StatusCode::kFailedPrecondition
                                                      : absl::StatusCode::kOk;
  const absl::Status s = m.matcher.Destroy();
  if (s.code() != expect || (expect == absl::StatusCode::kFailedPrecondition && !m.matcher.valid())) {
    return absl::InternalError(absl::StrFormat(
        "destroying matcher %d (%s): the driver returned %s%s, the model expected %s", matcher,
        !alive              ? "destroyed"
        : HasRules(matcher) ? "with rules"
                            : "empty",
        s.ToString(), m.matcher.valid() ? "" : " and emptied the handle", absl::StatusCodeToString(expect)));
  }
  if (expect == absl::StatusCode::kOk) ref_.RemoveMatcher(m.ref);
  return absl::OkStatus();
}

absl::Status NicRxModel::SizeMatcher(int matcher, uint32_t log_rules) {
  const Matcher& m = matchers_[matcher];
  const bool alive = m.matcher.valid();
  const absl::StatusCode expect = !alive                                ? absl::StatusCode::kInvalidArgument
                                  : tables_[m.table].table.level() == 0 ? absl::StatusCode::kUnimplemented
                                                                        : absl::StatusCode::kOk;
  const absl::Status s = m.matcher.SetLayout(
      {MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE | MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, log_rules});
  if (s.code() != expect) {
    return absl::InternalError(
        absl::StrFormat("sizing matcher %d for 2^%d rules: the driver returned %s, the model expected %s",
                        matcher, log_rules, s.ToString(), absl::StatusCodeToString(expect)));
  }
  return absl::OkStatus();
}

std::vector<int> NicRxModel::LiveRules() const {
  std::vector<int> live;
  for (int i = 0; i < num_rules(); ++i) {
    if (rules_[i].rule.valid()) live.push_back(i);
  }
  return live;
}

absl::StatusOr<std::vector<RefVerdict>> NicRxModel::Classify(absl::Span<const sim::TunnelFrameSpec> specs) {
  std::vector<std::vector<uint8_t>> frames;
  for (const sim::TunnelFrameSpec& spec : specs) frames.push_back(sim::BuildFrame(spec));
  const std::vector<sim::Frame> views(frames.begin(), frames.end());
  // Untraced, then traced: an untraced burst dispatches a first hit whose program only sends the frame on
  // without walking the domains, which a traced one always walks to record the path.
  std::vector<sim::Verdict> untraced(frames.size()), verdicts(frames.size());
  for (auto [out, trace] : {std::pair{&untraced, false}, std::pair{&verdicts, true}}) {
    if (absl::Status s = nic_.ReceiveFromWire(views, absl::MakeSpan(*out), trace); !s.ok()) {
      return absl::InternalError(
          absl::StrFormat("ReceiveFromWire of %d frames failed: %s", frames.size(), s.ToString()));
    }
    DrainQueues();
  }
  std::vector<RefVerdict> wants;
  for (size_t i = 0; i < frames.size(); ++i) {
    const MatchParams expected = ExpectedFields(specs[i]);
    hw::HeaderVector parsed;
    sim::ParsePacket(frames[i].data(), frames[i].size(), 0xffff, &parsed, nic_.geneve_option());
    if (std::memcmp(parsed.bytes, expected.bytes(), hw::kMatchParamBytes) != 0) {
      return absl::InternalError(
          absl::StrFormat("frame %d (%s): the parser disagrees with the packet model: %s", i,
                          Describe(specs[i]), FieldDifferences(parsed.bytes, expected.bytes())));
    }
    RefVerdict want = ref_.Classify(expected.bytes());
    const sim::Verdict& got = verdicts[i];
    std::vector<uint32_t> got_path;
    for (const sim::Hop& h : got.path) got_path.push_back(h.rule_id);
    if (got.fate != want.fate || got.qp_num != want.qp_num || got.has_flow_tag != want.has_flow_tag ||
        got.flow_tag != want.flow_tag || got_path != want.rule_path) {
      return absl::InternalError(absl::StrFormat(
          "frame %d (%s) fields {%s}: the NIC says %s; the reference says %s", i, Describe(specs[i]),
          DescribeFields(expected),
          DescribeVerdict(got.fate, got.qp_num, got.has_flow_tag, got.flow_tag, got_path),
          DescribeVerdict(want.fate, want.qp_num, want.has_flow_tag, want.flow_tag, want.rule_path)));
    }
    const sim::Verdict& quick = untraced[i];
    if (quick.fate != want.fate || quick.qp_num != want.qp_num || quick.has_flow_tag != want.has_flow_tag ||
        quick.flow_tag != want.flow_tag || !quick.path.empty()) {
      return absl::InternalError(absl::StrFormat(
          "frame %d (%s) fields {%s}, untraced: the NIC says %s; the reference says %s", i,
          Describe(specs[i]), DescribeFields(expected),
          DescribeVerdict(quick.fate, quick.qp_num, quick.has_flow_tag, quick.flow_tag, {}),
          DescribeVerdict(want.fate, want.qp_num, want.has_flow_tag, want.flow_tag, want.rule_path)));
    }
    wants.push_back(std::move(want));
  }
  return wants;
}

void NicRxModel::DrainQueues() {
  for (uint32_t q : qps_) {
    while (nic_.pf().queue(q)->Poll()) {
    }
  }
  while (nic_.pf().PollPort()) {
  }
}

}  // namespace drsim::testing
