#include "hw/match_params.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"

namespace drsim::hw {

MatchParams::MatchParams() : storage_(new uint64_t[kStorageWords]()) {
  header()->match_sz = kMatchParamBytes;
}

MatchParams MatchParams::FromParameters(const mlx5dv_flow_match_parameters& param) {
  MatchParams p;
  std::memcpy(p.bytes(), param.match_buf, std::min(param.match_sz, kMatchParamBytes));
  p.set_match_sz(param.match_sz);
  return p;
}

MatchParams::MatchParams(const MatchParams& other) : storage_(new uint64_t[kStorageWords]) {
  std::memcpy(storage_.get(), other.storage_.get(), kStorageWords * sizeof(uint64_t));
}

MatchParams& MatchParams::operator=(const MatchParams& other) {
  if (this != &other) {
    if (!storage_) storage_.reset(new uint64_t[kStorageWords]);
    std::memcpy(storage_.get(), other.storage_.get(), kStorageWords * sizeof(uint64_t));
  }
  return *this;
}

uint8_t MatchParams::criteria() const {
  uint8_t criteria = 0;
  for (int s = 0; s < kNumSections; ++s) {
    const uint8_t* sec = bytes() + s * kSectionBytes;
    if (std::any_of(sec, sec + kSectionBytes, [](uint8_t b) { return b != 0; })) {
      criteria |= CriteriaBit(static_cast<Section>(s));
    }
  }
  return criteria;
}

Field HeaderField(Headers h, Field outer_field) {
  if (h == Headers::kOuter) return outer_field;
  return static_cast<Field>(static_cast<int>(outer_field) - static_cast<int>(Field::kOuterSmac47_16) +
                            static_cast<int>(Field::kInnerSmac47_16));
}

void MatchBuilder::Fail(absl::Status status) {
  if (status_.ok()) status_ = std::move(status);
}

MatchBuilder& MatchBuilder::Set(Field f, uint32_t value) {
  const FieldInfo& fi = Info(f);
  if (value > fi.max_value()) {
    Fail(absl::InvalidArgumentError(
        absl::StrFormat("value 0x%x does not fit %s (%d bits)", value, fi.name, fi.width)));
    return *this;
  }
  SetField(params_.bytes(), f, value);
  return *this;
}

MatchBuilder& MatchBuilder::SetAllOnes(Field f) { return Set(f, Info(f).max_value()); }

MatchBuilder& MatchBuilder::SetByName(absl::string_view name, uint32_t value) {
  std::optional<Field> f = FieldByName(name);
  if (!f) {
    Fail(absl::InvalidArgumentError(absl::StrFormat("no match field named \"%s\"", name)));
    return *this;
  }
  return Set(*f, value);
}

MatchBuilder& MatchBuilder::Smac(Headers h, const MacAddress& mac) {
  const uint8_t* b = mac.bytes.data();
  Set(HeaderField(h, Field::kOuterSmac47_16), LoadBe32(b));
  return Set(HeaderField(h, Field::kOuterSmac15_0), LoadBe16(b + 4));
}
MatchBuilder& MatchBuilder::Dmac(Headers h, const MacAddress& mac) {
  const uint8_t* b = mac.bytes.data();
  Set(HeaderField(h, Field::kOuterDmac47_16), LoadBe32(b));
  return Set(HeaderField(h, Field::kOuterDmac15_0), LoadBe16(b + 4));
}
MatchBuilder& MatchBuilder::Ethertype(Headers h, uint16_t ethertype) {
  return Set(HeaderField(h, Field::kOuterEthertype), ethertype);
}
MatchBuilder& MatchBuilder::CvlanTag(Headers h, uint32_t present) {
  return Set(HeaderField(h, Field::kOuterCvlanTag), present);
}
MatchBuilder& MatchBuilder::SvlanTag(Headers h, uint32_t present) {
  return Set(HeaderField(h, Field::kOuterSvlanTag), present);
}
MatchBuilder& MatchBuilder::FirstVid(Headers h, uint32_t vid) {
  return Set(HeaderField(h, Field::kOuterFirstVid), vid);
}
MatchBuilder& MatchBuilder::FirstPrio(Headers h, uint32_t prio) {
  return Set(HeaderField(h, Field::kOuterFirstPrio), prio);
}
MatchBuilder& MatchBuilder::FirstCfi(Headers h, uint32_t cfi) {
  return Set(HeaderField(h, Field::kOuterFirstCfi), cfi);
}
MatchBuilder& MatchBuilder::IpVersion(Headers h, uint32_t version) {
  return Set(HeaderField(h, Field::kOuterIpVersion), version);
}
MatchBuilder& MatchBuilder::IpProtocol(Headers h, uint32_t protocol) {
  return Set(HeaderField(h, Field::kOuterIpProtocol), protocol);
}
MatchBuilder& MatchBuilder::Dscp(Headers h, uint32_t dscp) {
  return Set(HeaderField(h, Field::kOuterIpDscp), dscp);
}
MatchBuilder& MatchBuilder::Ecn(Headers h, uint32_t ecn) {
  return Set(HeaderField(h, Field::kOuterIpEcn), ecn);
}
MatchBuilder& MatchBuilder::TtlHoplimit(Headers h, uint32_t ttl) {
  return Set(HeaderField(h, Field::kOuterIpTtlHoplimit), ttl);
}
MatchBuilder& MatchBuilder::Frag(Headers h, uint32_t frag) {
  return Set(HeaderField(h, Field::kOuterFrag), frag);
}
MatchBuilder& MatchBuilder::Ihl(Headers h, uint32_t ihl) {
  return Set(HeaderField(h, Field::kOuterIpv4Ihl), ihl);
}
MatchBuilder& MatchBuilder::Ipv4Src(Headers h, Ipv4Address addr) {
  return Set(HeaderField(h, Field::kOuterSrcIp31_0), addr.value);
}
MatchBuilder& MatchBuilder::Ipv4Dst(Headers h, Ipv4Address addr) {
  return Set(HeaderField(h, Field::kOuterDstIp31_0), addr.value);
}
MatchBuilder& MatchBuilder::Ipv6Src(Headers h, const Ipv6Address& addr) {
  Set(HeaderField(h, Field::kOuterSrcIp127_96), addr.word(0));
  Set(HeaderField(h, Field::kOuterSrcIp95_64), addr.word(1));
  Set(HeaderField(h, Field::kOuterSrcIp63_32), addr.word(2));
  return Set(HeaderField(h, Field::kOuterSrcIp31_0), addr.word(3));
}
MatchBuilder& MatchBuilder::Ipv6Dst(Headers h, const Ipv6Address& addr) {
  Set(HeaderField(h, Field::kOuterDstIp127_96), addr.word(0));
  Set(HeaderField(h, Field::kOuterDstIp95_64), addr.word(1));
  Set(HeaderField(h, Field::kOuterDstIp63_32), addr.word(2));
  return Set(HeaderField(h, Field::kOuterDstIp31_0), addr.word(3));
}
MatchBuilder& MatchBuilder::Ipv6FlowLabel(Headers h, uint32_t label) {
  return Set(h == kOuter ? Field::kOuterIpv6FlowLabel : Field::kInnerIpv6FlowLabel, label);
}
MatchBuilder& MatchBuilder::TcpSport(Headers h, uint32_t port) {
  return Set(HeaderField(h, Field::kOuterTcpSport), port);
}
MatchBuilder& MatchBuilder::TcpDport(Headers h, uint32_t port) {
  return Set(HeaderField(h, Field::kOuterTcpDport), port);
}
MatchBuilder& MatchBuilder::UdpSport(Headers h, uint32_t port) {
  return Set(HeaderField(h, Field::kOuterUdpSport), port);
}
MatchBuilder& MatchBuilder::UdpDport(Headers h, uint32_t port) {
  return Set(HeaderField(h, Field::kOuterUdpDport), port);
}
MatchBuilder& MatchBuilder::TcpFlags(Headers h, uint32_t flags) {
  return Set(HeaderField(h, Field::kOuterTcpFlags), flags);
}
MatchBuilder& MatchBuilder::SourcePort(uint32_t vport) { return Set(Field::kSourcePort, vport); }
MatchBuilder& MatchBuilder::SourceSqn(uint32_t sqn) { return Set(Field::kSourceSqn, sqn); }
MatchBuilder& MatchBuilder::SecondVid(Headers h, uint32_t vid) {
  return Set(h == kOuter ? Field::kOuterSecondVid : Field::kInnerSecondVid, vid);
}
MatchBuilder& MatchBuilder::VxlanVni(uint32_t vni) { return Set(Field::kVxlanVni, vni); }
MatchBuilder& MatchBuilder::GeneveVni(uint32_t vni) { return Set(Field::kGeneveVni, vni); }
MatchBuilder& MatchBuilder::GreKey(uint32_t key) {
  Set(Field::kGreKeyH, key >> 8);
  return Set(Field::kGreKeyL, key & 0xff);
}
MatchBuilder& MatchBuilder::GreProtocol(uint32_t protocol) { return Set(Field::kGreProtocol, protocol); }
MatchBuilder& MatchBuilder::RegA(uint32_t value) { return Set(Field::kMetadataRegA, value); }
MatchBuilder& MatchBuilder::RegC(int index, uint32_t value) {
  if (index < 0 || index > 7) {
    Fail(absl::InvalidArgumentError(
        absl::StrFormat("misc2.metadata_reg_c_%d: register index must be 0..7", index)));
    return *this;
  }
  // reg_c_7 comes first in the layout, reg_c_0 last.
  return Set(static_cast<Field>(static_cast<int>(Field::kMetadataRegC0) - index), value);
}
MatchBuilder& MatchBuilder::IcmpType(uint32_t type) { return Set(Field::kIcmpType, type); }
MatchBuilder& MatchBuilder::IcmpCode(uint32_t code) { return Set(Field::kIcmpCode, code); }
MatchBuilder& MatchBuilder::Icmpv6Type(uint32_t type) { return Set(Field::kIcmpv6Type, type); }
MatchBuilder& MatchBuilder::Icmpv6Code(uint32_t code) { return Set(Field::kIcmpv6Code, code); }

absl::StatusOr<MatchParams> MatchBuilder::Build() const {
  if (!status_.ok()) return status_;
  return params_;
}

}  // namespace drsim::hw
