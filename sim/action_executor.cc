#include "sim/action_executor.h"

#include <algorithm>
#include <new>

#include "hw/byte_order.h"
#include "sim/checksum.h"
#include "sim/conntrack.h"

namespace drsim::sim {
namespace {

using hw::ModifyField;

constexpr uint8_t kTcp = 6;
constexpr uint8_t kUdp = 17;

bool IsVlanTpid(uint16_t tpid) { return tpid == 0x8100 || tpid == 0x88a8; }

// Where a modify-header field sits in the frame: a big-endian 32-bit window, a right shift, a width.
struct FieldLoc {
  bool present = false;
  size_t window = 0;
  int shift = 0;
  uint8_t width = 0;
};

// The parsed facts the field locations depend on.
struct Headers {
  const uint8_t* frame;
  size_t len;
  size_t l3;  // 0 = none
  size_t l4;  // 0 = none
  uint32_t ip_version;
  uint32_t ip_protocol;
};

FieldLoc FieldInWindow(const Headers& h, size_t window, int shift, uint8_t width) {
  FieldLoc loc;
  loc.present = window + 4 <= h.len;
  loc.window = window;
  loc.shift = shift;
  loc.width = width;
  return loc;
}

FieldLoc Locate(ModifyField f, const Headers& h) {
  const bool v4 = h.l3 && h.ip_version == 4, v6 = h.l3 && h.ip_version == 6;
  const bool tcp = h.l4 && h.ip_protocol == kTcp, udp = h.l4 && h.ip_protocol == kUdp;
  const int f_id = static_cast<int>(f);
  switch (f) {
    case ModifyField::kDmac47_16:
      return FieldInWindow(h, 0, 0, 32);
    case ModifyField::kDmac15_0:
      return FieldInWindow(h, 4, 16, 16);
    case ModifyField::kSmac47_16:
      return FieldInWindow(h, 6, 0, 32);
    case ModifyField::kSmac15_0:
      return FieldInWindow(h, 10, 16, 16);
    case ModifyField::kEthertype: {
      // The ethertype after the VLAN tags (at most two, as the parser reads them).
      size_t at = 12;
      for (int tags = 0; tags < 2 && at + 2 <= h.len && IsVlanTpid(hw::LoadBe16(h.frame + at)); ++tags)
        at += 4;
      return FieldInWindow(h, at, 16, 16);
    }
    case ModifyField::kFirstVid:
      if (h.len < 18 || !IsVlanTpid(hw::LoadBe16(h.frame + 12))) return {};
      return FieldInWindow(h, 14, 16, 16);
    case ModifyField::kIpDscp:
      if (v4) return FieldInWindow(h, h.l3, 18, 6);
      if (v6) return FieldInWindow(h, h.l3, 22, 6);
      return {};
    case ModifyField::kIpEcn:
      if (v4) return FieldInWindow(h, h.l3, 16, 2);
      if (v6) return FieldInWindow(h, h.l3, 20, 2);
      return {};
    case ModifyField::kIpTtl:
      return v4 ? FieldInWindow(h, h.l3 + 8, 24, 8) : FieldLoc{};
    case ModifyField::kIpv6Hoplimit:
      return v6 ? FieldInWindow(h, h.l3 + 4, 0, 8) : FieldLoc{};
    case ModifyField::kSipv4:
      return v4 ? FieldInWindow(h, h.l3 + 12, 0, 32) : FieldLoc{};
    case ModifyField::kDipv4:
      return v4 ? FieldInWindow(h, h.l3 + 16, 0, 32) : FieldLoc{};
    case ModifyField::kSipv6_127_96:
    case ModifyField::kSipv6_95_64:
    case ModifyField::kSipv6_63_32:
    case ModifyField::kSipv6_31_0:
      return v6 ? FieldInWindow(h, h.l3 + 8 + 4 * (f_id - static_cast<int>(ModifyField::kSipv6_127_96)), 0,
                                32)
                : FieldLoc{};
    case ModifyField::kDipv6_127_96:
    case ModifyField::kDipv6_95_64:
    case ModifyField::kDipv6_63_32:
    case ModifyField::kDipv6_31_0:
      return v6 ? FieldInWindow(h, h.l3 + 24 + 4 * (f_id - static_cast<int>(ModifyField::kDipv6_127_96)), 0,
                                32)
                : FieldLoc{};
    case ModifyField::kTcpSport:
      return tcp ? FieldInWindow(h, h.l4, 16, 16) : FieldLoc{};
    case ModifyField::kTcpDport:
      return tcp ? FieldInWindow(h, h.l4, 0, 16) : FieldLoc{};
    case ModifyField::kTcpSeqNum:
      return tcp ? FieldInWindow(h, h.l4 + 4, 0, 32) : FieldLoc{};
    case ModifyField::kTcpAckNum:
      return tcp ? FieldInWindow(h, h.l4 + 8, 0, 32) : FieldLoc{};
    case ModifyField::kTcpFlags:
      return tcp ? FieldInWindow(h, h.l4 + 12, 16, 9) : FieldLoc{};
    case ModifyField::kUdpSport:
      return udp ? FieldInWindow(h, h.l4, 16, 16) : FieldLoc{};
    case ModifyField::kUdpDport:
      return udp ? FieldInWindow(h, h.l4, 0, 16) : FieldLoc{};
    default:
      return {};
  }
}

uint32_t* Register(ModifyField f, PacketMeta& meta) {
  switch (f) {
    case ModifyField::kMetadataRegA:
      return &meta.reg_a;
    case ModifyField::kMetadataRegB:
      return &meta.reg_b;
    case ModifyField::kMetadataRegC0:
    case ModifyField::kMetadataRegC1:
    case ModifyField::kMetadataRegC2:
    case ModifyField::kMetadataRegC3:
    case ModifyField::kMetadataRegC4:
    case ModifyField::kMetadataRegC5:
      return &meta.reg_c[static_cast<int>(f) - static_cast<int>(ModifyField::kMetadataRegC0)];
    default:
      return nullptr;
  }
}

constexpr uint32_t Mask(int bits) { return bits >= 32 ? 0xffffffffu : (1u << bits) - 1; }

// A field to read or write: a register, or bits of the frame. `writable` is the frame `h` describes, to
// write to; null when the list writes registers only (then no frame field is ever set).
class FieldRef {
 public:
  FieldRef(ModifyField f, uint8_t* writable, const Headers& h, PacketMeta& meta)
      : frame_(h.frame),
        writable_(writable),
        reg_(Register(f, meta)),
        loc_(reg_ ? FieldLoc{} : Locate(f, h)) {}
  bool present() const { return reg_ != nullptr || loc_.present; }
  uint32_t Get() const {
    if (reg_) return *reg_;
    return (hw::LoadBe32(frame_ + loc_.window) >> loc_.shift) & Mask(loc_.width);
  }
  void Set(uint32_t value) {
    if (reg_) {
      *reg_ = value;
      return;
    }
    const uint32_t m = Mask(loc_.width) << loc_.shift;
    const uint32_t w = hw::LoadBe32(frame_ + loc_.window);
    hw::StoreBe32(writable_ + loc_.window, (w & ~m) | ((value << loc_.shift) & m));
  }

