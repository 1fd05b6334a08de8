#include "tests/ct_conversation.h"

#include "sim/frame_builder.h"

namespace drsim::testing {
namespace {

constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10;

// One end of the connection as the generator plays it.
struct End {
  uint32_t next_seq = 0;  // the next sequence number it sends
  uint8_t scale = 0;      // 15: no scaling
  uint16_t window = 0;    // raw window field it advertises
  std::vector<CtStep> sent;
};

uint16_t RandomWindow(const Below& below) {
  switch (below(4)) {
    case 0:
      return static_cast<uint16_t>(1 + below(65535));
    case 1:
      return static_cast<uint16_t>(below(512));
    default:
      return static_cast<uint16_t>(65535 - below(4096));
  }
}

uint32_t Scaled(uint16_t window, uint8_t scale) {
  return scale == 15 ? window : static_cast<uint32_t>(window) << scale;
}

}  // namespace

CtConversation MakeConversation(const Below& below, int steps) {
  CtConversation conv;
  End ends[2];
  for (End& e : ends) {
    e.next_seq = below(0xffffffffu);
    e.scale = static_cast<uint8_t>(below(4) == 0 ? 15 : below(15));
    e.window = RandomWindow(below);
  }
  sim::CtContext& c = conv.context;
  const int mode = static_cast<int>(below(4));  // 0, 1: ESTABLISHED; 2: SYN_RECV; 3: mid-stream pickup
  // Both ends have sent their SYN: each next_seq is ISN + 1.
  for (End& e : ends) e.next_seq += 1;
  sim::CtDirection* dirs[2] = {&c.original, &c.reply};
  for (int d = 0; d < 2; ++d) {
    End& me = ends[d];
    End& peer = ends[1 - d];
    sim::CtDirection& x = *dirs[d];
    x.scale = me.scale;
    x.sent_end = me.next_seq;
    x.max_win = mode == 2 ? me.window : Scaled(me.window, me.scale);
    if (x.max_win == 0) x.max_win = 1;
    x.reply_end = me.next_seq + Scaled(peer.window, peer.scale);
    x.max_ack = peer.next_seq;
    x.last_ack_seen = !(mode == 2 && d == 0);  // in SYN_RECV the initiator has not acked yet
    if (!x.last_ack_seen) x.max_ack = 0;
    x.liberal = below(8) == 0;
  }
  if (mode == 3) c.reply = sim::CtDirection{ends[1].scale};
  c.state = mode == 2 ? sim::CtState::kSynRecv : sim::CtState::kEstablished;
  c.valid = below(32) != 0;
  c.enable = below(16) != 0;
  c.live_connection = mode != 2;
  c.selective_ack = below(2);
  c.max_ack_window = static_cast<uint8_t>(below(8));
  c.retransmission_limit = static_cast<uint8_t>(below(8));
  c.last_direction_original = true;
  c.last_index = mode == 2 ? sim::kCtIndexSynAck : sim::kCtIndexAck;

  for (int i = 0; i < steps; ++i) {
    CtStep s;
    s.dir = static_cast<int>(below(2));
    End& me = ends[s.dir];
    End& peer = ends[1 - s.dir];
    sim::CtSegment& g = s.segment;
    g.seq = me.next_seq;
    g.ack = peer.next_seq - (below(4) == 0 ? below(3000) : 0);  // sometimes an older ack
    g.window = below(8) == 0 ? RandomWindow(below) : me.window;
    g.flags = kAck;
    const uint32_t event = below(100);
    if (event < 40) {  // in-order data
      g.payload_len = below(1461);
      g.flags |= below(2) ? kPsh : 0;
    } else if (event < 50) {                      // pure ACK
    } else if (event < 60 && !me.sent.empty()) {  // exact retransmission
      const size_t back = below(4) == 0 ? below(static_cast<uint32_t>(me.sent.size())) : 0;
      conv.steps.push_back(me.sent[me.sent.size() - 1 - back]);
      continue;
    } else if (event < 65) {  // a reordered pair: the later segment first
      CtStep first = s;
      first.segment.payload_len = 1 + below(1460);
      CtStep second = first;
      second.segment.seq = first.segment.seq + first.segment.payload_len;
      second.segment.payload_len = 1 + below(1460);
      me.next_seq = second.segment.seq + second.segment.payload_len;
      conv.steps.push_back(second);
      conv.steps.push_back(first);
      me.sent.push_back(first);
      me.sent.push_back(second);
      continue;
    } else if (event < 70) {  // beyond the window, or far behind it
      g.seq = below(2) ? me.next_seq + (1u << 20) + below(1u << 24) : me.next_seq - (1u << 30);
      g.payload_len = below(1461);
      conv.steps.push_back(s);
      continue;
    } else if (event < 75) {  // acks data never sent
      g.ack = peer.next_seq + 1 + below(1u << 20);
    } else if (event < 78) {  // an ack far too old
      g.ack = peer.next_seq - (1u << 25) - below(1u << 20);
    } else if (event < 81) {  // RST, in the window or anywhere
      g.flags = below(2) ? (kRst | kAck) : kRst;
      if (below(3) == 0) g.seq = below(0xffffffffu);
      if (below(4) == 0) g.ack = 0;
    } else if (event < 89) {  // FIN
      g.flags = kFin | kAck;
      g.payload_len = below(3) == 0 ? below(100) : 0;
    } else if (event < 93) {  // what no stack sends here
      static constexpr uint8_t kOdd[] = {kSyn, kSyn | kAck, 0, kSyn | kFin, kFin, kRst | kSyn, kAck | 0x20};
      g.flags = kOdd[below(sizeof(kOdd))];
    } else if (event < 96) {  // a zero window
      g.window = 0;
    } else {  // not TCP at all
      s.tcp = false;
      conv.steps.push_back(s);
      continue;
    }
    me.next_seq = g.seq + g.payload_len + ((g.flags & kFin) ? 1 : 0);
    me.window = g.window;
    me.sent.push_back(s);
    conv.steps.push_back(s);
  }
  return conv;
}

RefConnection ToReference(const sim::CtContext& c) {
  RefConnection r;
  r.programmed = c.valid;
  r.tracking = c.enable;
  r.assured = c.live_connection;
  r.state = static_cast<int>(c.state);
  const sim::CtDirection* dirs[2] = {&c.original, &c.reply};
  for (int d = 0; d < 2; ++d) {
    RefSide& s = r.side[d];
    s.td_end = dirs[d]->sent_end;
    s.td_maxend = dirs[d]->reply_end;
    s.td_maxwin = dirs[d]->max_win;
    s.td_maxack = dirs[d]->max_ack;
    s.td_scale = dirs[d]->scale;
    s.fin_sent = dirs[d]->close_initiated;
    s.maxack_set = dirs[d]->last_ack_seen;
    s.unacked = dirs[d]->data_unacked;
    s.be_liberal = dirs[d]->liberal;
  }
  r.ack_window_shift = c.max_ack_window;
  r.retrans = c.retransmission_counter;
  r.retrans_limit = c.retransmission_limit;
  r.retrans_over = c.retransmission_limit_exceeded;
  r.last_dir = c.last_direction_original ? 0 : 1;
  r.last_index = c.last_index;
  r.last_win = c.last_window;
  r.last_seq = c.last_seq;
  r.last_ack = c.last_ack;
  r.last_end = c.last_end;
  return r;
}

sim::CtContext FromReference(const RefConnection& r, const sim::CtContext& kept) {
  sim::CtContext c = kept;  // the flags the model does not track
  c.valid = r.programmed;
  c.enable = r.tracking;
  c.live_connection = r.assured;
  c.state = static_cast<sim::CtState>(r.state);
  sim::CtDirection* dirs[2] = {&c.original, &c.reply};
  for (int d = 0; d < 2; ++d) {
    const RefSide& s = r.side[d];
    dirs[d]->sent_end = s.td_end;
    dirs[d]->reply_end = s.td_maxend;
    dirs[d]->max_win = s.td_maxwin;
    dirs[d]->max_ack = s.td_maxack;
    dirs[d]->scale = static_cast<uint8_t>(s.td_scale);
    dirs[d]->close_initiated = s.fin_sent;
    dirs[d]->last_ack_seen = s.maxack_set;
    dirs[d]->data_unacked = s.unacked;
    dirs[d]->liberal = s.be_liberal;
  }
  c.max_ack_window = static_cast<uint8_t>(r.ack_window_shift);
  c.retransmission_counter = static_cast<uint8_t>(r.retrans);
  c.retransmission_limit = static_cast<uint8_t>(r.retrans_limit);
  c.retransmission_limit_exceeded = r.retrans_over;
  c.last_direction_original = r.last_dir == 0;
  c.last_index = static_cast<uint8_t>(r.last_index);
  c.last_window = r.last_win;
  c.last_seq = r.last_seq;
  c.last_ack = r.last_ack;
  c.last_end = r.last_end;
  return c;
}

RefSegment ToReference(const CtStep& step) {
  RefSegment s;
  s.seq = step.segment.seq;
  s.ack = step.segment.ack;
  s.win = step.segment.window;
  s.flags = step.segment.flags;
  s.len = step.segment.payload_len;
  s.tcp = step.tcp;
  return s;
}

std::vector<uint8_t> TcpFrame(const CtStep& step, uint16_t client, uint16_t server) {
  sim::FrameSpec f;
  f.dmac = hw::MacAddress{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(2 - step.dir)}};
  f.smac = hw::MacAddress{{0x02, 0, 0, 0, 0, static_cast<uint8_t>(1 + step.dir)}};
  const hw::Ipv4Address a{0x0a000001}, b{0x0a000002};
  f.ipv4_src = step.dir == 0 ? a : b;
  f.ipv4_dst = step.dir == 0 ? b : a;
  f.protocol = step.tcp ? sim::kIpProtoTcp : sim::kIpProtoUdp;
  f.sport = step.dir == 0 ? client : server;
  f.dport = step.dir == 0 ? server : client;
  f.tcp_flags = step.segment.flags;
  f.seq = step.segment.seq;
  f.ack = step.segment.ack;
  f.tcp_window = step.segment.window;
  f.payload_len = step.segment.payload_len;
  return sim::BuildFrame(f);
}

}  // namespace drsim::testing
