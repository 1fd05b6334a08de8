// dr/dump.h: scope of each dump, ids, the domain, mask and entry encodings, and errors. The golden files
// of whole domains are in dump_golden_test.cc.
#include "dr/dump.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dr/dr.h"
#include "dr/status_errno.h"
#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"
#include "sim/nic.h"
#include "tests/dump_test_util.h"

namespace drsim::dr {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;
using testing::Capture;
using testing::CheckDump;
using testing::Lines;

constexpr DumpOptions kStable{/*stable_ids=*/true};

std::string Dump(const std::function<absl::Status(std::FILE*)>& dump) {
  absl::StatusOr<std::string> out = Capture(dump);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return "";
  EXPECT_TRUE(CheckDump(*out).ok()) << CheckDump(*out) << "\n" << *out;
  return *out;
}

// The records of type `type` in `dump`, each split into fields.
std::vector<std::vector<std::string>> Records(const std::string& dump, int type) {
  std::vector<std::vector<std::string>> out;
  for (const std::string& line : Lines(dump)) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    if (f[0] == std::to_string(type)) out.push_back(f);
  }
  return out;
}

std::string Hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

MatchParams Mask(MatchBuilder b) { return *b.Build(); }

// A NIC_RX domain: a root table jumping to table 1, which has two matchers, and a table 2 with one.
class DumpTest : public ::testing::Test {
 protected:
  DumpTest()
      : domain_(*Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)),
        root_(*Table::Create(domain_, 0)),
        t1_(*Table::Create(domain_, 1)),
        t2_(*Table::Create(domain_, 2)),
        to_t1_(*Action::DestTable(t1_)),
        drop_(*Action::Drop()),
        tag_(*Action::Tag(0x42)),
        root_all_(*Matcher::Create(root_, 0, 0, nullptr)),
        root_rule_(*Rule::Create(root_all_, MatchParams(), {&to_t1_})),
        ports_(*Matcher::Create(t1_, 1, Mask(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0xffff)))),
        macs_(*Matcher::Create(t1_, 0, Mask(MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes())))),
        regs_(*Matcher::Create(t2_, 0, Mask(MatchBuilder().RegC(3, 0xff)))) {
    for (uint32_t port : {80, 443}) {
      rules_.push_back(*Rule::Create(ports_, Mask(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, port)),
                                     {&tag_, &drop_}));
    }
    rules_.push_back(*Rule::Create(
        macs_, Mask(MatchBuilder().Smac(kOuter, *hw::MacAddress::Parse("00:01:02:03:04:05"))), {&drop_}));
    rules_.push_back(*Rule::Create(regs_, Mask(MatchBuilder().RegC(3, 7)), {&tag_}));
  }

  sim::Nic nic_{2};
  Domain domain_;
  Table root_, t1_, t2_;
  Action to_t1_, drop_, tag_;
  Matcher root_all_;
  Rule root_rule_;
  Matcher ports_, macs_, regs_;
  std::vector<Rule> rules_;  // ports_ 80 and 443, macs_, regs_
};

// The lines of `dump` from the first record of `type` whose id is `id` up to the next record whose type
// is in `ends` (or the end).
std::vector<std::string> Section(const std::string& dump, int type, const std::string& id,
                                 std::vector<int> ends) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& line : Lines(dump)) {
    std::vector<std::string> f = absl::StrSplit(line, ',');
    const int t = std::stoi(f[0]);
    if (in && std::find(ends.begin(), ends.end(), t) != ends.end()) break;
    if (t == type && f[1] == id) in = true;
    if (in) out.push_back(line);
  }
  return out;
}

std::string Join(const std::vector<std::vector<std::string>>& parts) {
  std::string out;
  for (const auto& part : parts) {
    for (const std::string& line : part) absl::StrAppend(&out, line, "\n");
  }
  return out;
}

