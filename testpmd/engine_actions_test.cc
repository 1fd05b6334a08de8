// FlowEngine: header actions checked on the frames the NIC delivers — VXLAN/NVGRE/raw encapsulation and
// decapsulation, VLAN push/pop/rewrite, header rewrites, metadata and tags across groups.
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "sim/rx_queue.h"
#include "testpmd/engine.h"
#include "testpmd/engine_test_util.h"

namespace drsim::testpmd {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<uint8_t> Slice(const std::vector<uint8_t>& v, size_t from, size_t n = std::string::npos) {
  return std::vector<uint8_t>(v.begin() + from, n == std::string::npos ? v.end() : v.begin() + from + n);
}

TEST_F(EngineTest, VxlanDecapToAVf) {
  Run("flow create 0 transfer pattern represented_port ethdev_port_id is 0 / eth / ipv4 / udp / vxlan vni is "
      "100 "
      "/ end actions vxlan_decap / count / represented_port ethdev_port_id 1 / end");
  Run("flow create 1 ingress pattern end actions queue index 0 / end");
  const sim::FrameSpec inner = Ipv4("10.1.0.20", "10.1.0.10", sim::kIpProtoTcp, 40000, 80);
  sim::Verdict v = nic_.ReceiveFromWire(Vxlan(100, inner));
  ASSERT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.qp_num, Qp(1, 0));
  std::optional<sim::RxCompletion> c = PollQueue(1, 0);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->frame, sim::BuildFrame(inner));
  // The counter runs after the decap: it counts the inner frame's bytes.
  EXPECT_EQ(Run("flow query 0 0 count").count->bytes, sim::BuildFrame(inner).size());
  // Another VNI misses: the FDB default is the eSwitch manager, whose interface takes it.
  v = nic_.ReceiveFromWire(Vxlan(200, inner));
  EXPECT_EQ(v.fate, sim::Fate::kPort);
  EXPECT_EQ(v.vport, 0);
}

TEST_F(EngineTest, TransferRulesMatchTheirOwnPortAsTheSource) {
  // As in mlx5: no port item, so port 0's rule matches the wire (the FDB RX pipe), where decap is legal.
  Run("flow create 0 transfer pattern eth / ipv4 / udp / vxlan vni is 100 / end actions vxlan_decap / "
      "represented_port ethdev_port_id 1 / end");
  Run("flow create 1 ingress pattern end actions queue index 0 / end");
  const sim::FrameSpec inner = Ipv4("10.1.0.20", "10.1.0.10", sim::kIpProtoTcp, 40000, 80);
  EXPECT_EQ(nic_.ReceiveFromWire(Vxlan(100, inner)).qp_num, Qp(1, 0));
  // The same VXLAN frame sent by VF2 is not the wire's: the rule leaves it to the FDB's default, the eSwitch
  // manager, whose interface takes it (the PF has no ingress rules).
  const sim::Verdict from_vf2 = nic_.function(2)->Send(Vxlan(100, inner));
  EXPECT_EQ(from_vf2.fate, sim::Fate::kPort);
  EXPECT_EQ(from_vf2.vport, 0);

  // Port 1's rule matches what VF1 sends, in the TX pipe, which takes no decap (rdma-core's table).
  absl::StatusOr<CommandResult> r =
      Try("flow create 1 transfer pattern eth / ipv4 / udp / vxlan / end actions vxlan_decap / "
          "represented_port ethdev_port_id 2 / end");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("vxlan_decap: DR rejects the rule"));
  EXPECT_THAT(r.status().message(), HasSubstr("traffic from the wire is port 0's"));
  EXPECT_EQ(engine_.counts().flows, 2);
}

TEST_F(EngineTest, VxlanEncapFromAVfToTheWire) {
  Run("set vxlan ip-version ipv4 vni 42 udp-src 4000 udp-dst 4789 ip-src 192.0.2.1 ip-dst 192.0.2.2 eth-src "
      "0c:42:a1:00:00:01 eth-dst 0c:42:a1:00:00:02");
  Run("flow create 0 transfer pattern represented_port ethdev_port_id is 1 / end actions vxlan_encap / "
      "represented_port ethdev_port_id 0 / end");
  const std::vector<uint8_t> inner = Tcp("10.1.0.10", "10.1.0.20", 80, 40000);
  EXPECT_EQ(nic_.function(1)->Send(inner).fate, sim::Fate::kWire);
  std::optional<std::vector<uint8_t>> out = nic_.PollWire();
  ASSERT_TRUE(out.has_value());
  ASSERT_EQ(out->size(), inner.size() + 50);
  const uint8_t* f = out->data();
  EXPECT_EQ(hw::LoadBe16(f + 12), 0x0800);
  EXPECT_EQ(hw::LoadBe16(f + 16), out->size() - 14);  // the device set the IPv4 total length
  EXPECT_EQ(f[22], 64);                               // mlx5's default TTL
  EXPECT_EQ(hw::LoadBe32(f + 26), 0xc0000201u);
  EXPECT_EQ(hw::LoadBe16(f + 34), 4000);
  EXPECT_EQ(hw::LoadBe16(f + 36), 4789);
  EXPECT_EQ(f[42], 0x08);
  EXPECT_EQ(hw::LoadBe32(f + 46) >> 8, 42u);
  EXPECT_THAT(Slice(*out, 50), ElementsAreArray(inner));

  // The same through VF2's NIC_TX root table (a ROOT_LEVEL reformat), then the eSwitch — without FDB rules,
  // to the wire (with them, the FDB default would send it to the eSwitch manager).
  Run("flow flush 0");
  Run("flow create 2 egress pattern eth / end actions vxlan_encap / end");
  EXPECT_EQ(nic_.function(2)->Send(inner).fate, sim::Fate::kWire);
  out = nic_.PollWire();
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(out->size(), inner.size() + 50);
}

