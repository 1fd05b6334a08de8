#include "testpmd/encap.h"

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "hw/byte_order.h"

namespace drsim::testpmd {
namespace {

using absl::uint128;

// Writes the low `n` bytes of `value` big-endian at `offset`.
void PutBe(std::vector<uint8_t>& out, size_t offset, size_t n, uint128 value) {
  for (size_t i = 0; i < n; ++i) out[offset + i] = static_cast<uint8_t>(value >> (8 * (n - 1 - i)));
}

// The protocol number an item announces to the header before it (testpmd's cmd_set_raw), or nullopt when
// the item leaves the previous announcement in place.
std::optional<uint16_t> Announces(ItemType type) {
  switch (type) {
    case ItemType::kVlan:
      return 0x8100;
    case ItemType::kIpv4:
      return 0x0800;
    case ItemType::kIpv6:
      return 0x86dd;
    case ItemType::kUdp:
      return 17;
    case ItemType::kTcp:
      return 6;
    case ItemType::kGre:
    case ItemType::kNvgre:
      return 0x2f;
    case ItemType::kGreKey:
    case ItemType::kMpls:
      return 0;
    default:
      return std::nullopt;
  }
}

absl::StatusOr<std::vector<uint8_t>> Serialize(const Item& item) {
  bool has_spec = false;
  for (const ItemWord& w : item.words) has_spec |= w.spec_set;
  // testpmd copies the spec, or the default mask when the item has none.
  auto word = [&](int i) -> uint128 {
    return has_spec ? item.words[i].spec : item.def->storage[i].default_mask;
  };
  std::vector<uint8_t> h;
  switch (item.def->type) {
    case ItemType::kEth:
      h.resize(14);
      PutBe(h, 0, 6, word(0));
      PutBe(h, 6, 6, word(1));
      PutBe(h, 12, 2, word(2));
      break;
    case ItemType::kVlan:
      h.resize(4);
      PutBe(h, 0, 2, word(0));
      PutBe(h, 2, 2, word(1));
      break;
    case ItemType::kIpv4:
      h.resize(20);
      PutBe(h, 0, 1, word(0));
      PutBe(h, 1, 1, word(1));
      PutBe(h, 2, 2, word(2));
      PutBe(h, 4, 2, word(3));
      PutBe(h, 6, 2, word(4));
      PutBe(h, 8, 1, word(5));
      PutBe(h, 9, 1, word(6));
      PutBe(h, 12, 4, word(7));
      PutBe(h, 16, 4, word(8));
      break;
    case ItemType::kIpv6:
      h.resize(40);
      PutBe(h, 0, 4, word(0));
      PutBe(h, 4, 2, word(1));
      PutBe(h, 6, 1, word(2));
      PutBe(h, 7, 1, word(3));
      PutBe(h, 8, 16, word(4));
      PutBe(h, 24, 16, word(5));
      break;
    case ItemType::kUdp:
      h.resize(8);
      PutBe(h, 0, 2, word(0));
      PutBe(h, 2, 2, word(1));
      break;
    case ItemType::kTcp:
      h.resize(20);
      PutBe(h, 0, 2, word(0));
      PutBe(h, 2, 2, word(1));
      PutBe(h, 13, 1, word(2));
      break;
    case ItemType::kVxlan:
      h.resize(8);
      PutBe(h, 0, 4, word(0));
      PutBe(h, 4, 4, word(1));
      break;
    case ItemType::kVxlanGpe:
      h.resize(8);
      PutBe(h, 0, 1, word(0));
      PutBe(h, 1, 2, word(1));
      PutBe(h, 3, 1, word(2));
      PutBe(h, 4, 3, word(3));
      PutBe(h, 7, 1, word(4));
      break;
    case ItemType::kGre:
      h.resize(4);
      PutBe(h, 0, 2, word(0));
      PutBe(h, 2, 2, word(1));
      break;
    case ItemType::kGreKey:
      h.resize(4);
      PutBe(h, 0, 4, word(0));
      break;
    case ItemType::kNvgre:
      h.resize(8);
      PutBe(h, 0, 2, 0x2000);  // K bit
      PutBe(h, 2, 2, 0x6558);  // transparent Ethernet bridging
      PutBe(h, 4, 3, word(0));
      break;
    case ItemType::kMpls:
      h.resize(4);
      PutBe(h, 0, 3, word(0));
      PutBe(h, 3, 1, word(1));
      break;
    case ItemType::kGeneve:
      h.resize(8);
      PutBe(h, 0, 2, word(0));
      PutBe(h, 2, 2, word(1));
      PutBe(h, 4, 3, word(2));
      break;
    case ItemType::kGtp:
      h.resize(8);
      PutBe(h, 0, 1, word(0));
      PutBe(h, 1, 1, word(1));
      PutBe(h, 4, 4, word(2));
      break;
    default:
      return ErrorAt(item.pos, absl::StatusCode::kInvalidArgument,
                     absl::StrFormat("item '%s' is not a header testpmd can put in a raw encap/decap buffer",
                                     item.def->name));
  }
  return h;
}

}  // namespace

absl::StatusOr<std::vector<uint8_t>> RawHeaderBytes(absl::Span<const Item> items) {
  std::vector<std::vector<uint8_t>> headers(items.size());
  uint16_t proto = 0;  // what the item above announced; testpmd keeps it across items that announce nothing
  for (size_t i = items.size(); i-- > 0;) {
    const Item& item = items[i];
    if (item.def->type == ItemType::kVoid) continue;
    DRSIM_ASSIGN_OR_RETURN(std::vector<uint8_t> h, Serialize(item));
    uint8_t* b = h.data();
    switch (item.def->type) {
      case ItemType::kEth:
        if (proto != 0) hw::StoreBe16(b + 12, proto);
        break;
      case ItemType::kIpv4:
        if (b[0] == 0) b[0] = 0x45;
        if (proto != 0 && b[9] == 0) b[9] = static_cast<uint8_t>(proto);
        break;
      case ItemType::kIpv6:
        if (proto != 0 && b[6] == 0) b[6] = static_cast<uint8_t>(proto);
        b[0] = static_cast<uint8_t>(0x60 | (b[0] & 0x0f));
        break;
      case ItemType::kVxlan:
        if (b[0] == 0) b[0] = 0x08;
        break;
      case ItemType::kVxlanGpe:
        b[0] = 0x0c;
        break;
      default:
        break;
    }
    if (std::optional<uint16_t> announced = Announces(item.def->type)) proto = *announced;
    headers[i] = std::move(h);
  }
  std::vector<uint8_t> out;
  for (const std::vector<uint8_t>& h : headers) out.insert(out.end(), h.begin(), h.end());
  return out;
}

SetTunnelCmd DefaultVxlanConf() {
  SetTunnelCmd c;
  c.kind = SetTunnelCmd::Kind::kVxlan;
  c.udp_dst = 4789;
  c.ipv4_src.value = 0x7f000001;
  c.ipv4_dst.value = 0xffffffff;
  c.ipv6_src.bytes[15] = 1;
  c.ipv6_dst.bytes[14] = 0x11;
  c.ipv6_dst.bytes[15] = 0x11;
  c.ip_ttl = 255;
  c.eth_dst = hw::MacAddress::AllOnes();
  return c;
}

SetTunnelCmd DefaultNvgreConf() {
  SetTunnelCmd c = DefaultVxlanConf();
  c.kind = SetTunnelCmd::Kind::kNvgre;
  c.udp_dst = 0;
  c.ip_ttl = 0;
  return c;
}

std::vector<uint8_t> TunnelEncapHeader(const SetTunnelCmd& conf) {
  const bool vxlan = conf.kind == SetTunnelCmd::Kind::kVxlan;
  const uint16_t l3_type = conf.ipv6 ? 0x86dd : 0x0800;
  std::vector<uint8_t> h(14);
  std::copy(conf.eth_dst.bytes.begin(), conf.eth_dst.bytes.end(), h.begin());
  std::copy(conf.eth_src.bytes.begin(), conf.eth_src.bytes.end(), h.begin() + 6);
  hw::StoreBe16(&h[12], conf.with_vlan ? 0x8100 : l3_type);
  if (conf.with_vlan) {
    h.resize(h.size() + 4);
    hw::StoreBe16(&h[14], conf.vlan_tci);
    hw::StoreBe16(&h[16], l3_type);
  }
  const uint8_t protocol = vxlan ? 17 : 47;
  const bool tos_ttl = vxlan && conf.tos_ttl;
  const size_t l3 = h.size();
  if (conf.ipv6) {
    h.resize(l3 + 40);
    hw::StoreBe32(&h[l3], 0x60000000u | (tos_ttl ? uint32_t{conf.ip_tos} << 20 : 0));
    h[l3 + 6] = protocol;
    h[l3 + 7] = tos_ttl && conf.ip_ttl != 0 ? conf.ip_ttl : 255;
    std::copy(conf.ipv6_src.bytes.begin(), conf.ipv6_src.bytes.end(), h.begin() + l3 + 8);
    std::copy(conf.ipv6_dst.bytes.begin(), conf.ipv6_dst.bytes.end(), h.begin() + l3 + 24);
  } else {
    h.resize(l3 + 20);
    h[l3] = 0x45;
    h[l3 + 1] = tos_ttl ? conf.ip_tos : 0;
    h[l3 + 8] = tos_ttl && conf.ip_ttl != 0 ? conf.ip_ttl : 64;
    h[l3 + 9] = protocol;
    hw::StoreBe32(&h[l3 + 12], conf.ipv4_src.value);
    hw::StoreBe32(&h[l3 + 16], conf.ipv4_dst.value);
  }
  const size_t t = h.size();
  if (vxlan) {
    h.resize(t + 16);
    hw::StoreBe16(&h[t], conf.udp_src);
    hw::StoreBe16(&h[t + 2], conf.udp_dst != 0 ? conf.udp_dst : 4789);
    h[t + 8] = 0x08;  // I flag
    hw::StoreBe32(&h[t + 12], conf.vni << 8);
  } else {
    h.resize(t + 8);
    hw::StoreBe16(&h[t], 0x2000);  // K bit
    hw::StoreBe16(&h[t + 2], 0x6558);
    hw::StoreBe32(&h[t + 4], conf.vni << 8);
  }
  return h;
}

}  // namespace drsim::testpmd
