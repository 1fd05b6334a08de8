// Golden dumps of a NIC_RX, a NIC_TX and an FDB domain, with tables at several levels, matchers on every
// mask section drsim can match (outer, inner, misc, misc2, misc3, misc5) and rules using every action the
// API can create. Each dump is checked record by record against the reference's formats, then compared,
// with object ids ranked (testing::NormalizeIds), with tests/testdata/dump_<name>.csv.
//
// To regenerate the golden files after a deliberate change, run the test binary from the workspace root
// with DRSIM_UPDATE_GOLDENS set, and review the diff:
//   bazel build //tests:dump_golden_test && DRSIM_UPDATE_GOLDENS=1 bazel-bin/tests/dump_golden_test
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cstdlib>
#include <deque>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dr/dr.h"
#include "dr/dump.h"
#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "hw/match_params.h"
#include "hw/modify_header.h"
#include "sim/nic.h"
#include "tests/dump_test_util.h"
#include "tests/flow_meter.h"

namespace drsim::dr {
namespace {

using hw::kInner;
using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

MatchParams M(const MatchBuilder& b) {
  absl::StatusOr<MatchParams> p = b.Build();
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : MatchParams();
}

hw::Ipv4Address Ip4(const char* text) { return *hw::Ipv4Address::Parse(text); }
hw::Ipv6Address Ip6(const char* text) { return *hw::Ipv6Address::Parse(text); }
hw::MacAddress Mac(const char* text) { return *hw::MacAddress::Parse(text); }

template <typename T>
T Ok(absl::StatusOr<T> v, const char* what) {
  EXPECT_TRUE(v.ok()) << what << ": " << v.status();
  return v.ok() ? *std::move(v) : T();
}
#define OK(expr) Ok((expr), #expr)

// An outer header stack for encapsulation (its bytes do not reach the dump), and a new L2 header.
const std::vector<uint8_t> kEncapHeader(50, 0x11);
const std::vector<uint8_t> kL2Header(14, 0x22);

// The objects of a scenario, kept alive until its dump is taken (deques: references stay valid).
struct Scenario {
  std::deque<Table> tables;
  std::deque<Matcher> matchers;
  std::deque<Action> actions;
  std::deque<Rule> rules;

