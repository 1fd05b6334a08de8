// The action engine on real frames, byte for byte, with checksums verified from scratch.
#include "sim/action_executor.h"

#include <deque>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "sim/checksum.h"
#include "sim/conntrack.h"
#include "sim/frame_builder.h"

namespace drsim::sim {
namespace {

using hw::ModifyField;

std::vector<uint8_t> Bytes(const PacketBuffer& b) { return {b.data(), b.data() + b.size()}; }

// True when the IPv4 header at `ip` and the TCP/UDP segment after it (if any) carry valid checksums.
bool Ipv4ChecksumsValid(const std::vector<uint8_t>& f, size_t ip) {
  const size_t ihl = (f[ip] & 0xf) * 4u;
  if (ChecksumFinish(ChecksumAdd(f.data() + ip, ihl)) != 0) return false;
  const uint8_t proto = f[ip + 9];
  if (proto != 6 && proto != 17) return true;
  const size_t l4 = ip + ihl, l4_len = hw::LoadBe16(f.data() + ip + 2) - ihl;
  if (proto == 17 && hw::LoadBe16(f.data() + l4 + 6) == 0) return true;  // no UDP checksum
  uint32_t sum = ChecksumAdd(f.data() + ip + 12, 8) + proto + static_cast<uint32_t>(l4_len);
  return ChecksumFinish(ChecksumAdd(f.data() + l4, l4_len, sum)) == 0;
}

bool Ipv6L4ChecksumValid(const std::vector<uint8_t>& f, size_t ip) {
  const uint8_t proto = f[ip + 6];
  const size_t l4 = ip + 40, l4_len = hw::LoadBe16(f.data() + ip + 4);
  uint32_t sum = ChecksumAdd(f.data() + ip + 8, 32) + proto + static_cast<uint32_t>(l4_len);
  return ChecksumFinish(ChecksumAdd(f.data() + l4, l4_len, sum)) == 0;
}

FrameSpec Udp4() {
  FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("24:8a:07:a5:28:a2");
  s.smac = *hw::MacAddress::Parse("02:00:00:00:00:02");
  s.ipv4_src = *hw::Ipv4Address::Parse("1.1.1.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("2.2.2.2");
  s.protocol = kIpProtoUdp;
  s.sport = 1234;
  s.dport = 5678;
  s.payload_len = 32;
  return s;
}

class ExecutorTest : public ::testing::Test {
 protected:
  // Runs `ops` on `frame`; returns the resulting frame.
  std::vector<uint8_t> Run(const std::vector<uint8_t>& frame, const std::vector<hw::Op>& ops) {
    packet_.Assign(frame.data(), frame.size());
    executor_.Run(ops, packet_, meta_);
    return Bytes(packet_);
  }
  hw::Op Modify(std::vector<uint64_t> words) {
    std::vector<hw::ModifyAction> actions;
    for (uint64_t w : words) actions.push_back(hw::DecodeModifyWord(w));
    modify_.push_back(hw::MakeModifyProgram(std::move(actions)));
    return {hw::OpCode::kModifyHeader, 0, &modify_.back()};
  }

  CounterBank counters_;
  AsoBank aso_;
  ActionExecutor executor_{&counters_, &aso_};
  PacketBuffer packet_;
  PacketMeta meta_;
  std::deque<hw::ModifyProgram> modify_;
};

TEST_F(ExecutorTest, SetSmacAsTheRdmaCoreTestDoes) {
  std::vector<uint8_t> in = BuildFrame(Udp4());
  std::vector<uint8_t> out = Run(in, {Modify({hw::ModifySetWord(ModifyField::kSmac47_16, 0, 0, 0x88888888),
                                              hw::ModifySetWord(ModifyField::kSmac15_0, 0, 16, 0x8888)})});
  std::vector<uint8_t> want = in;
  for (int i = 6; i < 12; ++i) want[i] = 0x88;
  EXPECT_EQ(out, want);
}

TEST_F(ExecutorTest, Ipv4AndUdpRewritesKeepChecksumsValid) {
  std::vector<uint8_t> in = BuildFrame(Udp4());
  std::vector<uint8_t> out = Run(in, {Modify({hw::ModifySetWord(ModifyField::kDipv4, 0, 0, 0x0a000063),
                                              hw::ModifySetWord(ModifyField::kUdpDport, 0, 16, 4789),
                                              hw::ModifyAddWord(ModifyField::kIpTtl, 0xff),  // TTL - 1
                                              hw::ModifySetWord(ModifyField::kIpDscp, 0, 6, 46)})});
  EXPECT_EQ(hw::LoadBe32(out.data() + 14 + 16), 0x0a000063u);
  EXPECT_EQ(hw::LoadBe16(out.data() + 14 + 20 + 2), 4789);
  EXPECT_EQ(out[14 + 8], 63);
  EXPECT_EQ(out[14 + 1] >> 2, 46);
  EXPECT_TRUE(Ipv4ChecksumsValid(out, 14));
  // Everything else is untouched.
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 42, out.end()),
            std::vector<uint8_t>(in.begin() + 42, in.end()));
}

// The frames rdma-core's tests send (tests/utils.py gen_packet): IPv4 and UDP (or TCP) checksums 0.
std::vector<uint8_t> WithZeroChecksums(FrameSpec spec) {
  spec.zero_checksums = true;
  return BuildFrame(spec);
}

// Hardware rewrites a checksum only where the rule changed bytes it covers: an smac alone changes none,
// so zero checksums arrive as zero and the frame differs from the sent one in its smac only.
TEST_F(ExecutorTest, AnSmacRewriteLeavesZeroChecksumsZero) {
  FrameSpec tcp = Udp4();
  tcp.protocol = kIpProtoTcp;
  for (const FrameSpec& spec : {Udp4(), tcp}) {
    const std::vector<uint8_t> in = WithZeroChecksums(spec);
    std::vector<uint8_t> out = Run(in, {Modify({hw::ModifySetWord(ModifyField::kSmac47_16, 0, 0, 0x88888888),
                                                hw::ModifySetWord(ModifyField::kSmac15_0, 0, 16, 0x8888)})});
    std::vector<uint8_t> want = in;
    for (int i = 6; i < 12; ++i) want[i] = 0x88;
    EXPECT_EQ(out, want) << "protocol " << int{spec.protocol};
  }
}

// A frame whose IPv4 header checksum was wrong when it arrived.
std::vector<uint8_t> WithWrongIpv4Checksum(const FrameSpec& spec) {
  std::vector<uint8_t> f = BuildFrame(spec);
  hw::StoreBe16(f.data() + 24, hw::LoadBe16(f.data() + 24) ^ 0x5a5a);
  return f;
}

// A modify header that only sets and copies registers (reading a frame field into one) changes no frame
// byte, checksums valid, zero or wrong: the hardware "recalcs checksums only if re-writing headers" (Linux
// mlx5e, en/tc/act/csum.c, csum_offload_supported), and such a list rewrites none.
TEST_F(ExecutorTest, ARegisterOnlyModifyLeavesTheFrameAsItCame) {
  const std::vector<uint8_t> valid = BuildFrame(Udp4());
  for (const std::vector<uint8_t>& in : {valid, WithZeroChecksums(Udp4()), WithWrongIpv4Checksum(Udp4())}) {
    EXPECT_EQ(
        Run(in,
            {Modify({hw::ModifySetWord(ModifyField::kMetadataRegC0, 0, 0, 0x1234),
                     hw::ModifyCopyWord(ModifyField::kMetadataRegC0, 0, ModifyField::kMetadataRegC1, 0, 0),
                     hw::ModifyCopyWord(ModifyField::kUdpDport, 0, ModifyField::kMetadataRegC2, 0, 16),
                     hw::ModifyAddWord(ModifyField::kMetadataRegC3, 7)})}),
        in);
    EXPECT_EQ(meta_.reg_c[1], 0x1234u);
    EXPECT_EQ(meta_.reg_c[2], 5678u);
  }
}

// The frame is read where it lies: a register-only list does not even copy a borrowed frame in, and Run
// reports a metadata change, so the caller's parse of the headers still holds.
TEST_F(ExecutorTest, ARegisterOnlyModifyLeavesABorrowedFrameBorrowed) {
  const std::vector<uint8_t> in = WithWrongIpv4Checksum(Udp4());
  packet_.Borrow(in.data(), in.size());
  const hw::Op set_and_copy =
      Modify({hw::ModifySetWord(ModifyField::kMetadataRegC0, 0, 0, 0xabcd),
              hw::ModifyCopyWord(ModifyField::kMetadataRegC0, 0, ModifyField::kMetadataRegC1, 0, 0)});
  EXPECT_EQ(executor_.Run({set_and_copy}, packet_, meta_), ActionExecutor::Change::kMetadata);
  EXPECT_EQ(packet_.data(), in.data());
  EXPECT_EQ(Bytes(packet_), in);
  EXPECT_EQ(meta_.reg_c[1], 0xabcdu);
}

// A list that writes an IPv4 header field recomputes the header checksum, whatever it was on arrival
// (wrong included), even when the written value equals the old one: what the list rewrites is decided
// when it is compiled (hw::ModifyProgram), not by comparing bytes per packet.
TEST_F(ExecutorTest, AnIpv4FieldRewriteRecomputesTheHeaderChecksum) {
  const std::vector<uint8_t> valid = BuildFrame(Udp4());
  for (const std::vector<uint8_t>& in : {valid, WithWrongIpv4Checksum(Udp4())}) {
    EXPECT_EQ(Run(in, {Modify({hw::ModifySetWord(ModifyField::kIpTtl, 0, 8, in[22])})}), valid);
    EXPECT_EQ(Run(in, {Modify({hw::ModifySetWord(ModifyField::kIpDscp, 0, 6, in[15] >> 2),
                               hw::ModifySetWord(ModifyField::kMetadataRegC0, 0, 0, 1)})}),
              valid);
  }
  // A MAC rewrite is no IPv4 rewrite: the wrong checksum stays as it came.
  const std::vector<uint8_t> wrong = WithWrongIpv4Checksum(Udp4());
  std::vector<uint8_t> want = wrong;
  want[11] = 0x77;
  EXPECT_EQ(Run(wrong, {Modify({hw::ModifySetWord(ModifyField::kSmac15_0, 0, 8, 0x77)})}), want);
}

// Where a rule changes checksummed bytes, the checksums covering them follow, and only those: the TTL is
// under the IPv4 header checksum alone, the destination address under both it and the UDP checksum (but
// a zero UDP checksum, "none", stays zero).
TEST_F(ExecutorTest, ChangedIpv4FieldsUpdateTheChecksumsCoveringThem) {
  FrameSpec spec = Udp4();
  const std::vector<uint8_t> in = BuildFrame(spec);
  spec.ttl = 63;
  std::vector<uint8_t> out = Run(in, {Modify({hw::ModifyAddWord(ModifyField::kIpTtl, 0xff)})});
  EXPECT_EQ(out, BuildFrame(spec));  // the IPv4 checksum recomputed, the UDP one as it was
  EXPECT_EQ(hw::LoadBe16(out.data() + 40), hw::LoadBe16(in.data() + 40));
  EXPECT_NE(hw::LoadBe16(out.data() + 24), hw::LoadBe16(in.data() + 24));
  spec.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.99");
  out = Run(out, {Modify({hw::ModifySetWord(ModifyField::kDipv4, 0, 0, 0x0a000063)})});
  EXPECT_EQ(out, BuildFrame(spec));  // both checksums updated
  // Zero checksums: the IPv4 one is computed for the changed header, the UDP one stays none.
  out = Run(WithZeroChecksums(Udp4()), {Modify({hw::ModifySetWord(ModifyField::kDipv4, 0, 0, 0x0a000063),
                                                hw::ModifyAddWord(ModifyField::kIpTtl, 0xff)})});
  std::vector<uint8_t> want = BuildFrame(spec);
  hw::StoreBe16(want.data() + 40, 0);
  EXPECT_EQ(out, want);
}

TEST_F(ExecutorTest, TcpFieldsAndSequenceArithmetic) {
  FrameSpec s = Udp4();
  s.protocol = kIpProtoTcp;
  s.seq = 0xfffffff0;
  s.tcp_flags = 0x002;
  std::vector<uint8_t> out =
      Run(BuildFrame(s), {Modify({hw::ModifyAddWord(ModifyField::kTcpSeqNum, 0x20),
                                  hw::ModifySetWord(ModifyField::kTcpFlags, 0, 9, 0x112),
                                  hw::ModifySetWord(ModifyField::kTcpSport, 0, 16, 80)})});
  const size_t tcp = 14 + 20;
  EXPECT_EQ(hw::LoadBe32(out.data() + tcp + 4), 0x10u);  // wrapped modulo 2^32
  EXPECT_EQ(out[tcp + 12] & 1, 1);                       // NS
  EXPECT_EQ(out[tcp + 13], 0x12);
  EXPECT_EQ(hw::LoadBe16(out.data() + tcp), 80);
  EXPECT_TRUE(Ipv4ChecksumsValid(out, 14));
}

TEST_F(ExecutorTest, Ipv6Rewrites) {
  FrameSpec s = Udp4();
  s.l3 = L3Kind::kIpv6;
  s.ipv6_src = *hw::Ipv6Address::Parse("2001:db8::1");
  s.ipv6_dst = *hw::Ipv6Address::Parse("2001:db8::2");
  s.ttl = 10;
  std::vector<uint8_t> out =
      Run(BuildFrame(s), {Modify({hw::ModifySetWord(ModifyField::kSipv6_31_0, 0, 0, 0xabcd),
                                  hw::ModifyAddWord(ModifyField::kIpv6Hoplimit, 2),
                                  hw::ModifySetWord(ModifyField::kIpEcn, 0, 2, 3)})});
  EXPECT_EQ(hw::LoadBe32(out.data() + 14 + 8 + 12), 0xabcdu);
  EXPECT_EQ(out[14 + 7], 12);
  EXPECT_EQ((hw::LoadBe32(out.data() + 14) >> 20) & 3, 3u);
  EXPECT_TRUE(Ipv6L4ChecksumValid(out, 14));
}

TEST_F(ExecutorTest, ActionsOnAbsentHeadersDoNothing) {
  std::vector<uint8_t> in = BuildFrame(Udp4());
  EXPECT_EQ(Run(in, {Modify({hw::ModifySetWord(ModifyField::kTcpDport, 0, 16, 1),
                             hw::ModifySetWord(ModifyField::kSipv6_31_0, 0, 0, 1),
                             hw::ModifySetWord(ModifyField::kFirstVid, 0, 12, 5)})}),
            in);
}

TEST_F(ExecutorTest, RegistersSetAndCopy) {
  std::vector<uint8_t> in = BuildFrame(Udp4());
  Run(in, {Modify({hw::ModifySetWord(ModifyField::kMetadataRegC0, 0, 0, 0x1234),
                   hw::ModifyCopyWord(ModifyField::kMetadataRegC0, 4, ModifyField::kMetadataRegC1, 8, 8),
                   hw::ModifyCopyWord(ModifyField::kUdpDport, 0, ModifyField::kMetadataRegB, 0, 16)})});
  EXPECT_EQ(meta_.reg_c[0], 0x1234u);
  EXPECT_EQ(meta_.reg_c[1], 0x2300u);  // bits 4..11 of reg_c_0 (0x23) at bit 8
  EXPECT_EQ(meta_.reg_b, 5678u);
}

TEST_F(ExecutorTest, VlanPushPopAndVlanFields) {
  std::vector<uint8_t> in = BuildFrame(Udp4());
  std::vector<uint8_t> out =
      Run(in, {{hw::OpCode::kPushVlan, 0x81000064}, {hw::OpCode::kPushVlan, 0x88a8000a}});
  // The second push is outermost: both insert right after the MAC addresses.
  ASSERT_EQ(out.size(), in.size() + 8);
  EXPECT_EQ(hw::LoadBe32(out.data() + 12), 0x88a8000au);
  EXPECT_EQ(hw::LoadBe32(out.data() + 16), 0x81000064u);
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 20, out.end()),
            std::vector<uint8_t>(in.begin() + 12, in.end()));
  // Rewrite the outer VID, then pop twice: back to the original frame.
  std::vector<uint8_t> vid = Run(out, {Modify({hw::ModifySetWord(ModifyField::kFirstVid, 0, 12, 0x123)})});
  EXPECT_EQ(hw::LoadBe16(vid.data() + 14), 0x0123);
  EXPECT_EQ(Run(out, {{hw::OpCode::kPopVlan}, {hw::OpCode::kPopVlan}}), in);
  EXPECT_EQ(Run(in, {{hw::OpCode::kPopVlan}}), in);  // untagged: nothing to pop
  std::vector<uint8_t> et = Run(in, {Modify({hw::ModifySetWord(ModifyField::kEthertype, 0, 16, 0x88b5)})});
  EXPECT_EQ(hw::LoadBe16(et.data() + 12), 0x88b5);
}

