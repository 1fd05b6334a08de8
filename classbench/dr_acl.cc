#include "classbench/dr_acl.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"

namespace drsim::classbench {
namespace {

constexpr size_t kPriorities = 0x10000;  // matcher priorities are 16 bits

}  // namespace

absl::StatusOr<DrAcl> InstallAcl(const dr::Table& table, const std::vector<Filter>& filters,
                                 const std::function<std::vector<const dr::Action*>(size_t)>& actions) {
  using hw::kOuter;
  const size_t n = filters.size();
  DrAcl acl;
  // Filters sharing priorities go in last first: among matchers of equal priority the newest is tried
  // first, and that must be the earliest filter's. Others go in first first (a table's index chooses the
  // words it reads from the matchers it has when it is built: the set's own order gives them).
  const bool shared = n > kPriorities;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = shared ? n - 1 - k : k;
    const Filter& f = filters[i];
    const auto priority = static_cast<uint16_t>(shared ? i * kPriorities / n : i);
    const std::vector<const dr::Action*> list = actions(i);
    const bool ports = !f.sport.all() || !f.dport.all();
    const std::vector<PortPrefix> sports = RangeToPrefixes(f.sport), dports = RangeToPrefixes(f.dport);
    std::vector<std::pair<std::pair<uint16_t, uint16_t>, size_t>> by_mask;  // (port masks) -> matcher
    for (const PortPrefix& sp : sports) {
      for (const PortPrefix& dp : dports) {
        hw::MatchBuilder mask, value;
        mask.IpVersion(kOuter, 4);
        value.IpVersion(kOuter, 4);
        if (f.src_mask) mask.Ipv4Src(kOuter, hw::Ipv4Address{f.src_mask}), value.Ipv4Src(kOuter, {f.src});
        if (f.dst_mask) mask.Ipv4Dst(kOuter, hw::Ipv4Address{f.dst_mask}), value.Ipv4Dst(kOuter, {f.dst});
        if (f.proto_mask) mask.IpProtocol(kOuter, f.proto_mask), value.IpProtocol(kOuter, f.proto);
        if (sp.mask) mask.TcpSport(kOuter, sp.mask), value.TcpSport(kOuter, sp.value);
        if (dp.mask) mask.TcpDport(kOuter, dp.mask), value.TcpDport(kOuter, dp.value);
        size_t m = 0;
        while (m < by_mask.size() && by_mask[m].first != std::make_pair(sp.mask, dp.mask)) ++m;
        if (m == by_mask.size()) {
          DRSIM_ASSIGN_OR_RETURN(hw::MatchParams built, mask.Build());
          absl::StatusOr<dr::Matcher> matcher = dr::Matcher::Create(table, priority, built);
          if (!matcher.ok()) {
            return absl::Status(matcher.status().code(),
                                absl::StrFormat("filter %d: %s", i, matcher.status().message()));
          }
          acl.matchers.push_back(*std::move(matcher));
          by_mask.push_back({{sp.mask, dp.mask}, acl.matchers.size() - 1});
        }
        DRSIM_ASSIGN_OR_RETURN(hw::MatchParams v, value.Build());
        absl::StatusOr<dr::Rule> rule = dr::Rule::Create(acl.matchers[by_mask[m].second], v, list);
        if (!rule.ok()) {
          return absl::Status(rule.status().code(),
                              absl::StrFormat("filter %d: %s", i, rule.status().message()));
        }
        acl.rules.push_back(*std::move(rule));
        acl.filter_of_rule.push_back(static_cast<uint32_t>(i));
        acl.matcher_of_rule.push_back(static_cast<uint32_t>(by_mask[m].second));
        acl.value_of_rule.push_back(std::move(v));
        if (!ports) break;
      }
      if (!ports) break;
    }
  }
  return acl;
}

std::optional<FilterMove> MoveOf(const Filter& f, uint32_t index) {
  constexpr uint32_t kFirstBits = ~uint32_t{0} << (32 - kMoveBits);
  const uint32_t bits = (1 + index % kMoveValues) << (32 - kMoveBits);
  if ((f.src_mask & kFirstBits) == kFirstBits) return FilterMove{true, bits};
  if ((f.dst_mask & kFirstBits) == kFirstBits) return FilterMove{false, bits};
  return std::nullopt;
}

Filter MovedFilter(const Filter& f, const FilterMove& move) {
  Filter moved = f;
  (move.source ? moved.src : moved.dst) ^= move.first_bits;
  return moved;
}

void MoveValue(const FilterMove& move, hw::MatchParams* value) {
  const hw::Field field = move.source ? hw::Field::kOuterSrcIp31_0 : hw::Field::kOuterDstIp31_0;
  hw::SetField(value->bytes(), field, hw::GetField(value->bytes(), field) ^ move.first_bits);
}

}  // namespace drsim::classbench