  Table& T(absl::StatusOr<Table> t) { return tables.emplace_back(OK(std::move(t))); }
  Matcher& Mt(absl::StatusOr<Matcher> m) { return matchers.emplace_back(OK(std::move(m))); }
  Action* A(absl::StatusOr<Action> a) {
    actions.push_back(OK(std::move(a)));
    return &actions.back();
  }
  void R(const Matcher& m, const MatchBuilder& value, std::vector<const Action*> list) {
    rules.push_back(OK(Rule::Create(m, M(value), list)));
  }
};

std::string GoldenPath(const std::string& name) { return "tests/testdata/dump_" + name + ".csv"; }

// Checks the stable-id dump of `domain` and compares it with its golden file.
void CheckGolden(const Domain& domain, const std::string& name) {
  absl::StatusOr<std::string> dump =
      testing::Capture([&](std::FILE* f) { return DumpDomain(domain, f, DumpOptions{true}); });
  ASSERT_TRUE(dump.ok()) << dump.status();
  absl::Status format = testing::CheckDump(*dump);
  EXPECT_TRUE(format.ok()) << format;
  const std::string normalized = testing::NormalizeIds(*dump);
  if (std::getenv("DRSIM_UPDATE_GOLDENS") != nullptr) {
    std::ofstream(GoldenPath(name)) << normalized;
    return;
  }
  std::ifstream in(GoldenPath(name));
  EXPECT_TRUE(in.good()) << "cannot read " << GoldenPath(name);
  std::stringstream golden;
  golden << in.rdbuf();
  EXPECT_EQ(normalized, golden.str()) << "dump of " << name << " differs from " << GoldenPath(name);
}

class DumpGoldenTest : public ::testing::Test {
 protected:
  sim::Nic nic_{2};
};

TEST_F(DumpGoldenTest, NicRx) {
  sim::Function& pf = nic_.pf();
  Domain domain = *Domain::Create(pf, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  Scenario s;
  Table& root = s.T(Table::Create(domain, 0));
  Table& t1 = s.T(Table::Create(domain, 1));
  Table& t2 = s.T(Table::Create(domain, 2));
  const uint32_t q1 = pf.CreateQueue(), q2 = pf.CreateQueue();
  const uint32_t tir = OK(pf.CreateTir({q1, q2}, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4));
  const uint32_t counters = OK(nic_.AllocateCounters(4));
  const uint32_t hits = OK(nic_.CreateAsoObject(hw::AsoKind::kFirstHit, 0));
  const uint32_t meters = OK(nic_.CreateAsoObject(hw::AsoKind::kFlowMeter, 0));
  Action* to_t1 = s.A(Action::DestTable(t1));
  Action* to_t2 = s.A(Action::DestTable(t2));
  Action* to_q1 = s.A(Action::DestQp(pf, q1));
  Action* to_q2 = s.A(Action::DestQp(pf, q2));
  Action* rss = s.A(Action::DestTir(pf, tir));
  Action* tag = s.A(Action::Tag(0x123456));
  Action* count = s.A(Action::FlowCounter(pf, counters, 1));
  Action* drop = s.A(Action::Drop());
  Action* miss = s.A(Action::DefaultMiss());
  Action* decap =
      s.A(Action::PacketReformat(domain, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, {}));
  Action* decap_l3 = s.A(
      Action::PacketReformat(domain, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2, kL2Header));
  const uint64_t set_dscp = hw::ModifySetWord(hw::ModifyField::kIpDscp, 0, 6, 46);
  Action* modify = s.A(Action::ModifyHeader(domain, 0, {&set_dscp, 1}));
  Action* pop = s.A(Action::PopVlan());
  Action* push = s.A(Action::PushVlan(domain, htonl(0x8100a00a)));
  Action* back_to_root = s.A(Action::DestRootTable(root, 1));
  Action* meter = s.A(Action::FlowMeter(t2, true, 2, tests::MeterPrm()));
  Action* sampler = s.A(Action::FlowSampler(8, t2, {tag, to_q2}));
  Action* array = s.A(Action::DestArray(domain, {{to_q1, nullptr}, {to_t2, nullptr}, {count, nullptr}}));
  Action* first_hit = s.A(Action::Aso(domain, hits, 3, MLX5DV_DR_ACTION_FLAGS_ASO_FIRST_HIT_SET, 1));
  Action* aso_meter = s.A(Action::Aso(domain, meters, 1, MLX5DV_DR_ACTION_FLAGS_ASO_FLOW_METER_GREEN, 3));

  // Root: everything to table 1, except one MAC tagged straight to a queue.
  Matcher& root_all = s.Mt(Matcher::Create(root, 1, 0, nullptr));
  s.R(root_all, MatchBuilder(), {to_t1});
  Matcher& root_mac =
      s.Mt(Matcher::Create(root, 0, M(MatchBuilder().Dmac(kOuter, hw::MacAddress::AllOnes()))));
  s.R(root_mac, MatchBuilder().Dmac(kOuter, Mac("02:00:00:00:00:01")), {tag, to_q1});

  // Table 1: an IPv4 5-tuple, VXLAN with inner IPv4, VLANs, ICMP (misc3) and IPv6 addresses.
  Matcher& l4 = s.Mt(Matcher::Create(t1, 0,
                                     M(MatchBuilder()
                                           .IpVersion(kOuter, 4)
                                           .IpProtocol(kOuter, 0xff)
                                           .Ipv4Dst(kOuter, Ip4("255.255.255.255"))
                                           .TcpDport(kOuter, 0xffff))));
  s.R(l4,
      MatchBuilder()
          .IpVersion(kOuter, 4)
          .IpProtocol(kOuter, 6)
          .Ipv4Dst(kOuter, Ip4("10.0.0.1"))
          .TcpDport(kOuter, 80),
      {tag, count, to_q1});
  s.R(l4,
      MatchBuilder()
          .IpVersion(kOuter, 4)
          .IpProtocol(kOuter, 6)
          .Ipv4Dst(kOuter, Ip4("10.0.0.1"))
          .TcpDport(kOuter, 23),
      {drop});
  s.R(l4,
      MatchBuilder()
          .IpVersion(kOuter, 4)
          .IpProtocol(kOuter, 17)
          .Ipv4Dst(kOuter, Ip4("10.0.0.2"))
          .TcpDport(kOuter, 53),
      {count, rss});
  Matcher& vxlan = s.Mt(Matcher::Create(
      t1, 1,
      M(MatchBuilder().VxlanVni(0xffffff).IpVersion(kInner, 4).Ipv4Dst(kInner, Ip4("255.255.255.0")))));
  s.R(vxlan, MatchBuilder().VxlanVni(100).IpVersion(kInner, 4).Ipv4Dst(kInner, Ip4("192.168.1.0")),
      {decap, tag, to_t2});
  s.R(vxlan, MatchBuilder().VxlanVni(200).IpVersion(kInner, 4).Ipv4Dst(kInner, Ip4("192.168.2.0")),
      {decap_l3, modify, to_q2});
  Matcher& vlan = s.Mt(Matcher::Create(t1, 2, M(MatchBuilder().CvlanTag(kOuter, 1).FirstVid(kOuter, 0xfff))));
  s.R(vlan, MatchBuilder().CvlanTag(kOuter, 1).FirstVid(kOuter, 10), {pop, tag, to_q2});
  s.R(vlan, MatchBuilder().CvlanTag(kOuter, 0), {push, back_to_root});
  Matcher& icmp = s.Mt(Matcher::Create(
      t1, 3, M(MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 0xff).IcmpType(0xff).IcmpCode(0xff))));
  s.R(icmp, MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 1).IcmpType(8).IcmpCode(0), {sampler});
  s.R(icmp, MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 1).IcmpType(0).IcmpCode(0), {array});
  Matcher& v6 = s.Mt(Matcher::Create(t1, 3,
                                     M(MatchBuilder()
                                           .IpVersion(kOuter, 6)
                                           .Ipv6Src(kOuter, hw::Ipv6Address::PrefixMask(64))
                                           .Ipv6Dst(kOuter, hw::Ipv6Address::PrefixMask(128)))));
  s.R(v6,
      MatchBuilder()
          .IpVersion(kOuter, 6)
          .Ipv6Src(kOuter, Ip6("2001:db8::"))
          .Ipv6Dst(kOuter, Ip6("2001:db8::1")),
      {meter});

