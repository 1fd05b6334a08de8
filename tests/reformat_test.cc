// Packet reformat end to end — rdma-core's test_packet_reformat_{l2,l3}_{gre,geneve} and their root
// variants, FDB decap/encap across the eSwitch, creation checks — and the frames of the encap, decap,
// modify-header and VLAN scenarios written to a pcap and judged by tshark.
#include <arpa/inet.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "dr/dr.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/pcap_file.h"
#include "sim/rx_queue.h"
#include "tests/tshark_check.h"

namespace drsim {
namespace {

using hw::kOuter;
using hw::MatchBuilder;
using hw::MatchParams;

constexpr auto kL2Decap = MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TUNNEL_TO_L2;
constexpr auto kL2Encap = MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L2_TUNNEL;
constexpr auto kL3Decap = MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L3_TUNNEL_TO_L2;
constexpr auto kL3Encap = MLX5DV_FLOW_ACTION_PACKET_REFORMAT_TYPE_L2_TO_L3_TUNNEL;

const hw::MacAddress kSrc = *hw::MacAddress::Parse("88:88:88:88:88:88");
const hw::MacAddress kDst = *hw::MacAddress::Parse("24:8a:07:a5:28:a2");

sim::FrameSpec InnerSpec() {
  sim::FrameSpec s;
  s.smac = kSrc;
  s.dmac = kDst;
  s.ipv4_src = *hw::Ipv4Address::Parse("1.1.1.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("2.2.2.2");
  s.protocol = sim::kIpProtoUdp;
  s.sport = 1234;
  s.dport = 5678;
  s.payload_len = 40;  // 82 bytes: no padding, so decapsulation gives back exactly this frame
  return s;
}

std::vector<uint8_t> Inner() { return sim::BuildFrame(InnerSpec()); }

// Inner() in ETH/IPv4/GRE `version` with `protocol` and the optional words `bits` announce (1 checksum,
// 2 key, 4 sequence, 8 acknowledgment), as a peer sends it.
std::vector<uint8_t> GreFrame(uint16_t protocol, uint8_t version, int bits) {
  sim::TunnelFrameSpec t;
  t.outer.smac = *hw::MacAddress::Parse("02:00:00:00:00:aa");
  t.outer.dmac = *hw::MacAddress::Parse("02:00:00:00:00:bb");
  t.outer.ipv4_src = *hw::Ipv4Address::Parse("10.10.10.1");
  t.outer.ipv4_dst = *hw::Ipv4Address::Parse("10.10.10.2");
  t.tunnel.kind = sim::Encap::kGre;
  t.tunnel.gre_protocol = protocol;
  t.tunnel.gre_version = version;
  t.tunnel.gre_checksum = bits & 1;
  t.tunnel.gre_key_present = bits & 2;
  t.tunnel.gre_key = 0x00520001;  // PPTP's key: payload length, call ID
  t.tunnel.gre_seq_present = bits & 4;
  t.tunnel.gre_seq = 7;
  t.tunnel.gre_ack_present = bits & 8;
  t.tunnel.gre_ack = 6;
  t.inner = InnerSpec();
  return sim::BuildFrame(t);
}

// Outer Ethernet + IPv4 (protocol `proto`), lengths and checksum left for the device to fill.
std::vector<uint8_t> OuterL2L3(uint8_t proto) {
  std::vector<uint8_t> h(34, 0);
  const uint8_t macs[] = {0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa};
  std::copy(std::begin(macs), std::end(macs), h.begin());
  hw::StoreBe16(&h[12], 0x0800);
  h[14] = 0x45;
  h[22] = 64;
  h[23] = proto;
  hw::StoreBe32(&h[26], 0x0a0a0a01);
  hw::StoreBe32(&h[30], 0x0a0a0a02);
  return h;
}

// The GRE headers tests send: RFC 2784's plain one (flags 0), and the one of newer rdma-core tests
// (tests/utils.py gen_gre_header: flags 0x2001, version 1 with the key bit, then key 0x12345678).
enum class GreKind { kPlain, kVersion1WithKey };
constexpr uint32_t kRdmaCoreGreKey = 0x12345678;

// ETH/IPv4/GRE carrying `protocol` (0x6558: an Ethernet frame; 0x0800: an IPv4 packet).
std::vector<uint8_t> GreHeader(uint16_t protocol, GreKind kind = GreKind::kPlain) {
  std::vector<uint8_t> h = OuterL2L3(47);
  h.resize(38, 0);
  hw::StoreBe16(&h[36], protocol);
  if (kind == GreKind::kVersion1WithKey) {
    hw::StoreBe16(&h[34], 0x2001);
    h.resize(42);
    hw::StoreBe32(&h[38], kRdmaCoreGreKey);
  }
  return h;
}

// ETH/IPv4/UDP/GENEVE (VNI 0x123) carrying `protocol`.
std::vector<uint8_t> GeneveHeader(uint16_t protocol) {
  std::vector<uint8_t> h = OuterL2L3(17);
  h.resize(50, 0);
  hw::StoreBe16(&h[34], 49152);
  hw::StoreBe16(&h[36], 6081);
  hw::StoreBe16(&h[44], protocol);
  hw::StoreBe32(&h[46], 0x123 << 8);
  return h;
}

// The 14-byte L2 header an L3 decap writes: DMAC, SMAC, ethertype IPv4.
std::vector<uint8_t> L2Header() {
  std::vector<uint8_t> h(kDst.bytes.begin(), kDst.bytes.end());
  h.insert(h.end(), kSrc.bytes.begin(), kSrc.bytes.end());
  h.push_back(0x08);
  h.push_back(0x00);
  return h;
}

// NIC_TX on the PF with `encap` for everything, NIC_RX with `decap` + QP for everything, each on a
// level-1 table behind the root (or on the root with ROOT_LEVEL actions).
class ReformatTest : public ::testing::TestWithParam<bool> {
 protected:
  bool root() const { return GetParam(); }
  uint32_t flags() const { return root() ? MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL : 0; }

  // Installs `actions` in `domain` for every frame; returns nothing, keeps the objects.
  void CatchAll(const dr::Domain& domain, std::vector<const dr::Action*> actions) {
    tables_.push_back(*dr::Table::Create(domain, 0));
    if (!root()) {
      const dr::Table& root_table = tables_.back();
      tables_.push_back(*dr::Table::Create(domain, 1));
      jumps_.push_back(*dr::Action::DestTable(tables_.back()));
      matchers_.push_back(*dr::Matcher::Create(root_table, 0, 0, nullptr));
      rules_.push_back(*dr::Rule::Create(matchers_.back(), MatchParams(), {&jumps_.back()}));
    }
    matchers_.push_back(*dr::Matcher::Create(tables_.back(), 0, 0, nullptr));
    rules_.push_back(*dr::Rule::Create(matchers_.back(), MatchParams(), actions));
  }

  // Sends `frame` from the PF through `encap`, loops the wire back in through `decap`; returns what was
  // on the wire and what the QP received.
  std::pair<std::vector<uint8_t>, std::vector<uint8_t>> RoundTrip(const std::vector<uint8_t>& frame,
                                                                  const dr::Action& encap,
                                                                  const dr::Action& decap) {
    qp_ = nic_.pf().CreateQueue();
    qp_action_ = *dr::Action::DestQp(nic_.pf(), qp_);
    CatchAll(tx_, {&encap});
    CatchAll(rx_, {&decap, &qp_action_});
    nic_.pf().Send(frame);
    std::optional<std::vector<uint8_t>> wire = nic_.PollWire();
    if (!wire) return {};
    nic_.ReceiveFromWire(*wire);
    std::optional<sim::RxCompletion> got = nic_.pf().queue(qp_)->Poll();
    return {*wire, got ? got->frame : std::vector<uint8_t>()};
  }

  // Sends each of `frames` in from the wire through `decap` + QP for every frame; returns what the QP
  // received of each (empty: nothing).
  std::vector<std::vector<uint8_t>> Decapsulated(const std::vector<std::vector<uint8_t>>& frames,
                                                 const dr::Action& decap) {
    qp_ = nic_.pf().CreateQueue();
    qp_action_ = *dr::Action::DestQp(nic_.pf(), qp_);
    CatchAll(rx_, {&decap, &qp_action_});
    std::vector<std::vector<uint8_t>> got;
    for (const std::vector<uint8_t>& frame : frames) {
      nic_.ReceiveFromWire(frame);
      std::optional<sim::RxCompletion> c = nic_.pf().queue(qp_)->Poll();
      got.push_back(c ? c->frame : std::vector<uint8_t>());
    }
    return got;
  }

  sim::Nic nic_;
  dr::Domain tx_ = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Domain rx_ = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  uint32_t qp_ = 0;
  dr::Action qp_action_;
  std::deque<dr::Table> tables_;
  std::deque<dr::Action> jumps_;
  std::deque<dr::Matcher> matchers_;
  std::deque<dr::Rule> rules_;
};

TEST_P(ReformatTest, L2Gre) {
  std::vector<uint8_t> header = GreHeader(0x6558);
  dr::Action encap = *dr::Action::PacketReformat(tx_, flags(), kL2Encap, header);
  dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), kL2Decap, {});
  auto [wire, got] = RoundTrip(Inner(), encap, decap);
  ASSERT_EQ(wire.size(), Inner().size() + 38);
  EXPECT_EQ(hw::LoadBe16(wire.data() + 16), wire.size() - 14);  // IPv4 total length filled in
  EXPECT_EQ(std::vector<uint8_t>(wire.begin() + 38, wire.end()), Inner());
  EXPECT_EQ(got, Inner());
}

TEST_P(ReformatTest, L2Geneve) {
  std::vector<uint8_t> header = GeneveHeader(0x6558);
  dr::Action encap = *dr::Action::PacketReformat(tx_, flags(), kL2Encap, header);
  dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), kL2Decap, {});
  auto [wire, got] = RoundTrip(Inner(), encap, decap);
  ASSERT_EQ(wire.size(), Inner().size() + 50);
  EXPECT_EQ(hw::LoadBe16(wire.data() + 38), wire.size() - 34);  // UDP length filled in
  EXPECT_EQ(got, Inner());
}