// An outer Ethernet/IPv4/UDP/VXLAN stack with lengths and checksum left zero, as a user might pass it.
std::vector<uint8_t> VxlanTemplate(uint16_t udp_checksum) {
  std::vector<uint8_t> h(50, 0);
  const uint8_t macs[] = {0x02, 0, 0, 0, 0, 0xbb, 0x02, 0, 0, 0, 0, 0xaa};
  std::copy(std::begin(macs), std::end(macs), h.begin());
  hw::StoreBe16(&h[12], 0x0800);
  h[14] = 0x45;
  h[22] = 64;
  h[23] = 17;
  hw::StoreBe32(&h[26], 0x0a0a0a01);
  hw::StoreBe32(&h[30], 0x0a0a0a02);
  hw::StoreBe16(&h[34], 49152);
  hw::StoreBe16(&h[36], 4789);
  hw::StoreBe16(&h[40], udp_checksum);
  h[42] = 0x08;                       // VXLAN I flag
  hw::StoreBe32(&h[46], 0x00123400);  // VNI 0x1234
  return h;
}

TEST_F(ExecutorTest, EncapsulationFixesOuterLengthsAndChecksums) {
  std::vector<uint8_t> in = BuildFrame(Udp4());
  std::vector<uint8_t> outer = VxlanTemplate(0);
  std::vector<uint8_t> out = Run(in, {{hw::OpCode::kEncapL2, 0, nullptr, &outer}});
  ASSERT_EQ(out.size(), in.size() + 50);
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 50, out.end()), in);
  EXPECT_EQ(hw::LoadBe16(out.data() + 16), out.size() - 14);  // IPv4 total length
  EXPECT_EQ(hw::LoadBe16(out.data() + 38), out.size() - 34);  // UDP length
  EXPECT_EQ(hw::LoadBe16(out.data() + 40), 0);                // no UDP checksum stays none
  EXPECT_TRUE(Ipv4ChecksumsValid(out, 14));
  outer = VxlanTemplate(1);  // a UDP checksum was asked for: it is computed
  out = Run(in, {{hw::OpCode::kEncapL2, 0, nullptr, &outer}});
  EXPECT_NE(hw::LoadBe16(out.data() + 40), 0);
  EXPECT_TRUE(Ipv4ChecksumsValid(out, 14));
}

