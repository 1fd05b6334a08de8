// FlowEngine's aging: flow query ... age, flow aged (testpmd/aging.h has the model).
#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "testpmd/aging.h"
#include "testpmd/context.h"
#include "testpmd/engine.h"

namespace drsim::testpmd {

absl::StatusOr<uint32_t> FlowEngine::FlowOfUserId(uint16_t port, uint64_t user_id) const {
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(port));
  auto flows = context_->flows.find(port);
  if (flows != context_->flows.end()) {
    for (const auto& [id, flow] : flows->second) {
      if (flow->shape->has_user_id && flow->user_id == user_id) return id;
    }
  }
  return absl::NotFoundError(absl::StrFormat("Flow rule #%d not found (no flow with that user_id)", user_id));
}

absl::StatusOr<uint32_t> FlowEngine::QueriedFlow(const FlowQueryCmd& c) const {
  if (c.by_user_id) return FlowOfUserId(c.port, c.rule_id);
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(c.port));
  auto flows = context_->flows.find(c.port);
  if (c.rule_id > 0xffffffff || flows == context_->flows.end() || !flows->second.count(c.rule_id)) {
    return absl::NotFoundError(absl::StrFormat("Flow rule #%d not found", c.rule_id));
  }
  return static_cast<uint32_t>(c.rule_id);
}

absl::StatusOr<AgeResult> FlowEngine::QueryAge(uint16_t port, uint32_t flow_id) const {
  FlowQueryCmd query;
  query.what = FlowQueryCmd::What::kAge;
  query.port = port;
  query.rule_id = flow_id;
  DRSIM_ASSIGN_OR_RETURN(const uint32_t id, QueriedFlow(query));
  const Flow& flow = *context_->flows.at(port).at(id);
  if (flow.objects.age() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow rule #%d has no age action: age data not available", flow_id));
  }
  return testpmd::QueryAge(nic_, *flow.objects.age());
}

absl::StatusOr<AgedReport> FlowEngine::AgedFlows(uint16_t port, bool destroy) {
  pristine_ = false;
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(port));
  AgedReport report;
  // Reported once: an age leaves the report for good once listed.
  auto newly_aged = [this](AgeState& age) -> absl::StatusOr<bool> {
    if (age.reported) return false;
    DRSIM_ASSIGN_OR_RETURN(const AgeResult r, testpmd::QueryAge(nic_, age));
    age.reported = r.aged;
    return r.aged;
  };
  for (const auto& [id, flow] : context_->flows[port]) {
    // A flow aging by an indirect age is reported as that indirect action, not as a flow.
    AgeState* age = flow->objects.age();
    if (age == nullptr || flow->objects.indirect_age()) continue;
    DRSIM_ASSIGN_OR_RETURN(const bool aged, newly_aged(*age));
    if (aged) report.flows.push_back(flow->Info());
  }
  for (const auto& [id, age] : context_->indirect.Ages(port)) {
    DRSIM_ASSIGN_OR_RETURN(const bool aged, newly_aged(*age));
    if (aged) report.indirect.push_back(id);
  }
  if (destroy && !report.flows.empty()) {
    std::vector<uint32_t> ids;
    for (const FlowInfo& f : report.flows) ids.push_back(f.id);
    Record(Command{SourcePos{}, FlowDestroyCmd{port, ids}});
    for (const FlowInfo& f : report.flows) {
      const std::vector<uint32_t> gone = EraseFlows(port, {f.id});
      report.destroyed.insert(report.destroyed.end(), gone.begin(), gone.end());
    }
  }
  return report;
}

std::string FlowEngine::FormatAged(uint16_t port, const AgedReport& report) {
  const size_t total = report.flows.size() + report.indirect.size();
  std::string out = absl::StrFormat("Port %d total aged flows: %d\n", port, total);
  if (total == 0) return out;
  absl::StrAppendFormat(&out, "%-20s\tID\tGroup\tPrio\tAttr\n", "Type");
  for (const FlowInfo& f : report.flows) {
    absl::StrAppendFormat(&out, "%-20s\t%d\t%d\t%d\t%c%c%c\t\n", "Flow", f.id, f.group, f.priority,
                          f.ingress ? 'i' : '-', f.egress ? 'e' : '-', f.transfer ? 't' : '-');
    if (std::find(report.destroyed.begin(), report.destroyed.end(), f.id) != report.destroyed.end()) {
      absl::StrAppendFormat(&out, "Flow rule #%d destroyed\n", f.id);
    }
  }
  for (const uint32_t id : report.indirect) absl::StrAppendFormat(&out, "%-20s\t%d\n", "Indirect action", id);
  absl::StrAppendFormat(&out, "\n%d flows destroyed\n", report.destroyed.size());
  return out;
}

}  // namespace drsim::testpmd