  // Table 2: registers (misc2) with ASO actions, a raw tunnel header word (misc5), and a catch-all.
  Matcher& regs = s.Mt(Matcher::Create(t2, 0, M(MatchBuilder().RegC(0, 0xffff).RegA(0xffffffff))));
  s.R(regs, MatchBuilder().RegC(0, 0x2).RegA(0xa5a5), {first_hit, aso_meter, to_q2});
  Matcher& tunnel_header =
      s.Mt(Matcher::Create(t2, 1, M(MatchBuilder().Set(hw::Field::kTunnelHeader0, 0xffff0000))));
  s.R(tunnel_header, MatchBuilder().Set(hw::Field::kTunnelHeader0, 0x08000000), {drop});
  Matcher& all = s.Mt(Matcher::Create(t2, 2, 0, nullptr));
  s.R(all, MatchBuilder(), {miss});

  CheckGolden(domain, "nic_rx");
}

TEST_F(DumpGoldenTest, NicTx) {
  sim::Function& vf = *nic_.function(1);
  Domain domain = *Domain::Create(vf, MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  Scenario s;
  Table& root = s.T(Table::Create(domain, 0));
  Table& t1 = s.T(Table::Create(domain, 1));
  Table& t2 = s.T(Table::Create(domain, 3));
  const uint32_t counters = OK(nic_.AllocateCounters(2));
  Action* to_t1 = s.A(Action::DestTable(t1));
  Action* to_t2 = s.A(Action::DestTable(t2));
  Action* count = s.A(Action::FlowCounter(vf, counters, 0));
  Action* encap = s.A(Action::PacketReformat(
      domain, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, kEncapHeader));
  Action* encap_l3 = s.A(Action::PacketReformat(
      domain, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL, kEncapHeader));
  const uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kIpTtl, 0, 8, 64),
                            hw::ModifyAddWord(hw::ModifyField::kTcpSeqNum, 1)};
  Action* modify = s.A(Action::ModifyHeader(domain, 0, words));
  Action* push = s.A(Action::PushVlan(domain, htonl(0x88a80064)));
  Action* pop = s.A(Action::PopVlan());
  Action* drop = s.A(Action::Drop());
  Action* miss = s.A(Action::DefaultMiss());
  Action* meter = s.A(Action::FlowMeter(t2, false, 5, tests::MeterPrm()));

  Matcher& root_src =
      s.Mt(Matcher::Create(root, 0, M(MatchBuilder().Smac(kOuter, hw::MacAddress::AllOnes()))));
  s.R(root_src, MatchBuilder().Smac(kOuter, Mac("02:00:00:00:00:02")), {count, to_t1});

  Matcher& udp = s.Mt(Matcher::Create(
      t1, 0, M(MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 0xff).UdpDport(kOuter, 0xffff))));
  s.R(udp, MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 17).UdpDport(kOuter, 4789),
      {count, encap, to_t2});
  s.R(udp, MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 17).UdpDport(kOuter, 6081),
      {encap_l3, to_t2});
  Matcher& tcp = s.Mt(Matcher::Create(
      t1, 0, M(MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 0xff).TcpFlags(kOuter, 0x1ff))));
  s.R(tcp, MatchBuilder().IpVersion(kOuter, 4).IpProtocol(kOuter, 6).TcpFlags(kOuter, 0x2),
      {modify, push, to_t2});
  Matcher& l2 = s.Mt(Matcher::Create(
      t1, 5, M(MatchBuilder().Dmac(kOuter, hw::MacAddress::AllOnes()).Ethertype(kOuter, 0xffff))));
  s.R(l2, MatchBuilder().Dmac(kOuter, Mac("ff:ff:ff:ff:ff:ff")).Ethertype(kOuter, 0x0806), {drop});
  s.R(l2, MatchBuilder().Dmac(kOuter, Mac("02:00:00:00:00:09")).Ethertype(kOuter, 0x8100), {pop, meter});

  Matcher& all = s.Mt(Matcher::Create(t2, 0, 0, nullptr));
  s.R(all, MatchBuilder(), {miss});

  CheckGolden(domain, "nic_tx");
}