TEST_F(ExecutorTest, L3EncapsulationReplacesTheL2Header) {
  FrameSpec s = Udp4();
  s.vlans = {{0x8100, 7}};
  std::vector<uint8_t> in = BuildFrame(s);
  std::vector<uint8_t> outer = VxlanTemplate(0);
  outer.resize(42);  // ETH/IPv4/UDP, then the inner IP packet directly
  std::vector<uint8_t> out = Run(in, {{hw::OpCode::kEncapL3, 0, nullptr, &outer}});
  ASSERT_EQ(out.size(), in.size() - 18 + 42);
  EXPECT_EQ(std::vector<uint8_t>(out.begin() + 42, out.end()),
            std::vector<uint8_t>(in.begin() + 18, in.end()));
  EXPECT_TRUE(Ipv4ChecksumsValid(out, 14));
}

TEST_F(ExecutorTest, CountersCountPacketsAndBytesWhereTheyRun) {
  uint32_t base = *counters_.Allocate(4);
  ASSERT_TRUE(counters_.Retain(base + 2).ok());
  std::vector<uint8_t> in = BuildFrame(Udp4());
  Run(in, {{hw::OpCode::kCounter, base + 2}, {hw::OpCode::kPushVlan, 0x81000001}});
  Run(in, {{hw::OpCode::kPushVlan, 0x81000001}, {hw::OpCode::kCounter, base + 2}});
  uint64_t packets, bytes;
  ASSERT_TRUE(counters_.Query(base + 2, &packets, &bytes).ok());
  EXPECT_EQ(packets, 2u);
  EXPECT_EQ(bytes, 2 * in.size() + 4);
  EXPECT_EQ(counters_.Free(base).code(), absl::StatusCode::kFailedPrecondition);
  counters_.Release(base + 2);
  EXPECT_TRUE(counters_.Free(base).ok());
  EXPECT_EQ(counters_.Query(base, &packets, &bytes).code(), absl::StatusCode::kNotFound);
}

