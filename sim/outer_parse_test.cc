// The outer parse (ParseOuterHeaders) against the full parse, and the plain IPv4 key reader
// (sim/plain_ipv4.h) against the outer parse's keys.
#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "absl/types/span.h"
#include "gtest/gtest.h"
#include "hw/byte_order.h"
#include "sim/frame_builder.h"
#include "sim/packet_parser.h"
#include "sim/plain_ipv4.h"
#include "sim/tunnel_frames_testing.h"

namespace drsim::sim {
namespace {

using hw::Field;

// Frames of every kind the outer parse meets: tunnels, VLAN tags, IPv6 extensions, plain TCP, UDP and ICMP,
// fragments, each at every truncation, and damaged copies — among them plain IPv4 frames with random header
// bytes, and frames one flipped bit away from plain.
std::vector<std::vector<uint8_t>> OuterParseFrames() {
  std::vector<TunnelFrameSpec> specs = EveryTunnelKind();
  for (size_t i = 0, n = specs.size(); i < n; ++i) {
    TunnelFrameSpec t = specs[i];
    t.outer.vlans = {{0x88a8, 7}, {0x8100, 9}};
    t.outer.l3 = L3Kind::kIpv6;
    t.outer.ipv6_extensions = {0, 60};
    specs.push_back(t);
  }
  TunnelFrameSpec plain = Tunnel(Encap::kNone);
  for (uint8_t protocol : {kIpProtoTcp, kIpProtoUdp, kIpProtoIcmp}) {
    plain.outer.protocol = protocol;
    specs.push_back(plain);
  }
  plain.outer.more_fragments = true;
  specs.push_back(plain);
  std::vector<std::vector<uint8_t>> frames;
  for (const TunnelFrameSpec& t : specs) {
    const std::vector<uint8_t> f = BuildFrame(t);
    for (size_t len = 0; len <= f.size(); ++len) frames.emplace_back(f.begin(), f.begin() + len);
  }
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) frames.push_back(Damaged(BuildFrame(specs[i % specs.size()]), rng));
  // Plain frames of TCP, UDP, ICMP and other protocols (GRE and IP in IP among them: the outer parse reads
  // no tunnel).
  for (uint8_t protocol : {kIpProtoTcp, kIpProtoUdp, kIpProtoIcmp, uint8_t{0}, uint8_t{4}, uint8_t{41},
                           uint8_t{47}, uint8_t{50}, uint8_t{58}, uint8_t{132}, uint8_t{255}}) {
    plain.outer.protocol = protocol;
    plain.outer.more_fragments = false;
    const std::vector<uint8_t> f = BuildFrame(plain);
    const int frames_of_protocol = protocol == kIpProtoTcp || protocol == kIpProtoUdp ? 2000 : 300;
    for (int i = 0; i < frames_of_protocol; ++i) {
      std::vector<uint8_t> g = f;
      // Every header byte at random but those that keep a frame plain: the ethertype, IPv4's version and
      // header length, its fragment bits and protocol, TCP's data offset.
      for (size_t b = 0; b < 54 && b < g.size(); ++b) {
        if (b != 14 && b != 46 && b != 12 && b != 13 && b != 20 && b != 23) {
          g[b] = static_cast<uint8_t>(rng());
        }
      }
      frames.push_back(g);
    }
  }
  return frames;
}

// ParseOuterHeaders fills the words FilledByOuterParse names exactly as ParsePacket does, whatever the
// vector held before, and finds the same outer layers: on tunnels, VLAN tags, IPv6 extensions, fragments,
// every truncation and damage.
TEST(OuterParseTest, OuterParseFillsItsWordsAsTheFullParse) {
  const std::vector<std::vector<uint8_t>> frames = OuterParseFrames();
  size_t words = 0;
  for (const std::vector<uint8_t>& f : frames) {
    const std::vector<uint8_t> exact(f);  // exactly its size on the heap: ASan sees any read past it
    const uint8_t* data = exact.empty() ? nullptr : exact.data();
    hw::HeaderVector full, outer;
    const PacketLayers full_layers = ParsePacket(data, exact.size(), 3, &full);
    std::memset(outer.bytes, 0xa5, sizeof outer.bytes);
    const PacketLayers outer_layers = ParseOuterHeaders(data, exact.size(), 3, &outer);
    EXPECT_EQ(outer_layers.l3, full_layers.l3) << exact.size() << "-byte frame";
    EXPECT_EQ(outer_layers.l4, full_layers.l4) << exact.size() << "-byte frame";
    EXPECT_EQ(outer_layers.payload, full_layers.payload) << exact.size() << "-byte frame";
    EXPECT_EQ(outer_layers.tunnel_type, TunnelType::kNone);
    EXPECT_EQ(outer_layers.inner_l2 | outer_layers.inner_l3 | outer_layers.inner_l4, 0);
    for (size_t w = 0; w < hw::kMatchParamBytes; w += 4) {
      if (!FilledByOuterParse(w)) continue;
      ++words;
      ASSERT_EQ(std::memcmp(full.bytes + w, outer.bytes + w, 4), 0)
          << "word at byte " << w << " of a " << exact.size() << "-byte frame";
    }
  }
  EXPECT_EQ(words, frames.size() * (hw::kSectionBytes / 4 + 1));
}

// PlainIpv4KeyReader reads from each plain IPv4 frame the key Definer::Extract takes from its outer parse,
// and refuses every other frame: for single words, the five-tuple with TCP and UDP ports folded, and random
// masks over every word the outer parse fills (with the port fold either way round).
TEST(OuterParseTest, PlainKeysAreTheOuterParsesKeys) {
  std::vector<size_t> outer_words;
  for (size_t w = 0; w < hw::kMatchParamBytes; w += 4) {
    if (FilledByOuterParse(w)) outer_words.push_back(w);
  }
  const uint32_t tcp_ports = hw::Info(Field::kOuterTcpSport).word_offset();
  const uint32_t udp_ports = hw::Info(Field::kOuterUdpSport).word_offset();
  std::vector<hw::Definer> definers;
  for (size_t w : outer_words) {
    uint8_t mask[hw::kMatchParamBytes] = {};
    std::memset(mask + w, 0xff, 4);
    definers.push_back(hw::Definer::FromMask(mask));
  }
  {
    uint8_t mask[hw::kMatchParamBytes] = {};
    for (Field f : {Field::kOuterIpVersion, Field::kOuterIpProtocol, Field::kOuterSrcIp31_0,
                    Field::kOuterDstIp31_0, Field::kOuterTcpSport, Field::kOuterTcpDport}) {
      hw::SetFieldAllOnes(mask, f);
    }
    const hw::Definer::Fold fold{tcp_ports, udp_ports};
    definers.push_back(hw::Definer::FromMask(mask, {&fold, 1}));
  }
  std::mt19937 rng(12);
  for (int i = 0; i < 200; ++i) {
    uint8_t mask[hw::kMatchParamBytes] = {};
    for (size_t w : outer_words) {
      if (rng() % 3 == 0) hw::StoreBe32(mask + w, static_cast<uint32_t>(rng()));
    }
    std::vector<hw::Definer::Fold> folds;
    if (i % 3 == 1) folds.push_back({tcp_ports, udp_ports});
    if (i % 3 == 2) folds.push_back({udp_ports, tcp_ports});
    definers.push_back(hw::Definer::FromMask(mask, folds));
  }
  size_t plain = 0, keys = 0;
  const std::vector<std::vector<uint8_t>> frames = OuterParseFrames();
  // Each way of reading, one reader through every definer: Prepare must compile each anew, and find the
  // one it has when asked again.
  for (const bool byte_shuffle : {true, false}) {
    PlainIpv4KeyReader reader(byte_shuffle);
    for (const hw::Definer& d : definers) {
      ASSERT_TRUE(reader.Prepare(d)) << d.key_words() << " words";
      ASSERT_TRUE(reader.Prepare(d));
      ASSERT_EQ(reader.key_words(), d.key_words());
      for (const std::vector<uint8_t>& f : frames) {
        const std::vector<uint8_t> exact(f);  // exactly its size on the heap: ASan sees any read past it
        const uint8_t* data = exact.empty() ? nullptr : exact.data();
        uint32_t read[hw::kMatchParamBytes / 4], want[hw::kMatchParamBytes / 4];
        std::memset(read, 0xa5, sizeof read);
        const bool was_plain = reader.Read(data, exact.size(), 7, read);
        ASSERT_EQ(was_plain, IsPlainIpv4Frame(data, exact.size()));
        if (!was_plain) {
          EXPECT_EQ(read[0], 0xa5a5a5a5u) << "a refused frame's key was written";
          continue;
        }
        EXPECT_EQ(read[d.key_words()], 0xa5a5a5a5u) << "written past the key";
        ++plain;
        hw::HeaderVector hv;
        ParseOuterHeaders(data, exact.size(), 7, &hv);
        d.Extract(hv.bytes, want);
        for (size_t k = 0; k < d.key_words(); ++k, ++keys) {
          ASSERT_EQ(read[k], want[k]) << "key word " << k << " (layout byte " << d.word(k).offset << ") of a "
                                      << exact.size() << "-byte frame, byte shuffle " << byte_shuffle;
        }
      }
    }
  }
  EXPECT_GT(plain, 2 * definers.size() * 1000);  // the random plain frames mostly stay plain
  EXPECT_GT(keys, plain);
}

// ReadBurst writes the keys of a burst's plain frames end to end, each where its frame's place says, marks
// them in its result, and leaves the other frames' places as they were: for keys that end in every part of
// a 16-byte block (1, 3, 4 and 6 words) and the longest key (the outer section and the source port, 17).
TEST(OuterParseTest, PlainKeysOfABurstLieEndToEnd) {
  const hw::Definer::Fold fold{static_cast<uint32_t>(hw::Info(Field::kOuterTcpSport).word_offset()),
                               static_cast<uint32_t>(hw::Info(Field::kOuterUdpSport).word_offset())};
  std::vector<hw::Definer> definers;
  for (const std::vector<Field>& fields : std::vector<std::vector<Field>>{
           {Field::kOuterDstIp31_0},
           {Field::kOuterIpProtocol, Field::kOuterSrcIp31_0, Field::kOuterTcpSport},
           {Field::kOuterIpVersion, Field::kOuterIpProtocol, Field::kOuterSrcIp31_0, Field::kOuterDstIp31_0,
            Field::kOuterTcpSport, Field::kOuterTcpDport},
           {Field::kOuterIpVersion, Field::kOuterIpProtocol, Field::kOuterSrcIp31_0, Field::kOuterDstIp31_0,
            Field::kOuterTcpSport, Field::kOuterTcpDport, Field::kOuterIpTtlHoplimit, Field::kSourcePort}}) {
    uint8_t mask[hw::kMatchParamBytes] = {};
    for (Field f : fields) hw::SetFieldAllOnes(mask, f);
    definers.push_back(hw::Definer::FromMask(mask, {&fold, 1}));
  }
  {
    uint8_t mask[hw::kMatchParamBytes] = {};
    std::memset(mask + hw::SectionOffset(hw::Section::kOuter), 0xff, hw::kSectionBytes);
    hw::SetFieldAllOnes(mask, Field::kSourcePort);
    definers.push_back(hw::Definer::FromMask(mask));
  }
  std::vector<size_t> lengths;
  for (const hw::Definer& d : definers) lengths.push_back(d.key_words());
  ASSERT_EQ(lengths, (std::vector<size_t>{1, 3, 4, 6, 17}));
  // Each frame exactly its size on the heap: ASan sees any read past it.
  std::vector<std::unique_ptr<uint8_t[]>> copies;
  std::vector<absl::Span<const uint8_t>> views;
  for (const std::vector<uint8_t>& f : OuterParseFrames()) {
    copies.push_back(std::make_unique<uint8_t[]>(f.size()));
    std::copy(f.begin(), f.end(), copies.back().get());
    views.emplace_back(f.empty() ? nullptr : copies.back().get(), f.size());
  }
  for (const bool byte_shuffle : {true, false}) {
    PlainIpv4KeyReader reader(byte_shuffle);
    for (const hw::Definer& d : definers) {
      ASSERT_TRUE(reader.Prepare(d));
      const size_t words = d.key_words();
      size_t bursts_with_both = 0;
      for (size_t at = 0; at < views.size(); at += 64) {
        const size_t n = std::min<size_t>(64, views.size() - at);
        std::vector<uint32_t> keys(n * words + 1, 0xa5a5a5a5u);
        const uint64_t plain = reader.ReadBurst(views.data() + at, n, 0x1f2, keys.data());
        EXPECT_EQ(keys.back(), 0xa5a5a5a5u) << "written past the last key";
        size_t plain_frames = 0;
        for (size_t j = 0; j < n; ++j) {
          const absl::Span<const uint8_t> f = views[at + j];
          const bool is_plain = IsPlainIpv4Frame(f.data(), f.size());
          ASSERT_EQ((plain >> j & 1) != 0, is_plain) << "frame " << at + j;
          plain_frames += is_plain;
          uint32_t want[hw::kMatchParamBytes / 4];
          if (is_plain) {
            hw::HeaderVector hv;
            ParseOuterHeaders(f.data(), f.size(), 0x1f2, &hv);
            d.Extract(hv.bytes, want);
          } else {
            std::fill(want, want + words, 0xa5a5a5a5u);
          }
          for (size_t k = 0; k < words; ++k) {
            ASSERT_EQ(keys[j * words + k], want[k]) << "frame " << at + j << " key word " << k << " of "
                                                    << words << ", byte shuffle " << byte_shuffle;
          }
        }
        bursts_with_both += plain_frames > 0 && plain_frames < n;
      }
      EXPECT_GT(bursts_with_both, 10u);
    }
  }
}

// The byte shuffle runs wherever the CPU has one: a reader asked for it says so, and one asked for the
// portable loop takes it.
TEST(OuterParseTest, PlainKeysUseTheByteShuffleWhereThereIsOne) {
#if defined(__x86_64__)
  EXPECT_EQ(PlainIpv4KeyReader(true).byte_shuffle(), __builtin_cpu_supports("ssse3") != 0);
#else
  EXPECT_FALSE(PlainIpv4KeyReader(true).byte_shuffle());
#endif
  EXPECT_FALSE(PlainIpv4KeyReader(false).byte_shuffle());
}

// A definer that reads beyond the outer headers gets no plain reader: its key needs a parse.
TEST(OuterParseTest, KeysBeyondTheOuterHeadersHaveNoPlainReader) {
  uint8_t mask[hw::kMatchParamBytes] = {};
  hw::SetFieldAllOnes(mask, Field::kOuterSrcIp31_0);
  hw::SetFieldAllOnes(mask, Field::kInnerSrcIp31_0);
  PlainIpv4KeyReader reader;
  EXPECT_FALSE(reader.Prepare(hw::Definer::FromMask(mask)));
}

// An empty key (a catch-all matcher's) is read from every plain frame, as nothing, on a fresh reader and
// after a refused definer.
TEST(OuterParseTest, AnEmptyKeyIsReadFromEveryPlainFrame) {
  FrameSpec spec;
  const std::vector<uint8_t> plain = BuildFrame(spec);
  spec.vlans = {{0x8100, 5}};
  const std::vector<uint8_t> tagged = BuildFrame(spec);
  uint8_t inner[hw::kMatchParamBytes] = {};
  hw::SetFieldAllOnes(inner, Field::kInnerSrcIp31_0);
  for (const bool refused_first : {false, true}) {
    PlainIpv4KeyReader reader;
    if (refused_first) {
      ASSERT_FALSE(reader.Prepare(hw::Definer::FromMask(inner)));
    }
    ASSERT_TRUE(reader.Prepare(hw::Definer()));
    EXPECT_EQ(reader.key_words(), 0u);
    uint32_t key = 0xa5a5a5a5u;
    EXPECT_TRUE(reader.Read(plain.data(), plain.size(), 1, &key));
    EXPECT_FALSE(reader.Read(tagged.data(), tagged.size(), 1, &key));
    EXPECT_EQ(key, 0xa5a5a5a5u);
  }
}

// Nor does one that folds two words a plain frame fills from different bytes (no matcher compiles such a
// fold; a parse serves it all the same).
TEST(OuterParseTest, FoldsOfDifferentBytesHaveNoPlainReader) {
  uint8_t mask[hw::kMatchParamBytes] = {};
  hw::SetFieldAllOnes(mask, Field::kOuterSrcIp31_0);
  hw::SetFieldAllOnes(mask, Field::kOuterDstIp31_0);
  const hw::Definer::Fold fold{static_cast<uint32_t>(hw::Info(Field::kOuterSrcIp31_0).word_offset()),
                               static_cast<uint32_t>(hw::Info(Field::kOuterDstIp31_0).word_offset())};
  PlainIpv4KeyReader reader;
  EXPECT_FALSE(reader.Prepare(hw::Definer::FromMask(mask, {&fold, 1})));
  // Refused, then a definer it takes: the keys are that definer's.
  const hw::Definer unfolded = hw::Definer::FromMask(mask);
  ASSERT_TRUE(reader.Prepare(unfolded));
  FrameSpec spec;
  spec.ipv4_src = {0x0a000001};
  spec.ipv4_dst = {0xc0a80102};
  const std::vector<uint8_t> frame = BuildFrame(spec);
  uint32_t read[2], want[2];
  ASSERT_TRUE(reader.Read(frame.data(), frame.size(), 3, read));
  hw::HeaderVector hv;
  ParseOuterHeaders(frame.data(), frame.size(), 3, &hv);
  unfolded.Extract(hv.bytes, want);
  EXPECT_EQ(read[0], want[0]);
  EXPECT_EQ(read[1], want[1]);
  EXPECT_EQ(hw::LoadBe32(reinterpret_cast<const uint8_t*>(&read[0])), 0x0a000001u);
}

}  // namespace
}  // namespace drsim::sim