TEST_F(DumpTest, EachDumpHasRdmaCoresScope) {
  const std::string all = Dump([&](std::FILE* f) { return DumpDomain(domain_, f, kStable); });
  std::vector<std::string> header;
  for (const std::string& line : Lines(all)) {
    if (absl::StartsWith(line, "3100,")) break;
    header.push_back(line);
  }
  // Every table, in creation order, each with its matchers in lookup order and their rules.
  std::vector<std::string> tables, matchers;
  for (const auto& f : Records(all, 3100)) tables.push_back(f[1]);
  for (const auto& f : Records(all, 3200)) matchers.push_back(f[1]);
  EXPECT_EQ(tables, (std::vector<std::string>{Hex(root_.id()), Hex(t1_.id()), Hex(t2_.id())}));
  EXPECT_EQ(matchers, (std::vector<std::string>{Hex(root_all_.id()), Hex(macs_.id()), Hex(ports_.id()),
                                                Hex(regs_.id())}));
  EXPECT_EQ(Records(all, 3300).size(), 5u);

  // A table dump: the domain's records and that table's part of the domain dump.
  const std::vector<std::string> t1 = Section(all, 3100, Hex(t1_.id()), {3100});
  EXPECT_EQ(Dump([&](std::FILE* f) { return DumpTable(t1_, f, kStable); }), Join({header, t1}));

  // A matcher dump: the domain's and table's records, then the matcher with its rules.
  const std::vector<std::string> table_records = Section(all, 3100, Hex(t1_.id()), {3200});
  const std::vector<std::string> ports = Section(all, 3200, Hex(ports_.id()), {3100, 3200});
  EXPECT_EQ(Dump([&](std::FILE* f) { return DumpMatcher(ports_, f, kStable); }),
            Join({header, table_records, ports}));
  EXPECT_EQ(Records(Join({ports}), 3300).size(), 2u);

  // A rule dump: the domain's, table's and matcher's records, then the rule and its actions.
  const std::vector<std::string> matcher_records = Section(all, 3200, Hex(ports_.id()), {3300});
  const std::vector<std::string> rule = Section(all, 3300, Hex(rules_[1].id()), {3100, 3200, 3300});
  EXPECT_EQ(Dump([&](std::FILE* f) { return DumpRule(rules_[1], f, kStable); }),
            Join({header, table_records, matcher_records, rule}));
  EXPECT_EQ(rule.size(), 4u);  // the rule, its entry, tag and drop
}

// A matcher lists its rules in the order they were made (rdma-core's rule_list), also when deleted rules'
// records serve new ones and when another thread made one (its ids come from a block of its own, so a
// later rule may have a smaller id).
TEST_F(DumpTest, RulesAreListedInTheOrderTheyWereMade) {
  auto port_rule = [&](uint32_t port) {
    return *Rule::Create(ports_, Mask(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, port)), {&drop_});
  };
  std::vector<Rule> more;
  for (uint32_t port = 1; port <= 4; ++port) more.push_back(port_rule(port));
  ASSERT_TRUE(rules_[0].Destroy().ok());
  ASSERT_TRUE(more[1].Destroy().ok());
  more.push_back(port_rule(5));
  std::thread([&] { more.push_back(port_rule(6)); }).join();
  more.push_back(port_rule(7));
  ASSERT_GT(more[5].id(), more[6].id());  // the other thread's rule has the larger id
  const std::vector<uint32_t> made = {rules_[1].id(), more[0].id(), more[2].id(), more[3].id(),
                                      more[4].id(),   more[5].id(), more[6].id()};
  std::vector<std::string> want;
  for (uint32_t id : made) want.push_back(Hex(id));
  const std::string dump = Dump([&](std::FILE* f) { return DumpMatcher(ports_, f, kStable); });
  std::vector<std::string> listed;
  for (const auto& f : Records(dump, 3300)) listed.push_back(f[1]);
  EXPECT_EQ(listed, want);
}

