#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "dr/dr.h"
#include "dr/objects.h"

namespace drsim::dr {

using internal::DomainLock;
using internal::MatcherObj;
using internal::TableObj;

namespace {
// rdma-core accepts NUM_RULE hints while log_steering_sw_icm_size >= hint + 6; the modelled device has
// 2^30 bytes of steering memory, which allows 2^24-entry tables (the STE hash-table maximum too).
constexpr uint32_t kMaxLogRulesHint = 24;
}  // namespace

absl::StatusOr<Matcher> Matcher::Create(const Table& table, uint16_t priority, uint8_t match_criteria_enable,
                                        const mlx5dv_flow_match_parameters* mask) {
  TableObj* t = table.obj();
  if (t == nullptr) return absl::InvalidArgumentError("table handle is empty");
  DomainLock lock(t->domain);
  hw::Device& device = *t->domain->device;
  // Root tables' rules go to the kernel in rdma-core, which takes their masks and values at other sizes.
  const matcher::RulePath path =
      t->ft.level == 0 ? matcher::RulePath::kKernel : matcher::RulePath::kSoftwareSteering;
  DRSIM_ASSIGN_OR_RETURN(
      matcher::CompiledMask compiled,
      matcher::CompileMask(t->domain->type, match_criteria_enable, mask, device.parsed_fields(), path));

  auto* m = new MatcherObj(t, priority, std::move(compiled));
  if (internal::ReadsGeneveOption(*m)) device.RetainGeneveOptionMatch();
  // Tried before the matchers of higher priority numbers and the older ones of its own (hw::LookupBefore).
  t->matchers.insert(m);
  t->ft.LinkMatcher(&m->hw);
  internal::IndexMatcher(m);
  ++t->refs;
  device.TableChanged(&t->ft);
  return Matcher(m);
}

absl::StatusOr<Matcher> Matcher::Create(const Table& table, uint16_t priority, const hw::MatchParams& mask) {
  return Create(table, priority, mask.criteria(), mask.get());
}

absl::Status Matcher::SetLayout(const mlx5dv_dr_matcher_layout& layout) const {
  MatcherObj* m = handle_.get();
  if (m == nullptr) return absl::InvalidArgumentError("matcher handle is empty");
  DomainLock lock(m->table->domain);
  if (m->table->ft.level == 0) {
    return absl::UnimplementedError("set_layout is not supported for matchers of root (level 0) tables");
  }
  constexpr uint32_t kKnown = MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE | MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE;
  if (layout.flags & ~kKnown) {
    return absl::UnimplementedError(absl::StrFormat(
        "matcher layout flags 0x%x include bits other than RESIZABLE|NUM_RULE (0x3)", layout.flags));
  }
  const bool num_rule = layout.flags & MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE;
  if (num_rule && layout.log_num_of_rules_hint > kMaxLogRulesHint) {
    return absl::UnimplementedError(absl::StrFormat(
        "matcher layout log_num_of_rules_hint %d exceeds the device's steering memory (max %d)",
        layout.log_num_of_rules_hint, kMaxLogRulesHint));
  }
  if (num_rule) {
    // Room for the rules announced, as hardware steering sizes the table's ICM for them: the match table's
    // buckets and records, and the rule objects.
    m->table->domain->rule_pool.Reserve(size_t{1} << layout.log_num_of_rules_hint);
    m->hw.table.Reserve(size_t{1} << layout.log_num_of_rules_hint);
  }
  m->hw.table.set_fixed_size(!(layout.flags & MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE));
  return absl::OkStatus();
}

absl::Status Matcher::Destroy() {
  MatcherObj* m = handle_.get();
  if (m == nullptr) return absl::InvalidArgumentError("matcher handle is empty");
  DomainLock lock(m->table->domain);  // held across the check and the release
  if (m->refs > 1) {
    return absl::FailedPreconditionError(
        absl::StrFormat("matcher %d still holds %d rule(s); destroy them first", m->hw.id, m->rule_count));
  }
  handle_.Reset();
  return absl::OkStatus();
}

uint32_t Matcher::id() const { return handle_.get() ? handle_.get()->hw.id : 0; }
uint16_t Matcher::priority() const { return handle_.get() ? handle_.get()->hw.priority : 0; }

std::vector<matcher::SteBuilder> Matcher::builders() const {
  MatcherObj* m = handle_.get();
  if (m == nullptr) return {};
  return m->compiled.rx_builders.empty() ? m->compiled.tx_builders : m->compiled.rx_builders;
}

}  // namespace drsim::dr
