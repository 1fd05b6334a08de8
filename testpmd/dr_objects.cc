#include "testpmd/dr_objects.h"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/match_layout.h"

namespace drsim::testpmd {

RuleLabel RuleLabel::With(absl::string_view more) const {
  RuleLabel l = *this;
  l.part.append(more.data(), more.size());
  return l;
}

std::string RuleLabel::ToString() const {
  if (!flow) return part;
  return absl::StrFormat("port %d flow %d%s", flow->first, flow->second, part);
}

DomainRes::DomainRes(sim::Function& function, dr::Domain domain, DrObjects* objects)
    : function_(function), domain_(std::move(domain)), objects_(objects) {
  ++objects_->counts_.domains;
}
DomainRes::~DomainRes() { --objects_->counts_.domains; }

TableRes::TableRes(std::shared_ptr<DomainRes> domain, dr::Table table, DrObjects* objects)
    : domain_(std::move(domain)), table_(std::move(table)), objects_(objects) {
  ++objects_->counts_.tables;
}

TableRes::~TableRes() {
  if (default_jump_) {
    objects_->WithdrawNote(default_jump_->rule.id());
    default_jump_.reset();
    --objects_->counts_.rules;
    --objects_->counts_.matchers;
    --objects_->counts_.tables;
  }
  --objects_->counts_.tables;
}

absl::StatusOr<const dr::Action*> TableRes::JumpAction() {
  if (!jump_.valid()) {
    DRSIM_ASSIGN_OR_RETURN(dr::Action jump, dr::Action::DestTable(table_));
    jump_ = std::move(jump);
  }
  return &jump_;
}

absl::StatusOr<uint32_t> TableRes::AddDefaultJump() {
  DRSIM_ASSIGN_OR_RETURN(const dr::Action* jump, JumpAction());
  auto d = std::make_unique<DefaultJump>();
  DRSIM_ASSIGN_OR_RETURN(dr::Table root, dr::Table::Create(domain_->domain(), 0));
  d->root = std::move(root);
  DRSIM_ASSIGN_OR_RETURN(dr::Matcher all, dr::Matcher::Create(d->root, 0, 0, nullptr));
  d->all = std::move(all);
  DRSIM_ASSIGN_OR_RETURN(dr::Rule rule, dr::Rule::Create(d->all, hw::MatchParams(), {jump}));
  d->rule = std::move(rule);
  d->note.actions = {jump};
  d->note.part = &*objects_->label_parts_.insert("fdb_def_rule (root -> group 0)").first;
  objects_->FileNote(d->rule.id(), &d->note);
  default_jump_ = std::move(d);
  ++objects_->counts_.tables;
  ++objects_->counts_.matchers;
  ++objects_->counts_.rules;
  return default_jump_->rule.id();
}

MatcherRes::MatcherRes(std::shared_ptr<TableRes> table, dr::Matcher matcher, DrObjects* objects)
    : table_(std::move(table)), matcher_(std::move(matcher)), objects_(objects) {
  ++objects_->counts_.matchers;
}
MatcherRes::~MatcherRes() { --objects_->counts_.matchers; }

InstalledRule::InstalledRule(std::shared_ptr<MatcherRes> matcher, dr::Rule rule, RuleNote note)
    : matcher_(std::move(matcher)), rule_(std::move(rule)), note_(std::move(note)) {
  DrObjects& objects = matcher_->objects();
  ++objects.counts_.rules;
  objects.FileNote(rule_.id(), &note_);
}

RecordPool<InstalledRule>& InstalledRule::record_pool() const { return matcher_->objects().rules_; }

InstalledRule::~InstalledRule() {
  DrObjects& objects = matcher_->objects();
  objects.WithdrawNote(rule_.id());
  --objects.counts_.rules;
}

DrObjects::DrObjects(sim::Nic& nic, bool fdb_default_rule) : nic_(nic), fdb_default_rule_(fdb_default_rule) {}

absl::StatusOr<std::shared_ptr<DomainRes>> DrObjects::Domain(mlx5dv_dr_domain_type type, uint16_t vport) {
  if (type == MLX5DV_DR_DOMAIN_TYPE_FDB) vport = 0;
  std::weak_ptr<DomainRes>& slot = domains_[{static_cast<int>(type), vport}];
  if (std::shared_ptr<DomainRes> d = slot.lock()) return d;
  sim::Function* fn = nic_.function(vport);
  if (fn == nullptr) return absl::NotFoundError(absl::StrFormat("no function with vport %d", vport));
  DRSIM_ASSIGN_OR_RETURN(dr::Domain domain, dr::Domain::Create(*fn, type));
  auto d = std::make_shared<DomainRes>(*fn, std::move(domain), this);
  slot = d;
  return d;
}

uint32_t DrObjects::GroupLevel(mlx5dv_dr_domain_type type, uint32_t group) const {
  return type == MLX5DV_DR_DOMAIN_TYPE_FDB && fdb_default_rule_ ? group + 1 : group;
}

absl::StatusOr<std::shared_ptr<TableRes>> DrObjects::GroupTable(const std::shared_ptr<DomainRes>& domain,
                                                                uint32_t group) {
  const uint32_t level = GroupLevel(domain->type(), group);
  std::weak_ptr<TableRes>& slot = tables_[{domain.get(), level}];
  if (std::shared_ptr<TableRes> t = slot.lock()) return t;
  DRSIM_ASSIGN_OR_RETURN(dr::Table table, dr::Table::Create(domain->domain(), level));
  auto t = std::make_shared<TableRes>(domain, std::move(table), this);
  if (domain->type() == MLX5DV_DR_DOMAIN_TYPE_FDB && fdb_default_rule_ && group == 0) {
    DRSIM_RETURN_IF_ERROR(t->AddDefaultJump().status());
  }
  slot = t;
  return t;
}

absl::StatusOr<std::shared_ptr<TableRes>> DrObjects::HiddenTable(const std::shared_ptr<DomainRes>& domain,
                                                                 bool meter_policy) {
  uint32_t& next = meter_policy ? next_meter_level_ : next_hidden_level_;
  DRSIM_ASSIGN_OR_RETURN(dr::Table table, dr::Table::Create(domain->domain(), next++));
  return std::make_shared<TableRes>(domain, std::move(table), this);
}

namespace {

constexpr size_t kMaskOffset = sizeof(const TableRes*) + sizeof(uint16_t);  // in a matcher's key

}  // namespace

absl::string_view DrObjects::MatcherKey(const TableRes* table, uint16_t priority,
                                        const hw::MatchParams& mask) {
  matcher_key_.resize(kMaskOffset + hw::kMatchParamBytes);
  char* key = matcher_key_.data();
  std::memcpy(key, &table, sizeof(table));
  std::memcpy(key + sizeof(table), &priority, sizeof(priority));
  std::memcpy(key + kMaskOffset, mask.bytes(), hw::kMatchParamBytes);
  return matcher_key_;
}

absl::StatusOr<std::shared_ptr<MatcherRes>> DrObjects::Matcher(const std::shared_ptr<TableRes>& table,
                                                               uint16_t priority,
                                                               const hw::MatchParams& mask) {
  const absl::string_view key = MatcherKey(table.get(), priority, mask);
  if (key == last_matcher_key_) {
    // (A live matcher holds its table, so the table's address in the key is still that table's.)
    if (std::shared_ptr<MatcherRes> m = last_matcher_.lock()) return m;
  }
  auto it = matchers_.find(key);  // (no key string made to look)
  if (it == matchers_.end()) it = matchers_.emplace(std::string(key), std::weak_ptr<MatcherRes>()).first;
  std::weak_ptr<MatcherRes>& slot = it->second;
  std::shared_ptr<MatcherRes> m = slot.lock();
  if (m == nullptr) {
    DRSIM_ASSIGN_OR_RETURN(dr::Matcher matcher, dr::Matcher::Create(table->table(), priority, mask));
    m = std::make_shared<MatcherRes>(table, std::move(matcher), this);
    slot = m;
  }
  last_matcher_key_.assign(key.data(), key.size());
  last_matcher_ = m;
  return m;
}

absl::StatusOr<InstalledRulePtr> DrObjects::InsertRule(const std::shared_ptr<MatcherRes>& matcher,
                                                       const hw::MatchParams& value,
                                                       absl::Span<const dr::Action* const> actions,
                                                       const RuleLabel& label) {
  DRSIM_ASSIGN_OR_RETURN(dr::Rule rule, dr::Rule::Create(matcher->matcher(), value, actions));
  return rules_.Make(matcher, std::move(rule), Note(label, actions));
}

RuleNote DrObjects::Note(const RuleLabel& label, absl::Span<const dr::Action* const> actions) {
  RuleNote note;
  if (label.flow) {
    note.port = label.flow->first;
    note.flow = label.flow->second;
  }
  if (!label.part.empty()) note.part = &*label_parts_.insert(label.part).first;
  note.actions.assign(actions.begin(), actions.end());
  return note;
}

namespace {

bool IdBelow(const std::pair<uint32_t, const RuleNote*>& entry, uint32_t id) { return entry.first < id; }

}  // namespace

void DrObjects::FileNote(uint32_t rule_id, const RuleNote* note) {
  if (notes_.empty() || notes_.back().first < rule_id) {
    notes_.emplace_back(rule_id, note);
    return;
  }
  // (DR's ids only grow; after they wrap, keep the order anyway.)
  notes_.emplace(std::lower_bound(notes_.begin(), notes_.end(), rule_id, IdBelow), rule_id, note);
}

void DrObjects::WithdrawNote(uint32_t rule_id) {
  size_t i = last_withdrawn_ + 1;
  if (i >= notes_.size() || notes_[i].first != rule_id) {
    i = std::lower_bound(notes_.begin(), notes_.end(), rule_id, IdBelow) - notes_.begin();
    if (i == notes_.size() || notes_[i].first != rule_id || notes_[i].second == nullptr) return;
  }
  notes_[i].second = nullptr;
  last_withdrawn_ = i;
  if (++withdrawn_ * 2 <= notes_.size() || withdrawn_ < 1024) return;
  notes_.erase(
      std::remove_if(notes_.begin(), notes_.end(), [](const auto& e) { return e.second == nullptr; }),
      notes_.end());
  withdrawn_ = 0;
  last_withdrawn_ = 0;
}

const RuleNote* DrObjects::FindNote(uint32_t rule_id) const {
  auto it = std::lower_bound(notes_.begin(), notes_.end(), rule_id, IdBelow);
  return it == notes_.end() || it->first != rule_id ? nullptr : it->second;
}

std::string DrObjects::LabelOf(uint32_t rule_id) const {
  const RuleNote* found = FindNote(rule_id);
  if (found == nullptr) return "";
  const RuleNote& note = *found;
  RuleLabel label;
  if (note.port >= 0) label.flow.emplace(static_cast<uint16_t>(note.port), note.flow);
  if (note.part != nullptr) label.part = *note.part;
  return label.ToString();
}

std::vector<std::string> DrObjects::RuleActions(uint32_t rule_id) const {
  std::vector<std::string> out;
  const RuleNote* note = FindNote(rule_id);
  if (note == nullptr) return out;
  for (const dr::Action* a : note->actions) out.push_back(a->Describe());
  return out;
}

std::optional<hw::MatchParams> DrObjects::MatcherMask(uint32_t matcher_id) const {
  for (const auto& [key, weak] : matchers_) {
    std::shared_ptr<MatcherRes> m = weak.lock();
    if (m == nullptr || m->matcher().id() != matcher_id) continue;
    hw::MatchParams mask;
    std::memcpy(mask.bytes(), key.data() + kMaskOffset, hw::kMatchParamBytes);
    return mask;
  }
  return std::nullopt;
}

std::vector<const dr::Domain*> DrObjects::Domains() const {
  std::vector<const dr::Domain*> out;
  for (const auto& [key, weak] : domains_) {
    if (std::shared_ptr<DomainRes> d = weak.lock()) out.push_back(&d->domain());
  }
  return out;
}

}  // namespace drsim::testpmd
