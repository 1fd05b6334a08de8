// The descents of a compiled index's trees (TableIndex::TreeDescent): each the CPU has, forced in turn, names
// the walk's candidates for the same packets, on random rule sets and bursts of every size.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hw/flow_table.h"
#include "hw/match_params.h"
#include "hw/table_index.h"
#include "hw/table_index_testing.h"

namespace drsim::hw {
namespace {

using TreeDescent = TableIndex::TreeDescent;

constexpr TreeDescent kDescents[] = {TreeDescent::kScalar, TreeDescent::kAvx2, TreeDescent::kAvx512};
const char* DescentName(TreeDescent d) {
  return d == TreeDescent::kScalar ? "scalar" : d == TreeDescent::kAvx2 ? "avx2" : "avx512";
}

// The CPU flags the kernel lists (/proc/cpuinfo's first "flags" line; empty where there is none).
std::set<std::string> KernelCpuFlags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::set<std::string> flags;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string flag; words >> flag;) flags.insert(flag);
    break;
  }
  return flags;
}

// Puts back the descent the process chose when the test ends.
class TreeDescentTest : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_TRUE(TableIndex::SetTreeDescent(chosen_)); }
  const TreeDescent chosen_ = TableIndex::tree_descent();
};

// The process takes the fastest descent its CPU has, AVX2 before AVX-512 (as the kernel lists its flags,
// where it does), and no descent the CPU lacks can be forced.
TEST_F(TreeDescentTest, TakesTheFastestTheCpuHasAndRefusesWhatItLacks) {
  EXPECT_TRUE(TableIndex::CpuHas(TreeDescent::kScalar));
  const std::set<std::string> flags = KernelCpuFlags();
  if (!flags.empty()) {
    EXPECT_EQ(TableIndex::CpuHas(TreeDescent::kAvx2), flags.count("avx2") == 1);
    EXPECT_EQ(TableIndex::CpuHas(TreeDescent::kAvx512), flags.count("avx512f") == 1);
  }
  const TreeDescent fastest = TableIndex::CpuHas(TreeDescent::kAvx2)     ? TreeDescent::kAvx2
                              : TableIndex::CpuHas(TreeDescent::kAvx512) ? TreeDescent::kAvx512
                                                                         : TreeDescent::kScalar;
  EXPECT_EQ(chosen_, fastest);
  for (const TreeDescent d : kDescents) {
    EXPECT_EQ(TableIndex::SetTreeDescent(d), TableIndex::CpuHas(d)) << DescentName(d);
    EXPECT_EQ(TableIndex::tree_descent(), TableIndex::CpuHas(d) ? d : TreeDescent::kScalar) << DescentName(d);
    TableIndex::SetTreeDescent(TreeDescent::kScalar);
  }
}

// Random ACL sets (matchers over address prefixes, port masks and the protocol, some inexact on a word the
// index does not read), compiled; bursts of 1 to 40 packets near the rules and far from them, from the first
// rank and from later ones: every descent the CPU has names the walk's candidates. Which descents ran is
// reported (the tree_descents property and a line on stdout), and each the CPU has must have run.
TEST_F(TreeDescentTest, EveryDescentNamesTheWalksCandidates) {
  std::mt19937 rng(20261129);
  std::set<TreeDescent> ran;
  for (int set = 0; set < 6; ++set) {
    const int lengths[] = {0, 4, 8, 12, 16, 20, 24, 28, 32};
    const uint16_t port_masks[] = {0, 0xffff, 0xff00, 0xfff0, 0xf000};
    std::vector<uint32_t> hosts;
    for (int h = 0; h < 4 + set * 6; ++h) hosts.push_back(static_cast<uint32_t>(rng()));
    auto pick = [&](const auto& array) { return array[rng() % std::size(array)]; };
    // A value near the hosts: a host with some low bits changed, now and then anything.
    auto address = [&] {
      return rng() % 8 == 0 ? static_cast<uint32_t>(rng()) : pick(hosts) ^ (rng() % 4 == 0 ? rng() % 256 : 0);
    };
    auto value = [&] {
      return Acl(address(), address(), static_cast<uint16_t>(rng() % 3 == 0 ? rng() : rng() % 8 * 0x1111),
                 rng() % 3 == 0 ? 17 : 6, static_cast<uint8_t>(64 + rng() % 2));
    };
    IndexedTable t;
    std::vector<size_t> all;
    const int matchers = 40 + set * 60;
    for (int i = 0; i < matchers; ++i) {
      const size_t m = t.AddMatcher(static_cast<uint16_t>(rng() % 8),
                                    Acl(Prefix(pick(lengths)), Prefix(pick(lengths)), pick(port_masks),
                                        rng() % 2 ? 0xff : 0, rng() % 6 == 0 ? 0xff : 0));
      all.push_back(m);
      for (int r = 1 + static_cast<int>(rng() % 8); r > 0; --r) t.AddRule(m, value());
    }
    t.Build();
    for (int round = 0; round < 20; ++round) {
      std::vector<MatchParams> packets;
      for (size_t p = 1 + rng() % 40; p > 0; --p) packets.push_back(value());
      const uint64_t later = LookupRank(*t.matcher(pick(all)));
      const auto walked = CandidatesOfAll(t.index(), packets, 0);
      const auto walked_later = CandidatesOfAll(t.index(), packets, later);
      ASSERT_TRUE(t.index().Compile());
      for (const TreeDescent d : kDescents) {
        if (!TableIndex::SetTreeDescent(d)) continue;
        ASSERT_EQ(TableIndex::tree_descent(), d);
        ran.insert(d);
        const std::string what = std::string(DescentName(d)) + ", set " + std::to_string(set);
        EXPECT_EQ(SameCandidates(CandidatesOfAll(t.index(), packets, 0), walked, what.c_str()), "");
        EXPECT_EQ(SameCandidates(CandidatesOfAll(t.index(), packets, later), walked_later,
                                 (what + ", later ranks").c_str()),
                  "");
      }
      ASSERT_TRUE(t.index().IsCompiled());
      if (HasFailure()) return;
      // A change retires the compiled form; the next round compiles the changed set.
      const size_t m = pick(all);
      if (rng() % 2 == 0 || !t.RemoveRule(m, rng())) t.AddRule(m, value());
    }
  }
  std::string names;
  for (const TreeDescent d : ran) names += (names.empty() ? "" : " ") + std::string(DescentName(d));
  RecordProperty("tree_descents", names);
  std::printf("tree descents run: %s\n", names.c_str());
  for (const TreeDescent d : kDescents)
    EXPECT_EQ(ran.count(d), TableIndex::CpuHas(d) ? 1u : 0u) << DescentName(d);
}

}  // namespace
}  // namespace drsim::hw