TEST_F(EngineTest, NvgreEncap) {
  Run("set nvgre ip-version ipv4 tni 77 ip-src 192.0.2.1 ip-dst 192.0.2.2 eth-src 0c:42:a1:00:00:01 eth-dst "
      "0c:42:a1:00:00:02");
  Run("flow create 0 transfer pattern represented_port ethdev_port_id is 2 / end actions nvgre_encap / "
      "represented_port ethdev_port_id 0 / end");
  const std::vector<uint8_t> inner = Udp("10.2.0.10", "10.2.0.20", 1, 2);
  ASSERT_EQ(nic_.function(2)->Send(inner).fate, sim::Fate::kWire);
  std::vector<uint8_t> out = *nic_.PollWire();
  ASSERT_EQ(out.size(), inner.size() + 42);
  EXPECT_EQ(out[23], 47);
  EXPECT_EQ(hw::LoadBe16(&out[34]), 0x2000);
  EXPECT_EQ(hw::LoadBe16(&out[36]), 0x6558);
  EXPECT_EQ(hw::LoadBe32(&out[38]) >> 8, 77u);
}

TEST_F(EngineTest, RawEncapAndL3Decap) {
  Run("set raw_encap 3 eth dst is 0c:42:a1:00:00:02 src is 0c:42:a1:00:00:01 / ipv4 src is 192.0.2.1 dst is "
      "192.0.2.2 ttl is 9 / udp src is 7 dst is 4789 / vxlan vni is 7 / end_set");
  Run("flow create 0 transfer pattern represented_port ethdev_port_id is 2 / end actions raw_encap index 3 / "
      "represented_port ethdev_port_id 0 / end");
  const std::vector<uint8_t> inner = Tcp("10.2.0.10", "10.2.0.20", 1, 2);
  ASSERT_EQ(nic_.function(2)->Send(inner).fate, sim::Fate::kWire);
  std::vector<uint8_t> out = *nic_.PollWire();
  ASSERT_EQ(out.size(), inner.size() + 50);
  EXPECT_EQ(hw::LoadBe16(&out[12]), 0x0800);  // from the ipv4 item
  EXPECT_EQ(out[22], 9);
  EXPECT_EQ(out[23], 17);  // from the udp item
  EXPECT_EQ(hw::LoadBe16(&out[36]), 4789);
  EXPECT_EQ(out[42], 0x08);  // testpmd's default VXLAN flags
  EXPECT_EQ(hw::LoadBe32(&out[46]) >> 8, 7u);

  // raw_decap of a tunnel + raw_encap of an L2 header = L3 decap: the inner IP packet under a new header.
  Run("set raw_decap 1 eth / ipv4 / udp / vxlan / end_set");
  Run("set raw_encap 2 eth dst is 02:aa:00:00:00:01 src is 02:bb:00:00:00:01 type is 0x0800 / end_set");
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / ipv4 / udp / vxlan / end actions raw_decap index 1 / "
      "raw_encap "
      "index 2 / queue index 2 / end");
  const sim::FrameSpec inner_spec = Ipv4("10.3.0.1", "10.3.0.2", sim::kIpProtoUdp, 5, 6);
  sim::Verdict v = nic_.ReceiveFromWire(Vxlan(9, inner_spec));
  ASSERT_EQ(v.fate, sim::Fate::kQueued);
  std::vector<uint8_t> got = PollQueue(0, 2)->frame;
  const std::vector<uint8_t> inner_frame = sim::BuildFrame(inner_spec);
  ASSERT_EQ(got.size(), inner_frame.size());
  EXPECT_THAT(Slice(got, 0, 12), ElementsAreArray({0x02, 0xaa, 0, 0, 0, 1, 0x02, 0xbb, 0, 0, 0, 1}));
  EXPECT_THAT(Slice(got, 12), ElementsAreArray(Slice(inner_frame, 12)));
}