TEST_P(ReformatTest, L3Gre) {
  std::vector<uint8_t> header = GreHeader(0x0800), l2 = L2Header();
  dr::Action encap = *dr::Action::PacketReformat(tx_, flags(), kL3Encap, header);
  dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), kL3Decap, l2);
  auto [wire, got] = RoundTrip(Inner(), encap, decap);
  ASSERT_EQ(wire.size(), Inner().size() - 14 + 38);  // the inner L2 header is gone
  EXPECT_EQ(got, Inner());                           // and the decap's 14 bytes restore it
}

TEST_P(ReformatTest, L3Geneve) {
  std::vector<uint8_t> header = GeneveHeader(0x0800), l2 = L2Header();
  dr::Action encap = *dr::Action::PacketReformat(tx_, flags(), kL3Encap, header);
  dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), kL3Decap, l2);
  auto [wire, got] = RoundTrip(Inner(), encap, decap);
  EXPECT_EQ(got, Inner());
}

// GRE of any version is a tunnel to a ConnectX: rdma-core's test_packet_reformat_{l2,l3}_gre (and their root
// variants) send version 1 with a key (0x2001) and expect decap to give back the sent frame, byte for byte.
TEST_P(ReformatTest, L2GreVersion1WithKeyDecapsToTheSentFrame) {
  std::vector<uint8_t> header = GreHeader(0x6558, GreKind::kVersion1WithKey);
  dr::Action encap = *dr::Action::PacketReformat(tx_, flags(), kL2Encap, header);
  dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), kL2Decap, {});
  auto [wire, got] = RoundTrip(Inner(), encap, decap);
  ASSERT_EQ(wire.size(), Inner().size() + 42);
  EXPECT_EQ(hw::LoadBe16(wire.data() + 34), 0x2001);
  EXPECT_EQ(hw::LoadBe32(wire.data() + 38), kRdmaCoreGreKey);
  EXPECT_EQ(std::vector<uint8_t>(wire.begin() + 42, wire.end()), Inner());
  EXPECT_EQ(got, Inner());
}