TEST_F(DumpTest, RootTablesHaveOnlyHeaderAndMaskRecords) {
  const std::string dump = Dump([&](std::FILE* f) { return DumpTable(root_, f, kStable); });
  EXPECT_TRUE(Records(dump, 3101).empty());
  EXPECT_EQ(Records(dump, 3200).size(), 1u);
  EXPECT_EQ(Records(dump, 3205).size(), 1u);  // (rdma-core has none; mlx_steering_dump's tree view needs it)
  EXPECT_TRUE(Records(dump, 3202).empty());
  EXPECT_TRUE(Records(dump, 3204).empty());
  EXPECT_EQ(Records(dump, 3300).size(), 1u);
  EXPECT_TRUE(Records(dump, 3303).empty());
  ASSERT_EQ(Records(dump, 3405).size(), 1u);
  EXPECT_EQ(Records(dump, 3405)[0][3], Hex(t1_.id()));  // the destination's table id
  EXPECT_EQ(Records(dump, 3405)[0][4], Hex(t1_.id()));  // and its stable id
}

TEST_F(DumpTest, AddressesByDefaultIdsWhenStable) {
  const std::string by_address = Dump([&](std::FILE* f) { return DumpRule(rules_[0], f); });
  const uint64_t pid_domain = static_cast<uint64_t>(getpid()) << 8 | MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  auto address = [](const void* p) { return Hex(reinterpret_cast<uintptr_t>(p)); };
  EXPECT_EQ(Records(by_address, 3000)[0][1], Hex(pid_domain));
  EXPECT_EQ(Records(by_address, 3100)[0][1], address(t1_.obj()));
  EXPECT_EQ(Records(by_address, 3200)[0][1], address(ports_.obj()));
  EXPECT_EQ(Records(by_address, 3300)[0][1], address(rules_[0].obj()));
  EXPECT_EQ(Records(by_address, 3407)[0][1], address(tag_.obj()));
  EXPECT_EQ(Records(by_address, 3403)[0][1], address(drop_.obj()));

  const std::string stable = Dump([&](std::FILE* f) { return DumpRule(rules_[0], f, kStable); });
  EXPECT_EQ(Records(stable, 3000)[0][1], Hex(uint64_t{domain_.id()} << 8 | MLX5DV_DR_DOMAIN_TYPE_NIC_RX));
  EXPECT_EQ(Records(stable, 3100)[0][1], Hex(t1_.id()));
  EXPECT_EQ(Records(stable, 3200)[0][1], Hex(ports_.id()));
  EXPECT_EQ(Records(stable, 3300)[0][1], Hex(rules_[0].id()));
  EXPECT_EQ(Records(stable, 3407)[0][1], Hex(tag_.id()));
  EXPECT_EQ(Records(stable, 3403)[0][1], Hex(drop_.id()));
  // Everything else is the same.
  EXPECT_EQ(testing::NormalizeIds(by_address), testing::NormalizeIds(stable));
}

TEST_F(DumpTest, MaskIsRdmaCoresHostLayout) {
  const std::string dump = Dump([&](std::FILE* f) { return DumpTable(t2_, f, kStable); });
  // misc2 only: outer, inner, misc, then misc2 with metadata_reg_c_3 = 0xff (the reference's example
  // prints it as ff000000), misc3 and misc4 empty, misc5 empty with rdma-core's trailing empty field.
  std::vector<std::string> mask = Records(dump, 3205).at(0);
  ASSERT_EQ(mask.size(), 10u);
  EXPECT_EQ(mask[2] + mask[3] + mask[4], "");
  const size_t reg_c_3 = hw::Info(hw::Field::kMetadataRegC3).bit_offset / 32;
  std::string misc2(128, '0');
  misc2.replace(reg_c_3 * 8, 8, "ff000000");
  EXPECT_EQ(mask[5], misc2);
  EXPECT_EQ(mask[6] + mask[7] + mask[8] + mask[9], "");

  // outer: ip_version (word 4, bits 19..22 of the host word) and tcp_dport (word 5, bits 16..31).
  const std::string ports = Dump([&](std::FILE* f) { return DumpMatcher(ports_, f, kStable); });
  mask = Records(ports, 3205).at(0);
  std::string outer(128, '0');
  outer.replace(4 * 8, 8, "00002000");  // the mask's ip_version, 4, << 19, little-endian
  outer.replace(5 * 8, 8, "0000ffff");  // 0xffff << 16, little-endian
  EXPECT_EQ(mask[2], outer);
}