TEST_F(ExecutorTest, TagSetsTheFlowTag) {
  Run(BuildFrame(Udp4()), {{hw::OpCode::kTag, 0xabcdef}});
  EXPECT_TRUE(meta_.has_flow_tag);
  EXPECT_EQ(meta_.flow_tag, 0xabcdefu);
}

// A rule's own tag: the op carries none, the rule's record gives it.
TEST_F(ExecutorTest, TagOfRuleSetsTheTagRunGets) {
  const std::vector<uint8_t> frame = BuildFrame(Udp4());
  packet_.Assign(frame.data(), frame.size());
  EXPECT_EQ(executor_.Run({{hw::OpCode::kTagOfRule, 5}}, packet_, meta_, 0, {}, 0x123456),
            ActionExecutor::Change::kNothing);
  EXPECT_TRUE(meta_.has_flow_tag);
  EXPECT_EQ(meta_.flow_tag, 0x123456u);
}

// Run says what it changed: the headers, only metadata (an aso action's register), or nothing.
TEST_F(ExecutorTest, RunSaysWhatChanged) {
  const std::vector<uint8_t> in = BuildFrame(Udp4());
  const uint32_t first_hit = aso_.Retain(*aso_.Create(hw::AsoKind::kFirstHit, 0), 0)->id;
  auto change = [&](const std::vector<hw::Op>& ops) {
    packet_.Assign(in.data(), in.size());
    return executor_.Run(ops, packet_, meta_);
  };
  using Change = ActionExecutor::Change;
  EXPECT_EQ(change({}), Change::kNothing);
  EXPECT_EQ(change({{hw::OpCode::kTag, 7}}), Change::kNothing);
  EXPECT_EQ(change({{hw::OpCode::kPopVlan}}), Change::kNothing);  // untagged: nothing popped
  hw::Op hit{hw::OpCode::kAsoFirstHit, first_hit};
  hit.reg = 2;
  EXPECT_EQ(change({{hw::OpCode::kTag, 7}, hit}), Change::kMetadata);
  EXPECT_EQ(change({hit, {hw::OpCode::kPushVlan, 0x81000001}}), Change::kHeaders);
  EXPECT_EQ(change({Modify({hw::ModifySetWord(ModifyField::kMetadataRegC0, 0, 0, 1)}), hit}),
            Change::kMetadata);
  EXPECT_EQ(change({Modify({hw::ModifySetWord(ModifyField::kSmac15_0, 0, 16, 1)})}), Change::kHeaders);
}

