#include "hw/definer.h"

#include <vector>

#include "gtest/gtest.h"
#include "hw/match_params.h"

namespace drsim::hw {
namespace {

TEST(DefinerTest, EmptyMaskGivesEmptyKey) {
  MatchParams zero;
  Definer d = Definer::FromMask(zero.bytes());
  EXPECT_EQ(d.key_words(), 0u);
}

TEST(DefinerTest, KeyHoldsOnlyMaskedWordsAndBits) {
  MatchParams mask = *MatchBuilder().IpVersion(kOuter, 0xf).TcpDport(kOuter, 0xff00).Build();
  Definer d = Definer::FromMask(mask.bytes());
  // ip_version is in the word at byte 16, tcp_dport in the word at byte 20.
  EXPECT_EQ(d.word_offsets(), (std::vector<size_t>{16, 20}));

  MatchParams a = *MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0x1234).TcpSport(kOuter, 9).Build();
  MatchParams b = *MatchBuilder().IpVersion(kOuter, 4).TcpDport(kOuter, 0x12ff).IpProtocol(kOuter, 6).Build();
  MatchParams c = *MatchBuilder().IpVersion(kOuter, 6).TcpDport(kOuter, 0x1234).Build();
  uint32_t ka[2], kb[2], kc[2];
  d.Extract(a.bytes(), ka);
  d.Extract(b.bytes(), kb);
  d.Extract(c.bytes(), kc);
  // Unmasked bits (low byte of the port, the source port, the protocol) do not take part.
  EXPECT_EQ(ka[0], kb[0]);
  EXPECT_EQ(ka[1], kb[1]);
  EXPECT_NE(ka[0], kc[0]);
}

}  // namespace
}  // namespace drsim::hw

namespace drsim::hw {
namespace {

TEST(DefinerTest, FoldedWordsCompareAsOne) {
  MatchParams mask = *MatchBuilder().UdpDport(kOuter, 0xffff).Build();
  const uint32_t tcp_word = Info(Field::kOuterTcpDport).word_offset();
  const uint32_t udp_word = Info(Field::kOuterUdpDport).word_offset();
  Definer d = Definer::FromMask(mask.bytes(), {{tcp_word, udp_word}});
  EXPECT_EQ(d.word_offsets(), (std::vector<size_t>{tcp_word}));

  MatchParams udp = *MatchBuilder().UdpDport(kOuter, 4789).Build();
  MatchParams tcp = *MatchBuilder().TcpDport(kOuter, 4789).Build();
  MatchParams other = *MatchBuilder().UdpDport(kOuter, 53).Build();
  uint32_t ku, kt, ko;
  d.Extract(udp.bytes(), &ku);
  d.Extract(tcp.bytes(), &kt);
  d.Extract(other.bytes(), &ko);
  EXPECT_EQ(ku, kt);  // one L4 port field, as in the hardware's 5-tuple lookup
  EXPECT_NE(ku, ko);
}

// A matcher's summary (hw/flow_table.h) reads one key word: the one with the most mask bits, the first of
// equals; past the key, a word that reads 0.
TEST(DefinerTest, TheWidestWordIsTheOneWithMostMaskBits) {
  MatchParams mask = *MatchBuilder()
                          .IpVersion(kOuter, 0xf)
                          .TcpDport(kOuter, 0xffff)
                          .Ipv4Src(kOuter, Ipv4Address{0xffffff00})
                          .Ipv4Dst(kOuter, Ipv4Address{0xffffff00})
                          .Build();
  Definer d = Definer::FromMask(mask.bytes());
  ASSERT_EQ(d.key_words(), 4u);    // ip_version, ports, source, destination
  EXPECT_EQ(d.widest_word(), 2u);  // the source: 24 bits, as many as the destination, which comes later
  MatchParams packet = *MatchBuilder()
                            .IpVersion(kOuter, 4)
                            .TcpDport(kOuter, 80)
                            .Ipv4Src(kOuter, *Ipv4Address::Parse("10.1.2.3"))
                            .Ipv4Dst(kOuter, *Ipv4Address::Parse("10.9.9.9"))
                            .Build();
  uint32_t key[4];
  d.Extract(packet.bytes(), key);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(d.word(i).Read(packet.bytes()), key[i]) << i;
  EXPECT_EQ(d.word(4).Read(packet.bytes()), 0u);
  EXPECT_EQ(Definer::FromMask(MatchParams().bytes()).widest_word(), 0u);
  EXPECT_EQ(Definer::FromMask(MatchParams().bytes()).word(0).Read(packet.bytes()), 0u);
}

TEST(DefinerTest, ReadsOnlySeesFoldedWordsToo) {
  MatchParams mask = *MatchBuilder().UdpDport(kOuter, 0xffff).Build();
  const size_t tcp_word = Info(Field::kOuterTcpDport).word_offset();
  const size_t udp_word = Info(Field::kOuterUdpDport).word_offset();
  Definer d =
      Definer::FromMask(mask.bytes(), {{static_cast<uint32_t>(tcp_word), static_cast<uint32_t>(udp_word)}});
  EXPECT_TRUE(d.ReadsOnly([&](size_t w) { return w == tcp_word || w == udp_word; }));
  EXPECT_FALSE(d.ReadsOnly([&](size_t w) { return w == tcp_word; }));
  EXPECT_TRUE(Definer::FromMask(MatchParams().bytes()).ReadsOnly([](size_t) { return false; }));
}

}  // namespace
}  // namespace drsim::hw
