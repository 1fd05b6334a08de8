#include "sim/conntrack.h"

#include <random>

#include "gtest/gtest.h"
#include "hw/match_layout.h"
#include "sim/conntrack_prm.h"
#include "sim/frame_builder.h"
#include "sim/packet_parser.h"

namespace drsim::sim {
namespace {

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kAck = 0x10;
constexpr uint32_t kClient = 1000, kServer = 5000;  // next sequence numbers after the handshake

// An ESTABLISHED connection: both windows 65535 unscaled, everything acknowledged.
CtContext Established() {
  CtContext c;
  c.original = {15, false, true, false, false, kClient, kClient + 65535, 65535, kServer};
  c.reply = {15, false, true, false, false, kServer, kServer + 65535, 65535, kClient};
  return c;
}

CtSegment Seg(uint32_t seq, uint32_t ack, uint8_t flags, uint32_t len = 0, uint16_t window = 65535) {
  return CtSegment{seq, ack, window, flags, len};
}

TEST(ConntrackTest, InWindowDataInBothDirectionsIsValid) {
  CtContext c = Established();
  CtSegment a = Seg(kClient, kServer, kAck, 100);
  EXPECT_EQ(TrackCtSegment(c, true, &a), kCtPktValid);
  EXPECT_EQ(c.original.sent_end, kClient + 100);
  EXPECT_TRUE(c.original.data_unacked);
  CtSegment b = Seg(kServer, kClient + 100, kAck, 50);
  EXPECT_EQ(TrackCtSegment(c, false, &b), kCtPktValid);
  EXPECT_FALSE(c.original.data_unacked);  // the server acknowledged everything
  EXPECT_EQ(c.reply.sent_end, kServer + 50);
  EXPECT_EQ(c.original.reply_end, kClient + 100 + 65535);  // ack + window
  EXPECT_EQ(c.state, CtState::kEstablished);
  EXPECT_FALSE(c.last_direction_original);
  EXPECT_EQ(c.last_index, kCtIndexAck);
  EXPECT_EQ(c.last_seq, kServer);
}

TEST(ConntrackTest, OutOfWindowAndBogusAcksAreInvalidAndChangeNothing) {
  CtContext c = Established();
  const CtContext before = c;
  CtSegment beyond = Seg(kClient + 65536, kServer, kAck, 10);  // past reply_end
  EXPECT_EQ(TrackCtSegment(c, true, &beyond), kCtPktInvalid);
  CtSegment old = Seg(kClient - 200000, kServer, kAck, 10);  // already acknowledged long ago
  EXPECT_EQ(TrackCtSegment(c, true, &old), kCtPktInvalid);
  CtSegment unseen = Seg(kClient, kServer + 1, kAck);  // acks data the server never sent
  EXPECT_EQ(TrackCtSegment(c, true, &unseen), kCtPktInvalid);
  CtSegment stale = Seg(kClient, kServer - 70000, kAck);  // below the 66000-byte ack window
  EXPECT_EQ(TrackCtSegment(c, true, &stale), kCtPktInvalid);
  EXPECT_TRUE(c == before) << DescribeCtContext(c);
  // max_ack_window widens the ack window: 66000 << 1 reaches the stale ack.
  c.max_ack_window = 1;
  EXPECT_EQ(TrackCtSegment(c, true, &stale), kCtPktValid);
  // A liberal sender passes out of the window, untracked.
  c = before;
  c.original.liberal = true;
  EXPECT_EQ(TrackCtSegment(c, true, &beyond), kCtPktValid);
  EXPECT_EQ(c.original.sent_end, kClient);
}

TEST(ConntrackTest, FinExchangeMovesTheState) {
  CtContext c = Established();
  CtSegment fin = Seg(kClient, kServer, kFin | kAck);
  EXPECT_EQ(TrackCtSegment(c, true, &fin), kCtPktValid | kCtPktChanged);
  EXPECT_EQ(c.state, CtState::kFinWait);
  EXPECT_TRUE(c.original.close_initiated);
  EXPECT_EQ(TrackCtSegment(c, true, &fin), kCtPktValid);  // retransmitted FIN: no move
  CtSegment partial = Seg(kServer, kClient, kAck);        // does not ack the FIN yet
  EXPECT_EQ(TrackCtSegment(c, false, &partial), kCtPktValid);
  EXPECT_EQ(c.state, CtState::kFinWait);
  CtSegment ack_fin = Seg(kServer, kClient + 1, kAck);
  EXPECT_EQ(TrackCtSegment(c, false, &ack_fin), kCtPktValid | kCtPktChanged);
  EXPECT_EQ(c.state, CtState::kCloseWait);
  CtSegment fin2 = Seg(kServer, kClient + 1, kFin | kAck);
  EXPECT_EQ(TrackCtSegment(c, false, &fin2), kCtPktValid | kCtPktChanged);
  EXPECT_EQ(c.state, CtState::kLastAck);
  CtSegment last = Seg(kClient + 1, kServer + 1, kAck);
  EXPECT_EQ(TrackCtSegment(c, true, &last), kCtPktValid | kCtPktChanged);
  EXPECT_EQ(c.state, CtState::kTimeWait);
}

TEST(ConntrackTest, SynRecvEstablishesOnTheInitiatorsAck) {
  CtContext c = Established();
  c.state = CtState::kSynRecv;
  CtSegment synack = Seg(kServer - 1, kClient, kSyn | kAck);  // a retransmitted SYN-ACK
  EXPECT_EQ(TrackCtSegment(c, false, &synack), kCtPktValid);
  CtSegment ack = Seg(kClient, kServer, kAck);
  EXPECT_EQ(TrackCtSegment(c, true, &ack), kCtPktValid | kCtPktChanged);
  EXPECT_EQ(c.state, CtState::kEstablished);
  EXPECT_TRUE(c.live_connection);
  EXPECT_EQ(TrackCtSegment(c, false, &synack), kCtPktInvalid);  // no SYN-ACK once established
  CtSegment syn = Seg(kClient, 0, kSyn);
  EXPECT_EQ(TrackCtSegment(c, true, &syn), kCtPktInvalid);
}

TEST(ConntrackTest, RstClosesAndWindowScalingWidensTheWindow) {
  CtContext c = Established();
  c.original.scale = 7;
  c.reply.scale = 7;
  c.reply.max_win = 512u << 7;
  c.original.reply_end = kClient + (512u << 7);
  CtSegment far = Seg(kClient + 60000, kServer, kAck, 100, 512);
  EXPECT_EQ(TrackCtSegment(c, true, &far), kCtPktValid);
  CtSegment reply = Seg(kServer, kClient + 60100, kAck, 0, 512);  // window 512 << 7
  EXPECT_EQ(TrackCtSegment(c, false, &reply), kCtPktValid);
  EXPECT_EQ(c.original.reply_end, kClient + 60100 + (512u << 7));
  CtSegment rst = Seg(kClient + 60100, 0, kRst);
  EXPECT_EQ(TrackCtSegment(c, true, &rst), kCtPktValid | kCtPktChanged);
  EXPECT_EQ(c.state, CtState::kTimeWait);
  EXPECT_EQ(c.last_index, kCtIndexRst);
}

TEST(ConntrackTest, RetransmissionsAreCounted) {
  CtContext c = Established();
  c.retransmission_limit = 1;
  CtSegment s = Seg(kClient, kServer, kAck, 10);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(TrackCtSegment(c, true, &s), kCtPktValid);
  EXPECT_EQ(c.retransmission_counter, 2);
  EXPECT_TRUE(c.retransmission_limit_exceeded);
  CtSegment next = Seg(kClient + 10, kServer, kAck, 10);
  EXPECT_EQ(TrackCtSegment(c, true, &next), kCtPktValid);
  EXPECT_EQ(c.retransmission_counter, 0);
  EXPECT_TRUE(c.retransmission_limit_exceeded);  // sticky
}

TEST(ConntrackTest, DisabledUnprogrammedAndBadPackets) {
  CtContext c = Established();
  CtSegment s = Seg(kClient, kServer, kAck);
  c.enable = false;
  EXPECT_EQ(TrackCtSegment(c, true, &s), kCtPktDisabled);
  c.enable = true;
  c.valid = false;
  EXPECT_EQ(TrackCtSegment(c, true, &s), kCtPktDisabled);
  c.valid = true;
  EXPECT_EQ(TrackCtSegment(c, true, nullptr), kCtPktInvalid | kCtPktBad);
  CtSegment synfin = Seg(kClient, kServer, kSyn | kFin);
  EXPECT_EQ(TrackCtSegment(c, true, &synfin), kCtPktInvalid | kCtPktBad);
  CtSegment none = Seg(kClient, kServer, 0);
  EXPECT_EQ(TrackCtSegment(c, true, &none), kCtPktInvalid | kCtPktBad);
  EXPECT_TRUE(c == Established());
}

TEST(ConntrackTest, RegisterEncodingAndMatchAreThePmds) {
  EXPECT_EQ(CtRegisterByte(kCtPktValid), 0x00);
  EXPECT_EQ(CtRegisterByte(kCtPktValid | kCtPktChanged), 0x02);
  EXPECT_EQ(CtRegisterByte(kCtPktInvalid), 0x40);
  EXPECT_EQ(CtRegisterByte(kCtPktInvalid | kCtPktBad), 0x41);
  EXPECT_EQ(CtRegisterByte(kCtPktDisabled), 0x80);
  struct Case {
    uint32_t spec, mask, value, reg_mask;
  } cases[] = {{kCtPktValid, kCtPktValid, 0x00, 0xc0},       {kCtPktInvalid, kCtPktInvalid, 0x40, 0xc0},
               {kCtPktDisabled, kCtPktDisabled, 0x80, 0xc0}, {kCtPktChanged, kCtPktChanged, 0x02, 0x02},
               {kCtPktBad, kCtPktBad, 0x01, 0x01},           {kCtPktValid | kCtPktChanged, 0x1f, 0x02, 0xc3}};
  for (const Case& k : cases) {
    absl::StatusOr<CtRegisterMatch> m = CtResultMatch(k.spec, k.mask);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->value, k.value) << k.spec;
    EXPECT_EQ(m->mask, k.reg_mask) << k.spec;
    // The match selects exactly the register bytes of packet states carrying the flags.
    for (uint32_t state : {kCtPktValid, kCtPktValid | kCtPktChanged, kCtPktInvalid, kCtPktInvalid | kCtPktBad,
                           kCtPktDisabled}) {
      const bool hit = (CtRegisterByte(state) & m->mask) == m->value;
      EXPECT_EQ(hit, (state & k.mask) == (k.spec & k.mask)) << k.spec << " on " << state;
    }
  }
  EXPECT_EQ(CtResultMatch(kCtPktValid | kCtPktInvalid, 0x1f).status().message(),
            "conntrack flags 0x5: VALID conflicts with INVALID, DISABLED and BAD");
  EXPECT_EQ(
      CtResultMatch(0x20, 0x1f).status().message(),
      "conntrack flags 0x20: only VALID 0x1, CHANGED 0x2, INVALID 0x4, DISABLED 0x8 and BAD 0x10 exist");
}

TEST(ConntrackTest, CheckNamesTheFieldOutOfRange) {
  CtContext c = Established();
  c.max_ack_window = 8;
  EXPECT_EQ(CheckCtContext(c).message(), "CT context max_ack_window 8: at most 7");
  c = Established();
  c.reply.scale = 16;
  EXPECT_EQ(CheckCtContext(c).message(), "CT context reply_dir.scale 16: at most 15");
  c = Established();
  c.retransmission_limit = 9;
  EXPECT_EQ(CheckCtContext(c).message(), "CT context retransmission_limit 9: at most 7");
  c = Established();
  c.state = static_cast<CtState>(6);
  EXPECT_EQ(CheckCtContext(c).message(), "CT context state 6: one of SYN_RECV (0) ... TIME_WAIT (5)");
  c = Established();
  c.last_index = 32;
  EXPECT_EQ(CheckCtContext(c).message(), "CT context last_index 32: at most 31");
  EXPECT_TRUE(CheckCtContext(Established()).ok());
}

TEST(ConntrackTest, PrmLayoutRoundTripsAndPlacesFields) {
  std::mt19937 rng(1);
  for (int i = 0; i < 1000; ++i) {
    CtContext c;
    c.valid = rng() & 1;
    c.enable = rng() & 1;
    c.live_connection = rng() & 1;
    c.selective_ack = rng() & 1;
    c.challenge_ack_passed = rng() & 1;
    c.heartbeat = rng() & 1;
    c.state = static_cast<CtState>(rng() % kCtStateCount);
    c.max_ack_window = rng() % 8;
    c.retransmission_limit = rng() % 8;
    c.retransmission_counter = rng() % 8;
    c.retransmission_limit_exceeded = rng() & 1;
    for (CtDirection* d : {&c.original, &c.reply}) {
      *d = CtDirection{static_cast<uint8_t>(rng() % 16),
                       bool(rng() & 1),
                       bool(rng() & 1),
                       bool(rng() & 1),
                       bool(rng() & 1),
                       static_cast<uint32_t>(rng()),
                       static_cast<uint32_t>(rng()),
                       static_cast<uint32_t>(rng()),
                       static_cast<uint32_t>(rng())};
    }
    c.last_direction_original = rng() & 1;
    c.last_index = rng() % 32;
    c.last_window = static_cast<uint16_t>(rng());
    c.last_seq = rng();
    c.last_ack = rng();
    c.last_end = rng();
    absl::StatusOr<CtContext> back = ParseCtContext(SerializeCtContext(c));
    ASSERT_TRUE(back.ok());
    ASSERT_TRUE(*back == c) << DescribeCtContext(c) << "\n" << DescribeCtContext(*back);
  }
  // Where PRM conn_track_aso puts things: reply window first, state in bits 30:28 of word 15.
  CtContext c = Established();
  c.reply.scale = 3;
  c.original.liberal = true;
  c.retransmission_limit = 5;
  const auto prm = SerializeCtContext(c);
  EXPECT_EQ(prm[14], kServer >> 8);  // reply_dir.sent_end, word 3
  EXPECT_EQ(prm[15], kServer & 0xff);
  EXPECT_EQ(prm[56], 0x31);  // reply scale 3, max_ack bit
  EXPECT_EQ(prm[58], 0xf5);  // original scale 15, liberal, max_ack
  EXPECT_EQ(prm[60], 0x90);  // valid, state ESTABLISHED (1)
  EXPECT_EQ(prm[63], 0x05);
  std::array<uint8_t, kCtPrmBytes> bad = prm;
  bad[60] = 0xe0;  // state 6
  EXPECT_EQ(ParseCtContext(bad).status().message(),
            "conn_track_aso.state 6: one of SYN_RECV (0) ... TIME_WAIT (5)");
  EXPECT_EQ(ParseCtContext(absl::MakeConstSpan(prm.data(), 10)).status().message(),
            "conn_track_aso: 10 bytes; the context is 64");
}

TEST(ConntrackTest, ReadsSegmentsFromFrames) {
  FrameSpec f;
  f.protocol = kIpProtoTcp;
  f.seq = 7;
  f.ack = 9;
  f.tcp_flags = kFin | kAck;
  f.tcp_window = 1234;
  f.payload_len = 3;  // the frame is padded to 60 bytes: the payload stays 3
  for (L3Kind l3 : {L3Kind::kIpv4, L3Kind::kIpv6}) {
    f.l3 = l3;
    const std::vector<uint8_t> frame = BuildFrame(f);
    hw::HeaderVector hv;
    const PacketLayers layers = ParsePacket(frame.data(), frame.size(), 0xffff, &hv);
    const std::optional<CtSegment> s = ReadCtSegment(frame, layers.l3, layers.l4, 6);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->seq, 7u);
    EXPECT_EQ(s->ack, 9u);
    EXPECT_EQ(s->flags, kFin | kAck);
    EXPECT_EQ(s->window, 1234);
    EXPECT_EQ(s->payload_len, 3u);
    EXPECT_FALSE(ReadCtSegment(frame, layers.l3, layers.l4, 17).has_value());
    EXPECT_FALSE(ReadCtSegment(absl::MakeConstSpan(frame).subspan(0, layers.l4 + 10), layers.l3, layers.l4, 6)
                     .has_value());
  }
}

}  // namespace
}  // namespace drsim::sim