// The aso ct action reads the TCP segment where the caller's parse (KnownParse) says it is, until an action
// changes the headers; then where its own parse finds it.
TEST_F(ExecutorTest, ConnTrackStartsFromTheCallersParse) {
  FrameSpec f = Udp4();
  f.protocol = kIpProtoTcp;
  f.seq = 1000;
  f.ack = 5000;
  const std::vector<uint8_t> in = BuildFrame(f);
  const uint32_t object = *aso_.Create(hw::AsoKind::kConnTrack, 0);
  CtContext c;
  const uint32_t window = 65535u << 14;
  c.original = {14, false, true, false, false, 1000, 1000 + window, window, 5000};
  c.reply = {14, false, true, false, false, 5000, 5000 + window, window, 1000};
  ASSERT_TRUE(aso_.ConfigureConnTrack(object, 0, c).ok());
  hw::Op ct{hw::OpCode::kAsoConnTrack, aso_.Retain(object, 0)->id};
  ct.reg = 3;
  ct.set = true;  // the initiator's side

  hw::HeaderVector hv;
  const PacketLayers layers = ParseOuterHeaders(in.data(), in.size(), meta_.source_port, &hv);
  PacketLayers no_l4 = layers;
  no_l4.l4 = 0;  // a parse that found no TCP header
  auto ct_byte = [&](const std::vector<hw::Op>& ops, const PacketLayers* known) {
    packet_.Assign(in.data(), in.size());
    meta_.reg_c[3] = 0xffffff00;
    EXPECT_EQ(executor_.Run(ops, packet_, meta_, 0, {&hv, known, /*whole=*/false}),
              ops.size() == 1 ? ActionExecutor::Change::kMetadata : ActionExecutor::Change::kHeaders);
    EXPECT_EQ(meta_.reg_c[3] >> 8, 0xffffffu);  // the low byte only
    return meta_.reg_c[3] & 0xff;
  };
  EXPECT_EQ(ct_byte({ct}, &layers), CtRegisterByte(kCtPktValid));
  EXPECT_EQ(ct_byte({ct}, &no_l4), CtRegisterByte(kCtPktInvalid | kCtPktBad));
  // A VLAN push moves the headers: the executor parses the tagged frame itself.
  EXPECT_EQ(ct_byte({{hw::OpCode::kPushVlan, 0x81000001}, ct}, &no_l4), CtRegisterByte(kCtPktValid));
  // No parse from the caller: its own.
  packet_.Assign(in.data(), in.size());
  EXPECT_EQ(executor_.Run({ct}, packet_, meta_), ActionExecutor::Change::kMetadata);
  EXPECT_EQ(meta_.reg_c[3] & 0xff, CtRegisterByte(kCtPktValid));
}

}  // namespace
}  // namespace drsim::sim