TEST_F(EngineTest, VlanPushPopAndRewrite) {
  // VF1's egress: push a tag in group 1 (push is not a root-table action).
  Run("flow create 1 egress pattern end actions jump group 1 / end");
  Run("flow create 1 egress group 1 pattern eth / end actions of_push_vlan ethertype 0x8100 / "
      "of_set_vlan_vid "
      "vlan_vid 20 / of_set_vlan_pcp vlan_pcp 3 / end");
  const std::vector<uint8_t> plain = Udp("10.4.0.1", "10.4.0.2", 1, 2);
  ASSERT_EQ(nic_.function(1)->Send(plain).fate, sim::Fate::kWire);
  std::vector<uint8_t> out = *nic_.PollWire();
  ASSERT_EQ(out.size(), plain.size() + 4);
  EXPECT_EQ(hw::LoadBe16(&out[12]), 0x8100);
  EXPECT_EQ(hw::LoadBe16(&out[14]), 3 << 13 | 20);

  // PF ingress: pop VID 10, rewrite VID 11 to 99.
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / vlan vid is 10 / end actions of_pop_vlan / queue index 0 "
      "/ end");
  Run("flow create 0 ingress group 1 pattern eth / vlan vid is 11 / end actions of_set_vlan_vid vlan_vid 99 "
      "/ "
      "queue index 1 / end");
  sim::FrameSpec tagged = Ipv4("10.4.0.1", "10.4.0.2", sim::kIpProtoUdp, 1, 2);
  tagged.vlans = {sim::VlanTag{0x8100, 10}};
  ASSERT_EQ(nic_.ReceiveFromWire(sim::BuildFrame(tagged)).qp_num, Qp(0, 0));
  sim::FrameSpec untagged = tagged;
  untagged.vlans.clear();
  EXPECT_EQ(PollQueue(0, 0)->frame, sim::BuildFrame(untagged));
  tagged.vlans = {sim::VlanTag{0x8100, 11}};
  ASSERT_EQ(nic_.ReceiveFromWire(sim::BuildFrame(tagged)).qp_num, Qp(0, 1));
  EXPECT_EQ(hw::LoadBe16(&PollQueue(0, 1)->frame[14]) & 0xfff, 99);
}

TEST_F(EngineTest, HeaderRewrites) {
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / ipv4 / tcp / end actions set_ipv4_src ipv4_addr 10.9.9.9 "
      "/ "
      "set_tp_dst port 8080 / dec_ttl / set_mac_dst mac_addr 02:00:00:00:00:aa / set_ipv4_dscp dscp_value 46 "
      "/ "
      "queue index 3 / end");
  const std::vector<uint8_t> in = Tcp("10.5.0.1", "10.5.0.2", 1234, 80);
  ASSERT_EQ(nic_.ReceiveFromWire(in).qp_num, Qp(0, 3));
  const std::vector<uint8_t> out = PollQueue(0, 3)->frame;
  ASSERT_EQ(out.size(), in.size());
  EXPECT_THAT(Slice(out, 0, 6), ElementsAreArray({0x02, 0, 0, 0, 0, 0xaa}));
  EXPECT_EQ(out[15] >> 2, 46);     // DSCP
  EXPECT_EQ(out[22], in[22] - 1);  // TTL
  EXPECT_EQ(hw::LoadBe32(&out[26]), 0x0a090909u);
  EXPECT_EQ(hw::LoadBe16(&out[36]), 8080);
  EXPECT_EQ(hw::LoadBe16(&out[34]), 1234);

  // A rewrite needs its layer in the pattern, as mlx5 checks.
  const std::string bad =
      "flow create 0 ingress group 1 pattern eth / ipv6 / end actions set_ipv4_src ipv4_addr 1.1.1.1 / drop "
      "/ end";
  absl::StatusOr<CommandResult> r = Try(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorColumn(r.status()), static_cast<int>(bad.find("set_ipv4_src")) + 1);
}

TEST_F(EngineTest, MetaTagAndModifyFieldAcrossGroups) {
  Run("flow create 0 ingress pattern end actions jump group 1 / end");
  Run("flow create 0 ingress group 1 pattern eth / ipv4 src is 10.6.0.1 / end actions set_meta data 0x55 "
      "mask 0xff "
      "/ set_tag data 0x1200 index 2 mask 0xff00 / jump group 2 / end");
  Run("flow create 0 ingress group 1 pattern eth / ipv4 src is 10.6.0.2 / end actions modify_field op set "
      "dst_type "
      "tag dst_tag_index 0 src_type ipv4_src width 32 / jump group 2 / end");
  Run("flow create 0 ingress group 2 pattern meta data is 0x55 / tag data is 0x1200 index is 2 / end actions "
      "queue "
      "index 4 / end");
  Run("flow create 0 ingress group 2 pattern tag data is 0x0a060002 index is 0 / end actions queue index 5 / "
      "end");
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.6.0.1", "10.6.0.9", 1, 2)).qp_num, Qp(0, 4));
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.6.0.2", "10.6.0.9", 1, 2)).qp_num, Qp(0, 5));
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.6.0.3", "10.6.0.9", 1, 2)).fate, sim::Fate::kDomainDefault);
}

}  // namespace
}  // namespace drsim::testpmd