TEST_P(ReformatTest, L3GreVersion1WithKeyDecapsToTheSentFrame) {
  std::vector<uint8_t> header = GreHeader(0x0800, GreKind::kVersion1WithKey), l2 = L2Header();
  dr::Action encap = *dr::Action::PacketReformat(tx_, flags(), kL3Encap, header);
  dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), kL3Decap, l2);
  const std::vector<uint8_t> inner = Inner();
  auto [wire, got] = RoundTrip(inner, encap, decap);
  ASSERT_EQ(wire.size(), inner.size() - 14 + 42);
  EXPECT_EQ(std::vector<uint8_t>(wire.begin() + 42, wire.end()),
            std::vector<uint8_t>(inner.begin() + 14, inner.end()));
  EXPECT_EQ(got, inner);
}

// A peer's GRE with any optional words — version 0 with checksum, key and sequence; version 1 (PPTP's
// enhanced GRE, RFC 2637) with key, sequence and acknowledgment — is a tunnel to a ConnectX, and both decaps
// remove all of it: what the QP receives is the inner frame byte for byte (L3 decap: the inner IP packet
// behind the action's L2 header, which here equals the inner frame's own).
TEST_P(ReformatTest, GreWithEveryOptionalWordDecapsToTheInnerFrame) {
  for (auto type : {kL2Decap, kL3Decap}) {
    SCOPED_TRACE(type == kL2Decap ? "L2 decap" : "L3 decap");
    const uint16_t protocol = type == kL2Decap ? 0x6558 : 0x0800;
    std::vector<std::vector<uint8_t>> frames;
    for (uint8_t version : {0, 1}) {
      for (int bits = 0; bits < (version == 1 ? 16 : 8); ++bits)
        frames.push_back(GreFrame(protocol, version, bits));
    }
    const std::vector<uint8_t> l2 = type == kL3Decap ? L2Header() : std::vector<uint8_t>();
    dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), type, l2);
    const std::vector<std::vector<uint8_t>> got = Decapsulated(frames, decap);
    ASSERT_EQ(got.size(), frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(got[i], Inner()) << "GRE flags 0x" << std::hex << hw::LoadBe16(frames[i].data() + 34);
    }
    EXPECT_EQ(nic_.stats().no_tunnel, 0u);
    rules_.clear();
    matchers_.clear();
    jumps_.clear();
    tables_.clear();
  }
}