TEST_F(DumpTest, EntriesCarryTheMatchTableKey) {
  const std::string dump = Dump([&](std::FILE* f) { return DumpRule(rules_[0], f, kStable); });
  const std::vector<std::string> entry = Records(dump, 3303).at(0);
  EXPECT_EQ(entry[1], "0x0");  // the first record of the matcher's match table
  EXPECT_EQ(entry[2], Hex(rules_[0].id()));
  // Marker, version, two words: ip_version's word at 0x10 (4 << 9) and the TCP ports' at 0x14 (dport 80).
  EXPECT_EQ(entry[3],
            "d5010002"
            "0010"
            "00000800"
            "0014"
            "00000050");
  EXPECT_EQ(Records(dump, 3304).size(), 0u);  // NIC_RX has no TX pipe
  // Builders: the modelled ConnectX-6 Dx's lookups for the mask (ETHL2 for the L3 type, then the IPv4
  // 5-tuple), no definer formats.
  EXPECT_EQ(Records(dump, 3202).at(0)[3], "2");
  const std::string m = Hex(ports_.id());
  EXPECT_EQ(Records(dump, 3204).at(0), (std::vector<std::string>{"3204", m, "0", "1", "0x3", "-1"}));
  EXPECT_EQ(Records(dump, 3204).at(1), (std::vector<std::string>{"3204", m, "1", "1", "0x7", "-1"}));
}

TEST(DumpDomainInfoTest, DescribesTheFunctionAndItsVports) {
  sim::Nic nic(2);
  Domain fdb = *Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  ASSERT_TRUE(fdb.AllowDuplicateRules(false).ok());
  const std::string pf = Dump([&](std::FILE* f) { return DumpDomain(fdb, f, kStable); });
  const std::vector<std::string> domain = Records(pf, 3000).at(0);
  EXPECT_EQ(absl::StrJoin(domain.begin() + 2, domain.end(), ","), "2,00,1,drsim,drsim_pf,2,0,0,0,1");
  EXPECT_EQ(Records(pf, 3002).at(0)[2] + "," + Records(pf, 3002)[0][3], "1,0.0.0");
  EXPECT_EQ(Records(pf, 3004).at(0)[7], "1");  // the eSwitch manager
  std::vector<std::string> vports;
  for (const auto& f : Records(pf, 3003)) vports.push_back(f[2] + "/" + f[3]);
  EXPECT_EQ(vports, (std::vector<std::string>{"0/0x0", "1/0x1", "2/0x2", "65535/0x0"}));
  EXPECT_EQ(Records(pf, 3001).size(), 4u);

  Domain vf = *Domain::Create(*nic.function(1), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  const std::string vf_dump = Dump([&](std::FILE* f) { return DumpDomain(vf, f, kStable); });
  const std::vector<std::string> vf_domain = Records(vf_dump, 3000).at(0);
  EXPECT_EQ(absl::StrJoin(vf_domain.begin() + 2, vf_domain.end(), ","), "1,01,1,drsim,drsim_vf1,0,0,0,0,1");
  EXPECT_EQ(Records(vf_dump, 3004).at(0)[7], "0");
  ASSERT_EQ(Records(vf_dump, 3003).size(), 1u);  // only the wire, with the eSwitch manager's GVMI
  EXPECT_EQ(Records(vf_dump, 3003)[0][2] + "/" + Records(vf_dump, 3003)[0][3], "65535/0x0");
}

TEST(DumpPipesTest, FdbRulesOnSourcePortHaveOnePipe) {
  sim::Nic nic(2);
  Domain fdb = *Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  Table t = *Table::Create(fdb, 1);
  Matcher by_port = *Matcher::Create(t, 0, Mask(MatchBuilder().SourcePort(0xffff)));
  Action drop = *Action::Drop();
  Rule wire = *Rule::Create(by_port, Mask(MatchBuilder().SourcePort(0xffff)), {&drop});
  Rule vf = *Rule::Create(by_port, Mask(MatchBuilder().SourcePort(1)), {&drop});
  auto entries = [&](const Rule& r) {
    const std::string dump = Dump([&](std::FILE* f) { return DumpRule(r, f, kStable); });
    return absl::StrCat(Records(dump, 3303).size(), Records(dump, 3304).size());
  };
  EXPECT_EQ(entries(wire), "10");  // wire traffic only: the RX pipe
  EXPECT_EQ(entries(vf), "01");    // a vport's traffic only: the TX pipe
  // The matcher has both pipes; on RX the source_port lookup is dropped, as rdma-core's optimize_rx does.
  const std::string dump = Dump([&](std::FILE* f) { return DumpMatcher(by_port, f, kStable); });
  EXPECT_EQ(Records(dump, 3202).size(), 1u);
  EXPECT_EQ(Records(dump, 3203).size(), 1u);
}

TEST_F(DumpTest, FixedSizeMatchersPrintTheirLogSize) {
  mlx5dv_dr_matcher_layout layout{MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 10};
  ASSERT_TRUE(ports_.SetLayout(layout).ok());
  std::string dump = Dump([&](std::FILE* f) { return DumpMatcher(ports_, f, kStable); });
  EXPECT_EQ(Records(dump, 3202).at(0)[6], "11");  // 2^10 rules at 4/5 load: 1280 slots, 2^11 rounded up
  layout.flags |= MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE;
  ASSERT_TRUE(ports_.SetLayout(layout).ok());
  dump = Dump([&](std::FILE* f) { return DumpMatcher(ports_, f, kStable); });
  EXPECT_EQ(Records(dump, 3202).at(0)[6], "-1");
}

void ExpectInvalid(const absl::Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), needle)) << s;
}