 private:
  const uint8_t* frame_;
  uint8_t* writable_;
  uint32_t* reg_;
  FieldLoc loc_;
};

// Writes `len` bits of `bits` at bit `offset` of `field`.
uint32_t Deposit(uint32_t field, uint8_t offset, uint8_t len, uint32_t bits) {
  const uint32_t m = Mask(len) << offset;
  return (field & ~m) | ((bits << offset) & m);
}

// Sums of the bytes a TCP/UDP checksum covers that modify-header can change: the pseudo-header
// addresses and the L4 header without its checksum field.
uint32_t CoveredSum(const Headers& h) {
  uint32_t sum = 0;
  if (h.ip_version == 4) sum = ChecksumAdd(h.frame + h.l3 + 12, 8);
  if (h.ip_version == 6) sum = ChecksumAdd(h.frame + h.l3 + 8, 32);
  if (h.ip_protocol == kTcp) {
    sum = ChecksumAdd(h.frame + h.l4, 16, sum);
    sum = ChecksumAdd(h.frame + h.l4 + 18, 2, sum);
  } else {
    sum = ChecksumAdd(h.frame + h.l4, 6, sum);
  }
  return sum;
}

void FixIpv4HeaderChecksum(uint8_t* ip) {
  const size_t ihl = (ip[0] & 0xf) * 4u;
  hw::StoreBe16(ip + 10, 0);
  hw::StoreBe16(ip + 10, ChecksumFinish(ChecksumAdd(ip, ihl)));
}

}  // namespace

void ActionExecutor::Parse(const PacketBuffer& packet, const PacketMeta& meta, bool whole) {
  // Built in place: assigning the returned struct would reload wide what the parser just stored narrow.
  if (whole) {
    new (&own_layers_) PacketLayers(ParsePacket(packet.data(), packet.size(), meta.source_port, &own_hv_));
  } else {
    new (&own_layers_)
        PacketLayers(ParseOuterHeaders(packet.data(), packet.size(), meta.source_port, &own_hv_));
  }
  known_ = nullptr;
  parsed_ = whole ? Parsed::kWhole : Parsed::kOuter;
}

bool ActionExecutor::Modify(const hw::ModifyProgram& program, PacketBuffer& packet, PacketMeta& meta) {
  EnsureParsed(packet, meta);
  // A list that writes only registers reads the frame and never writes it: a borrowed frame stays
  // borrowed. Otherwise it is copied in here, before `h` points into it.
  uint8_t* frame = program.writes_packet ? packet.mutable_data() : nullptr;
  const Headers h{frame != nullptr ? frame : packet.data(),
                  packet.size(),
                  layers().l3,
                  layers().l4,
                  hw::GetField(hv().bytes, hw::Field::kOuterIpVersion),
                  hw::GetField(hv().bytes, hw::Field::kOuterIpProtocol)};
  // The checksums the list rewrites were decided when it was compiled; a frame without that header has
  // none of them to fix.
  const bool ipv4_checksum = (program.checksums & hw::kModifyIpv4HeaderChecksum) && h.l3 && h.ip_version == 4;
  const bool l4_checksum = (program.checksums & hw::kModifyL4Checksum) && h.l4 &&
                           (h.ip_protocol == kTcp || h.ip_protocol == kUdp) &&
                           h.l4 + (h.ip_protocol == kTcp ? 20u : 8u) <= h.len;
  const uint32_t before = l4_checksum ? CoveredSum(h) : 0;
  for (const hw::ModifyAction& a : program.actions) {
    FieldRef dst(
        static_cast<ModifyField>(a.op == static_cast<uint8_t>(hw::ModifyOp::kCopy) ? a.dst_field : a.field),
        frame, h, meta);
    if (!dst.present()) continue;
    switch (static_cast<hw::ModifyOp>(a.op)) {
      case hw::ModifyOp::kSet:
        dst.Set(Deposit(dst.Get(), a.offset, a.length, a.data));
        break;
      case hw::ModifyOp::kAdd:
        dst.Set(dst.Get() + a.data);  // modulo the field's width
        break;
      case hw::ModifyOp::kCopy: {
        FieldRef src(static_cast<ModifyField>(a.field), frame, h, meta);
        if (!src.present()) continue;
        const uint32_t bits = (src.Get() >> a.offset) & Mask(a.length);
        dst.Set(Deposit(dst.Get(), a.dst_offset, a.length, bits));
        break;
      }
    }
  }
  if (ipv4_checksum) FixIpv4HeaderChecksum(frame + h.l3);
  if (l4_checksum) {
    uint8_t* field = frame + h.l4 + (h.ip_protocol == kTcp ? 16 : 6);
    const uint16_t old = hw::LoadBe16(field);
    if (!(h.ip_protocol == kUdp && h.ip_version == 4 && old == 0)) {
      uint16_t updated = ChecksumUpdate(old, before, CoveredSum(h));
      if (h.ip_protocol == kUdp && updated == 0) updated = 0xffff;
      hw::StoreBe16(field, updated);
    }
  }
  if (program.writes_packet) parsed_ = Parsed::kNo;
  return program.writes_packet;
}

void ActionExecutor::PushVlan(uint32_t vlan_header, PacketBuffer& packet) {
  if (packet.size() < 12) return;
  uint8_t tag[4];
  hw::StoreBe32(tag, vlan_header);
  packet.Insert(12, tag, 4);
  parsed_ = Parsed::kNo;
}

bool ActionExecutor::PopVlan(PacketBuffer& packet) {
  if (packet.size() < 18 || !IsVlanTpid(hw::LoadBe16(packet.data() + 12))) return false;
  packet.Erase(12, 4);
  parsed_ = Parsed::kNo;
  return true;
}

bool ActionExecutor::Decap(const std::vector<uint8_t>* l2_header, PacketBuffer& packet,
                           const PacketMeta& meta) {
  EnsureParsed(packet, meta, /*whole=*/true);
  // L2 decap keeps the inner Ethernet frame; L3 decap keeps the inner IP packet and gives it `l2_header`.
  const size_t keep_from = l2_header != nullptr ? layers().inner_l3 : layers().inner_l2;
  if (keep_from == 0) return false;  // no such inner header: no tunnel to remove
  packet.Erase(0, keep_from);
  if (l2_header != nullptr) packet.Insert(0, l2_header->data(), l2_header->size());
  parsed_ = Parsed::kNo;
  return true;
}

void ActionExecutor::Encap(const std::vector<uint8_t>& headers, bool l3, PacketBuffer& packet,
                           const PacketMeta& meta) {
  if (l3) {
    // L2 to L3 tunnel: the inner packet keeps only its IP header onwards.
    EnsureParsed(packet, meta);
    if (layers().l3 == 0) return;  // no IP header to anchor on: nothing to encapsulate
    packet.Erase(0, layers().l3);
  }
  packet.Insert(0, headers.data(), headers.size());
  parsed_ = Parsed::kNo;
  FixOuterLengths(packet, meta);
}

void ActionExecutor::FixOuterLengths(PacketBuffer& packet, const PacketMeta& meta) {
  EnsureParsed(packet, meta);
  const size_t len = packet.size();
  const size_t l3 = layers().l3;
  if (l3 == 0) return;
  const uint32_t ip_version = hw::GetField(hv().bytes, hw::Field::kOuterIpVersion);
  uint8_t* ip = packet.mutable_data() + l3;
  if (ip_version == 4) {
    hw::StoreBe16(ip + 2, static_cast<uint16_t>(len - l3));
    FixIpv4HeaderChecksum(ip);
  } else {
    hw::StoreBe16(ip + 4, static_cast<uint16_t>(len - l3 - 40));
  }
  // Parse again: the parser bounds what follows the IP header by its (now right) length.
  parsed_ = Parsed::kNo;
  EnsureParsed(packet, meta);
  if (layers().l4 == 0 || hw::GetField(hv().bytes, hw::Field::kOuterIpProtocol) != kUdp) return;
  uint8_t* udp = packet.mutable_data() + layers().l4;
  const size_t udp_len = len - layers().l4;
  hw::StoreBe16(udp + 4, static_cast<uint16_t>(udp_len));
  if (hw::LoadBe16(udp + 6) == 0 && ip_version == 4) return;  // "no checksum" stays so
  hw::StoreBe16(udp + 6, 0);
  uint32_t sum = ip_version == 4 ? ChecksumAdd(ip + 12, 8) : ChecksumAdd(ip + 8, 32);
  sum += kUdp + static_cast<uint32_t>(udp_len);
  uint16_t checksum = ChecksumFinish(ChecksumAdd(udp, udp_len, sum));
  hw::StoreBe16(udp + 6, checksum == 0 ? 0xffff : checksum);
  parsed_ = Parsed::kNo;
}

ActionExecutor::Change ActionExecutor::Run(absl::Span<const hw::Op> ops, PacketBuffer& packet,
                                           PacketMeta& meta, uint64_t now_ns, const KnownParse& known,
                                           uint32_t rule_tag) {
  known_ = known.hv == nullptr ? nullptr : &known;
  parsed_ = known.hv == nullptr ? Parsed::kNo : known.whole ? Parsed::kWhole : Parsed::kOuter;
  Change change = Change::kNothing;
  auto changed = [&change](Change c) { change = std::max(change, c); };
  for (const hw::Op& op : ops) {
    switch (op.code) {
      case hw::OpCode::kTag:
        meta.has_flow_tag = true;
        meta.flow_tag = op.arg;
        break;
      case hw::OpCode::kTagOfRule:
        meta.has_flow_tag = true;
        meta.flow_tag = rule_tag;
        break;
      case hw::OpCode::kCounter:
        counters_->Add(op.arg, packet.size(), now_ns);
        break;
      case hw::OpCode::kModifyHeader:
        changed(Modify(*op.modify, packet, meta) ? Change::kHeaders : Change::kMetadata);
        break;
      case hw::OpCode::kPushVlan:
        PushVlan(op.arg, packet);
        changed(Change::kHeaders);
        break;
      case hw::OpCode::kPopVlan:
        if (PopVlan(packet)) changed(Change::kHeaders);
        break;
      case hw::OpCode::kEncapL2:
      case hw::OpCode::kEncapL3:
        Encap(*op.bytes, op.code == hw::OpCode::kEncapL3, packet, meta);
        changed(Change::kHeaders);
        break;
      case hw::OpCode::kDecapL2:
      case hw::OpCode::kDecapL3:
        if (!Decap(op.code == hw::OpCode::kDecapL3 ? op.bytes : nullptr, packet, meta))
          return Change::kNoTunnel;
        changed(Change::kHeaders);
        break;
      case hw::OpCode::kAsoFlowMeter: {
        EnsureParsed(packet, meta);
        const size_t ip_bytes = layers().l3 ? packet.size() - layers().l3 : packet.size();
        const MeterColor c =
            aso_->MarkFlowMeter(op.arg, static_cast<MeterColor>(op.initial_color), now_ns,
                                static_cast<uint32_t>(packet.size()), static_cast<uint32_t>(ip_bytes));
        meta.reg_c[op.reg] = (meta.reg_c[op.reg] & ~0xffu) | static_cast<uint32_t>(c);
        changed(Change::kMetadata);  // a register the next lookup may match
        break;
      }
      case hw::OpCode::kAsoFirstHit:
        meta.reg_c[op.reg] = aso_->FirstHit(op.arg, op.set, now_ns) ? 1 : 0;
        changed(Change::kMetadata);
        break;
      case hw::OpCode::kAsoConnTrack: {
        EnsureParsed(packet, meta);
        const uint32_t state = aso_->TrackConnTrack(
            op.arg, op.set, absl::MakeConstSpan(packet.data(), packet.size()), layers().l3, layers().l4,
            static_cast<uint8_t>(hw::GetField(hv().bytes, hw::Field::kOuterIpProtocol)));
        meta.reg_c[op.reg] = (meta.reg_c[op.reg] & ~0xffu) | CtRegisterByte(state);
        changed(Change::kMetadata);
        break;
      }
    }
  }
  return change;
}

}  // namespace drsim::sim