// A decap that meets a frame with no tunnel drops it, counted apart (rdma-core's STE v0 decap sets
// fail_on_error): the frame never reaches the QP with its headers as they came.
TEST_P(ReformatTest, DecapOfAFrameWithoutATunnelDropsIt) {
  for (auto type : {kL2Decap, kL3Decap}) {
    SCOPED_TRACE(type);
    const std::vector<uint8_t> l2 = type == kL3Decap ? L2Header() : std::vector<uint8_t>();
    dr::Action decap = *dr::Action::PacketReformat(rx_, flags(), type, l2);
    qp_ = nic_.pf().CreateQueue();
    qp_action_ = *dr::Action::DestQp(nic_.pf(), qp_);
    CatchAll(rx_, {&decap, &qp_action_});
    const uint64_t before = nic_.stats().no_tunnel;
    EXPECT_EQ(nic_.ReceiveFromWire(Inner()).fate, sim::Fate::kNoTunnel);
    EXPECT_EQ(nic_.stats().no_tunnel, before + 1);
    EXPECT_FALSE(nic_.pf().queue(qp_)->Poll().has_value());
    rules_.clear();
    matchers_.clear();
    jumps_.clear();
    tables_.clear();
  }
}

INSTANTIATE_TEST_SUITE_P(RootAndNonRoot, ReformatTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "Root" : "Table"; });