TEST_F(DumpGoldenTest, Fdb) {
  sim::Function& pf = nic_.pf();
  Domain domain = *Domain::Create(pf, MLX5DV_DR_DOMAIN_TYPE_FDB);
  Scenario s;
  Table& root = s.T(Table::Create(domain, 0));
  Table& t1 = s.T(Table::Create(domain, 1));
  Table& t2 = s.T(Table::Create(domain, 2));
  const uint32_t counters = OK(nic_.AllocateCounters(2));
  Action* to_t1 = s.A(Action::DestTable(t1));
  Action* vport1 = s.A(Action::DestVport(domain, 1));
  Action* vport2 = s.A(Action::DestVport(domain, 2));
  Action* wire = s.A(Action::DestVport(domain, 0xffff));
  Action* ib_port = s.A(Action::DestIbPort(domain, 1));
  Action* count = s.A(Action::FlowCounter(pf, counters, 1));
  Action* drop = s.A(Action::Drop());
  Action* miss = s.A(Action::DefaultMiss());
  Action* decap =
      s.A(Action::PacketReformat(domain, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2, {}));
  Action* encap = s.A(Action::PacketReformat(
      domain, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL, kEncapHeader));
  Action* encap_l3 = s.A(Action::PacketReformat(
      domain, 0, MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL, kEncapHeader));
  const uint64_t mark = hw::ModifySetWord(hw::ModifyField::kMetadataRegC0, 0, 0, 0x55);
  Action* modify = s.A(Action::ModifyHeader(domain, 0, {&mark, 1}));
  Action* push = s.A(Action::PushVlan(domain, htonl(0x81000005)));
  Action* pop = s.A(Action::PopVlan());
  Action* sampler = s.A(Action::FlowSampler(100, t2, {vport2}));
  Action* array = s.A(Action::DestArray(domain, {{vport1, nullptr}, {vport2, encap_l3}}));
  Action* meter = s.A(Action::FlowMeter(t2, true, 1, tests::MeterPrm()));

  Matcher& root_all = s.Mt(Matcher::Create(root, 0, 0, nullptr));
  s.R(root_all, MatchBuilder(), {to_t1});

  // Table 1: per source port (wire rules live only in the RX pipe, vport rules only in TX), GENEVE,
  // GRE and GTP-U tunnels, and registers.
  Matcher& by_port = s.Mt(Matcher::Create(
      t1, 0,
      M(MatchBuilder().SourcePort(0xffff).IpVersion(kOuter, 4).Ipv4Dst(kOuter, Ip4("255.255.255.255")))));
  s.R(by_port, MatchBuilder().SourcePort(0xffff).IpVersion(kOuter, 4).Ipv4Dst(kOuter, Ip4("10.0.0.1")),
      {decap, vport1});
  s.R(by_port, MatchBuilder().SourcePort(1).IpVersion(kOuter, 4).Ipv4Dst(kOuter, Ip4("10.9.9.9")),
      {encap, wire});
  s.R(by_port, MatchBuilder().SourcePort(2).IpVersion(kOuter, 4).Ipv4Dst(kOuter, Ip4("10.0.0.1")), {ib_port});
  Matcher& geneve = s.Mt(Matcher::Create(t1, 1, M(MatchBuilder().GeneveVni(0xffffff))));
  s.R(geneve, MatchBuilder().GeneveVni(7), {sampler});
  s.R(geneve, MatchBuilder().GeneveVni(8), {array});
  s.R(geneve, MatchBuilder().GeneveVni(9), {count, drop});
  s.R(geneve, MatchBuilder().GeneveVni(10), {count, miss});
  Matcher& gre = s.Mt(Matcher::Create(t1, 2, M(MatchBuilder().GreKey(0xffffffff).GreProtocol(0xffff))));
  s.R(gre, MatchBuilder().GreKey(0x1234).GreProtocol(0x6558), {modify, vport2});
  Matcher& gtpu = s.Mt(Matcher::Create(t1, 3, M(MatchBuilder().Set(hw::Field::kGtpuTeid, 0xffffffff))));
  s.R(gtpu, MatchBuilder().Set(hw::Field::kGtpuTeid, 0x1000), {push, vport1});
  s.R(gtpu, MatchBuilder().Set(hw::Field::kGtpuTeid, 0x2000), {pop, vport2});
  Matcher& regs = s.Mt(Matcher::Create(t1, 4, M(MatchBuilder().RegC(1, 0xffffffff))));
  s.R(regs, MatchBuilder().RegC(1, 0x99), {meter});

  Matcher& all = s.Mt(Matcher::Create(t2, 0, 0, nullptr));
  s.R(all, MatchBuilder(), {vport1});

  CheckGolden(domain, "fdb");
}

// Every record the API can produce appears in some golden file. ASO CT (3419) cannot be created: drsim
// does not model it.
TEST(DumpGoldenFilesTest, CoverEveryRecord) {
  std::set<int> seen;
  for (const char* name : {"nic_rx", "nic_tx", "fdb"}) {
    std::ifstream in(GoldenPath(name));
    ASSERT_TRUE(in.good()) << "cannot read " << GoldenPath(name);
    for (std::string line; std::getline(in, line);) seen.insert(std::stoi(line.substr(0, line.find(','))));
  }
  for (int type = 3400; type <= 3424; ++type) {
    if (type == 3419 || (type > 3419 && type < 3423)) continue;
    EXPECT_TRUE(seen.count(type)) << "no golden dump has action record " << type;
  }
  for (int type :
       {3000, 3001, 3002, 3003, 3004, 3100, 3101, 3102, 3200, 3202, 3203, 3204, 3205, 3300, 3303, 3304}) {
    EXPECT_TRUE(seen.count(type)) << "no golden dump has record " << type;
  }
}

}  // namespace
}  // namespace drsim::dr