TEST_F(DumpTest, EmptyHandlesAndNullStreamsAreInvalid) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ExpectInvalid(DumpDomain(Domain(), out), "domain handle is empty");
  ExpectInvalid(DumpTable(Table(), out), "table handle is empty");
  ExpectInvalid(DumpMatcher(Matcher(), out), "matcher handle is empty");
  ExpectInvalid(DumpRule(Rule(), out), "rule handle is empty");
  Rule destroyed = std::move(rules_.back());
  ASSERT_TRUE(destroyed.Destroy().ok());
  ExpectInvalid(DumpRule(destroyed, out), "rule handle is empty");
  ExpectInvalid(DumpDomain(domain_, nullptr), "output stream is null");
  ExpectInvalid(DumpRule(rules_[0], nullptr), "output stream is null");
  EXPECT_EQ(std::ftell(out), 0);  // nothing was written
  std::fclose(out);
  EXPECT_EQ(ErrnoFromStatus(DumpTable(Table(), nullptr)), EINVAL);
}

TEST_F(DumpTest, WriteErrorsReturnTheirErrno) {
  std::FILE* full = std::fopen("/dev/full", "w");
  ASSERT_NE(full, nullptr);
  absl::Status s = DumpDomain(domain_, full);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(ErrnoFromStatus(s), ENOSPC) << s;
  EXPECT_TRUE(absl::StartsWith(s.message(), "writing the dump: ")) << s;
  std::fclose(full);

  std::FILE* read_only = std::fopen("/dev/null", "r");
  ASSERT_NE(read_only, nullptr);
  s = DumpRule(rules_[0], read_only);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_EQ(ErrnoFromStatus(s), EBADF) << s;
  std::fclose(read_only);
}

TEST_F(DumpTest, DumpsWhileAnotherThreadChangesRules) {
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (uint32_t port = 1000; !stop.load(); port = port % 60000 + 1) {
      absl::StatusOr<Rule> r =
          Rule::Create(ports_, Mask(MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, port)), {&drop_});
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_TRUE(r->Destroy().ok());
    }
  });
  for (int i = 0; i < 50; ++i) Dump([&](std::FILE* f) { return DumpDomain(domain_, f); });
  stop = true;
  writer.join();
}

}  // namespace
}  // namespace drsim::dr