TEST(ReformatChecksTest, CreationErrorsFollowRdmaCore) {
  sim::Nic nic;
  dr::Domain rx = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Domain tx = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
  dr::Domain fdb = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  std::vector<uint8_t> gre = GreHeader(0x6558), l2 = L2Header(), big(129, 0);
  auto code = [](const absl::StatusOr<dr::Action>& a) { return a.status().code(); };
  EXPECT_EQ(code(dr::Action::PacketReformat(rx, 0, kL2Encap, gre)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(dr::Action::PacketReformat(tx, 0, kL2Decap, {})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(dr::Action::PacketReformat(tx, 0, kL2Encap, big)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(dr::Action::PacketReformat(tx, 2, kL2Encap, gre)), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(dr::Action::PacketReformat(rx, 0, kL3Decap, absl::MakeConstSpan(l2).subspan(0, 13))),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(dr::Action::PacketReformat(tx, 0, kL2Encap, absl::Span<const uint8_t>(gre.data(), 0))),
            absl::StatusCode::kInvalidArgument);  // data without a size
  EXPECT_EQ(code(dr::Action::PacketReformat(tx, 0, kL2Encap, {})),
            absl::StatusCode::kInvalidArgument);  // an encapsulation of nothing
  EXPECT_TRUE(dr::Action::PacketReformat(fdb, 0, kL3Decap, l2).ok());
  EXPECT_TRUE(dr::Action::PacketReformat(fdb, 0, kL2Encap, gre).ok());
  // A reformat action holds its domain.
  dr::Action hold = *dr::Action::PacketReformat(rx, 0, kL2Decap, {});
  EXPECT_EQ(rx.Destroy().code(), absl::StatusCode::kFailedPrecondition);
}

// The eSwitch encap mode decides which root tables take reformat actions, as Linux mlx5_ib makes them
// (drivers/infiniband/hw/mlx5/fs.c _get_flow_table): NIC RX/TX root tables with decap and reformat only
// under encap-mode none, FDB root tables only under basic. Non-root tables take them under either mode.
// rdma-core's root reformat tests skip on switchdev with encap-mode basic (requires_encap_disabled_if_
// eswitch_on) for this reason.
TEST(ReformatChecksTest, TheEswitchEncapModeDecidesWhichRootTablesTakeReformat) {
  std::vector<uint8_t> gre = GreHeader(0x6558);
  for (hw::EswitchEncap encap : {hw::EswitchEncap::kNone, hw::EswitchEncap::kBasic}) {
    SCOPED_TRACE(encap == hw::EswitchEncap::kNone ? "encap-mode none" : "encap-mode basic");
    sim::Nic nic;
    nic.set_eswitch_encap(encap);
    for (auto type : {MLX5DV_DR_DOMAIN_TYPE_NIC_TX, MLX5DV_DR_DOMAIN_TYPE_FDB}) {
      const bool takes = (type == MLX5DV_DR_DOMAIN_TYPE_FDB) == (encap == hw::EswitchEncap::kBasic);
      dr::Domain domain = *dr::Domain::Create(nic.pf(), type);
      dr::Table root = *dr::Table::Create(domain, 0), table = *dr::Table::Create(domain, 1);
      dr::Matcher root_all = *dr::Matcher::Create(root, 0, 0, nullptr);
      dr::Matcher table_all = *dr::Matcher::Create(table, 0, 0, nullptr);
      dr::Action root_encap =
          *dr::Action::PacketReformat(domain, MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL, kL2Encap, gre);
      dr::Action encap_action = *dr::Action::PacketReformat(domain, 0, kL2Encap, gre);
      absl::StatusOr<dr::Rule> on_root = dr::Rule::Create(root_all, MatchParams(), {&root_encap});
      if (takes) {
        EXPECT_TRUE(on_root.ok()) << on_root.status();
      } else {
        EXPECT_EQ(on_root.status().code(), absl::StatusCode::kUnimplemented);
        EXPECT_THAT(on_root.status().message(), ::testing::HasSubstr("eSwitch encap mode"));
      }
      EXPECT_TRUE(dr::Rule::Create(table_all, MatchParams(), {&encap_action}).ok());
    }
  }
}

TEST(ReformatChecksTest, FdbDecapsWireTrafficForAVfAndEncapsItsReplies) {
  sim::Nic nic(1);
  dr::Domain fdb = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_FDB);
  dr::Table root = *dr::Table::Create(fdb, 0), t1 = *dr::Table::Create(fdb, 1);
  dr::Action to_t1 = *dr::Action::DestTable(t1);
  dr::Matcher all = *dr::Matcher::Create(root, 0, 0, nullptr);
  dr::Rule jump = *dr::Rule::Create(all, MatchParams(), {&to_t1});
  // RX pipe (source_port 0xffff): GENEVE VNI 0x123 -> decap -> VF1. TX pipe (VF1): encap -> wire.
  dr::Matcher by_vni =
      *dr::Matcher::Create(t1, 0, *MatchBuilder().SourcePort(0xffff).GeneveVni(0xffffff).Build());
  dr::Matcher by_port = *dr::Matcher::Create(t1, 1, *MatchBuilder().SourcePort(0xffff).Build());
  dr::Action decap = *dr::Action::PacketReformat(fdb, 0, kL2Decap, {});
  std::vector<uint8_t> header = GeneveHeader(0x6558);
  dr::Action encap = *dr::Action::PacketReformat(fdb, 0, kL2Encap, header);
  dr::Action to_vf1 = *dr::Action::DestVport(fdb, 1), to_wire = *dr::Action::DestVport(fdb, 0xffff);
  dr::Rule in = *dr::Rule::Create(by_vni, *MatchBuilder().SourcePort(0xffff).GeneveVni(0x123).Build(),
                                  {&decap, &to_vf1});
  dr::Rule out = *dr::Rule::Create(by_port, *MatchBuilder().SourcePort(1).Build(), {&encap, &to_wire});
  // VF1 receives everything.
  sim::Function& vf1 = *nic.function(1);
  dr::Domain vf_rx = *dr::Domain::Create(vf1, MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
  dr::Table vf_t = *dr::Table::Create(vf_rx, 0);
  dr::Matcher vf_all = *dr::Matcher::Create(vf_t, 0, 0, nullptr);
  const uint32_t qp = vf1.CreateQueue();
  dr::Action to_qp = *dr::Action::DestQp(vf1, qp);
  dr::Rule deliver = *dr::Rule::Create(vf_all, MatchParams(), {&to_qp});

  vf1.Send(Inner());
  std::optional<std::vector<uint8_t>> wire = nic.PollWire();
  ASSERT_TRUE(wire.has_value());
  EXPECT_EQ(wire->size(), Inner().size() + 50);
  sim::Verdict v = nic.ReceiveFromWire(*wire);
  EXPECT_EQ(v.fate, sim::Fate::kQueued);
  EXPECT_EQ(v.vport, 1);
  EXPECT_EQ(vf1.queue(qp)->Poll()->frame, Inner());
  // Decap is only legal where the rule lives in the RX pipe alone (it matches source_port 0xffff).
  dr::Matcher plain = *dr::Matcher::Create(t1, 2, *MatchBuilder().GeneveVni(0xffffff).Build());
  EXPECT_EQ(dr::Rule::Create(plain, *MatchBuilder().GeneveVni(1).Build(), {&decap, &to_vf1}).status().code(),
            absl::StatusCode::kUnimplemented);
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST(ActionFramesTsharkTest, EncapDecapModifyAndVlanFramesDecodeCleanly) {
  // Frames the scenarios produce: encapsulated (GRE, GENEVE, L3 GRE), decapsulated, modified and tagged.
  std::vector<std::vector<uint8_t>> frames;
  std::vector<std::string> stacks;
  auto run = [&](const std::vector<uint8_t>& header, mlx5dv_flow_action_packet_reformat_type type,
                 const std::string& stack) {
    sim::Nic nic;
    dr::Domain tx = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
    dr::Table t = *dr::Table::Create(tx, 0);
    dr::Matcher all = *dr::Matcher::Create(t, 0, 0, nullptr);
    dr::Action encap = *dr::Action::PacketReformat(tx, MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL, type, header);
    dr::Rule r = *dr::Rule::Create(all, MatchParams(), {&encap});
    nic.pf().Send(Inner());
    frames.push_back(*nic.PollWire());
    stacks.push_back(stack);
  };
  run(GreHeader(0x6558), kL2Encap, "eth:ethertype:ip:gre:eth:ethertype:ip:udp:data");
  run(GeneveHeader(0x6558), kL2Encap, "eth:ethertype:ip:udp:geneve:eth:ethertype:ip:udp:data");
  run(GreHeader(0x0800), kL3Encap, "eth:ethertype:ip:gre:ip:udp:data");
  run(GeneveHeader(0x0800), kL3Encap, "eth:ethertype:ip:udp:geneve:ip:udp:data");
  // Modify header (addresses, ports, TTL, DSCP) and a pushed VLAN tag, on NIC_TX.
  {
    sim::Nic nic;
    dr::Domain tx = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_TX);
    dr::Table root = *dr::Table::Create(tx, 0), t1 = *dr::Table::Create(tx, 1);
    dr::Action jump = *dr::Action::DestTable(t1);
    dr::Matcher all0 = *dr::Matcher::Create(root, 0, 0, nullptr),
                all1 = *dr::Matcher::Create(t1, 0, 0, nullptr);
    dr::Rule r0 = *dr::Rule::Create(all0, MatchParams(), {&jump});
    const uint64_t words[] = {hw::ModifySetWord(hw::ModifyField::kSipv4, 0, 0, 0xc0a80001),
                              hw::ModifySetWord(hw::ModifyField::kUdpSport, 0, 16, 4242),
                              hw::ModifyAddWord(hw::ModifyField::kIpTtl, 0xff),
                              hw::ModifySetWord(hw::ModifyField::kIpDscp, 0, 6, 46)};
    dr::Action modify = *dr::Action::ModifyHeader(tx, 0, words);
    dr::Action push = *dr::Action::PushVlan(tx, htonl(0x81000064));
    dr::Rule r1 = *dr::Rule::Create(all1, MatchParams(), {&modify, &push});
    nic.pf().Send(Inner());
    frames.push_back(*nic.PollWire());
    stacks.push_back("eth:ethertype:vlan:ethertype:ip:udp:data");
  }
  // Decapsulated on RX: the GRE frame back to the original.
  {
    sim::Nic nic;
    dr::Domain rx = *dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    dr::Table t = *dr::Table::Create(rx, 0);
    dr::Matcher all = *dr::Matcher::Create(t, 0, 0, nullptr);
    const uint32_t qp = nic.pf().CreateQueue();
    dr::Action to_qp = *dr::Action::DestQp(nic.pf(), qp);
    std::vector<uint8_t> l2 = L2Header();
    dr::Action decap = *dr::Action::PacketReformat(rx, MLX5DV_DR_ACTION_FLAGS_ROOT_LEVEL, kL3Decap, l2);
    dr::Rule r = *dr::Rule::Create(all, MatchParams(), {&decap, &to_qp});
    nic.ReceiveFromWire(frames[2]);
    frames.push_back(nic.pf().queue(qp)->Poll()->frame);
    stacks.push_back("eth:ethertype:ip:udp:data");
  }
  const std::string path = TempPath("action_frames.pcap");
  ASSERT_TRUE(sim::WritePcapFile(path, frames).ok());
  absl::StatusOr<std::vector<testing::TsharkFrame>> dissected = testing::TsharkCheck(path);
  ASSERT_TRUE(dissected.ok()) << dissected.status();
  ASSERT_EQ(dissected->size(), frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    const testing::TsharkFrame& f = (*dissected)[i];
    EXPECT_EQ(f.protocols, stacks[i]) << "frame " << i + 1;
    EXPECT_THAT(f.Problems(), ::testing::IsEmpty()) << "frame " << i + 1;
    for (const auto& [layer, verdicts] : f.checksums) {  // one verdict per occurrence (outer, inner)
      for (absl::string_view verdict : absl::StrSplit(verdicts, ',')) {
        EXPECT_TRUE(verdict == "Good" || verdict == "Not present")
            << "frame " << i + 1 << " " << layer << " " << verdicts;
      }
    }
  }
}

}  // namespace
}  // namespace drsim
