#include "hw/table_index_testing.h"

#include "absl/strings/str_format.h"

namespace drsim::hw {

MatchParams Acl(uint32_t src, uint32_t dst, uint16_t dport, uint8_t proto, uint8_t ttl) {
  return *MatchBuilder()
              .Ipv4Src(kOuter, Ipv4Address{src})
              .Ipv4Dst(kOuter, Ipv4Address{dst})
              .TcpDport(kOuter, dport)
              .IpProtocol(kOuter, proto)
              .TtlHoplimit(kOuter, ttl)
              .Build();
}

uint32_t Prefix(int length) { return length == 0 ? 0 : ~uint32_t{0} << (32 - length); }

std::string CoverProblem(const IndexedTable& t, const MatchParams& packet,
                         const std::vector<TableIndex::Candidate>& candidates) {
  const std::set<const CompiledMatcher*> hits = t.Hits(packet);
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (!LookupBefore(*candidates[i - 1].matcher, *candidates[i].matcher))
      return absl::StrFormat("candidate %d is not after candidate %d in lookup order", i, i - 1);
    if (candidates[i - 1].exact) return absl::StrFormat("candidate %d is exact but not the last", i - 1);
  }
  const bool bounded = !candidates.empty() && candidates.back().exact;
  if (bounded && hits.count(candidates.back().matcher) == 0) return "an exact candidate holds no hit";
  std::set<const CompiledMatcher*> named;
  for (const TableIndex::Candidate& c : candidates) named.insert(c.matcher);
  for (const CompiledMatcher* hit : hits) {
    if (bounded && LookupBefore(*candidates.back().matcher, *hit)) continue;
    if (named.count(hit) == 0)
      return absl::StrFormat("matcher %d holds a hit but is not a candidate", hit->id);
  }
  return "";
}

std::vector<std::vector<TableIndex::Candidate>> CandidatesOfAll(const TableIndex& index,
                                                                const std::vector<MatchParams>& packets,
                                                                uint64_t from_rank) {
  std::vector<TableIndex::Query> queries;
  std::vector<std::vector<TableIndex::Candidate>> out(
      packets.size(), std::vector<TableIndex::Candidate>(TableIndex::kMaxCandidates));
  for (size_t p = 0; p < packets.size(); ++p)
    queries.push_back({index.ReadWords(packets[p].bytes()), from_rank, out[p].data(), 0});
  index.CandidatesOf(queries.data(), queries.size());
  for (size_t p = 0; p < packets.size(); ++p) out[p].resize(queries[p].count);
  return out;
}

std::vector<size_t> ExactMatchers(IndexedTable* t, int n) {
  std::vector<size_t> ms;
  for (int i = 0; i < n; ++i)
    ms.push_back(t->AddMatcher(static_cast<uint16_t>(i), Acl(Prefix(32), Prefix(32), 0xffff, 0xff)));
  return ms;
}

std::string SameCandidates(const std::vector<std::vector<TableIndex::Candidate>>& got,
                           const std::vector<std::vector<TableIndex::Candidate>>& want, const char* what) {
  if (got.size() != want.size())
    return absl::StrFormat("%s: %d packets, not %d", what, got.size(), want.size());
  for (size_t p = 0; p < want.size(); ++p) {
    if (got[p].size() != want[p].size())
      return absl::StrFormat("%s: packet %d has %d candidates, not %d", what, p, got[p].size(),
                             want[p].size());
    for (size_t c = 0; c < want[p].size(); ++c) {
      const TableIndex::Candidate &g = got[p][c], &w = want[p][c];
      if (g.matcher != w.matcher || g.exact != w.exact || g.hit != w.hit)
        return absl::StrFormat(
            "%s: packet %d candidate %d differs (matcher %d exact %d hit %p, not %d %d %p)", what, p, c,
            g.matcher->id, g.exact, g.hit, w.matcher->id, w.exact, w.hit);
    }
  }
  return "";
}

}  // namespace drsim::hw
