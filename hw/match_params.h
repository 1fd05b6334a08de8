// MatchParams owns one `struct mlx5dv_flow_match_parameters` (rdma-core's own type) with the full 448-byte
// buffer, ready to pass as a matcher mask or a rule value. MatchBuilder fills one by field name or with
// typed setters (MAC, IPv4/IPv6, ports, VLAN, VNI, GRE key, registers, ...) and reports the first bad
// input (a value wider than its field, an unknown name) from Build(), naming the field.
//
//   hw::MatchBuilder mask;
//   mask.IpVersion(kOuter, 4).Ipv4Dst(kOuter,
//   hw::Ipv4Address::PrefixMask(32)).SetAllOnes(Field::kOuterTcpDport); absl::StatusOr<hw::MatchParams> m =
//   mask.Build();   // m->criteria() == kCriteriaOuter
//
// Both classes are plain values: copyable, not thread-safe for concurrent mutation.
#ifndef DRSIM_HW_MATCH_PARAMS_H_
#define DRSIM_HW_MATCH_PARAMS_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hw/match_layout.h"
#include "hw/net_addr.h"

namespace drsim::hw {

class MatchParams {
 public:
  // All-zero buffer with match_sz = 448.
  MatchParams();
  // Copies `param->match_sz` bytes (at most 448; the rest stays zero) and keeps match_sz as given, so
  // oversized or odd sizes still reach the validators.
  static MatchParams FromParameters(const mlx5dv_flow_match_parameters& param);

  MatchParams(const MatchParams& other);
  MatchParams& operator=(const MatchParams& other);
  MatchParams(MatchParams&&) noexcept = default;
  MatchParams& operator=(MatchParams&&) noexcept = default;

  mlx5dv_flow_match_parameters* get() { return header(); }
  const mlx5dv_flow_match_parameters* get() const { return header(); }
  uint8_t* bytes() { return reinterpret_cast<uint8_t*>(header()->match_buf); }
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(header()->match_buf); }
  size_t match_sz() const { return header()->match_sz; }
  void set_match_sz(size_t size) { header()->match_sz = size; }

  // match_criteria_enable bits of every section holding a nonzero byte.
  uint8_t criteria() const;

 private:
  mlx5dv_flow_match_parameters* header() const {
    return reinterpret_cast<mlx5dv_flow_match_parameters*>(storage_.get());
  }
  static constexpr size_t kStorageWords =
      (sizeof(mlx5dv_flow_match_parameters) + kMatchParamBytes) / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> storage_;
};

// Which header stack a per-header setter writes: outer_headers or inner_headers.
enum class Headers : uint8_t { kOuter, kInner };
inline constexpr Headers kOuter = Headers::kOuter;
inline constexpr Headers kInner = Headers::kInner;

// The inner-header twin of an outer_headers field (identity for kOuter). `outer_field` must be an outer.*
// field.
Field HeaderField(Headers h, Field outer_field);

class MatchBuilder {
 public:
  // Generic access. A value wider than the field is an error reported by Build().
  MatchBuilder& Set(Field f, uint32_t value);
  MatchBuilder& SetAllOnes(Field f);
  MatchBuilder& SetByName(absl::string_view name, uint32_t value);

  // L2.
  MatchBuilder& Smac(Headers h, const MacAddress& mac);
  MatchBuilder& Dmac(Headers h, const MacAddress& mac);
  MatchBuilder& Ethertype(Headers h, uint16_t ethertype);
  MatchBuilder& CvlanTag(Headers h, uint32_t present);
  MatchBuilder& SvlanTag(Headers h, uint32_t present);
  MatchBuilder& FirstVid(Headers h, uint32_t vid);
  MatchBuilder& FirstPrio(Headers h, uint32_t prio);
  MatchBuilder& FirstCfi(Headers h, uint32_t cfi);

  // L3. Matching addresses, protocol, ports, ... needs ip_version (4 or 6) in the mask, as in rdma-core.
  MatchBuilder& IpVersion(Headers h, uint32_t version);
  MatchBuilder& IpProtocol(Headers h, uint32_t protocol);
  MatchBuilder& Dscp(Headers h, uint32_t dscp);
  MatchBuilder& Ecn(Headers h, uint32_t ecn);
  MatchBuilder& TtlHoplimit(Headers h, uint32_t ttl);
  MatchBuilder& Frag(Headers h, uint32_t frag);
  MatchBuilder& Ihl(Headers h, uint32_t ihl);
  MatchBuilder& Ipv4Src(Headers h, Ipv4Address addr);
  MatchBuilder& Ipv4Dst(Headers h, Ipv4Address addr);
  MatchBuilder& Ipv6Src(Headers h, const Ipv6Address& addr);
  MatchBuilder& Ipv6Dst(Headers h, const Ipv6Address& addr);
  MatchBuilder& Ipv6FlowLabel(Headers h, uint32_t label);

  // L4.
  MatchBuilder& TcpSport(Headers h, uint32_t port);
  MatchBuilder& TcpDport(Headers h, uint32_t port);
  MatchBuilder& UdpSport(Headers h, uint32_t port);
  MatchBuilder& UdpDport(Headers h, uint32_t port);
  MatchBuilder& TcpFlags(Headers h, uint32_t flags);

  // misc / misc2 / misc3.
  MatchBuilder& SourcePort(uint32_t vport);  // 0xffff = the wire (uplink)
  MatchBuilder& SourceSqn(uint32_t sqn);
  MatchBuilder& SecondVid(Headers h, uint32_t vid);
  MatchBuilder& VxlanVni(uint32_t vni);
  MatchBuilder& GeneveVni(uint32_t vni);
  MatchBuilder& GreKey(uint32_t key);  // gre_key_h = key[31:8], gre_key_l = key[7:0]
  MatchBuilder& GreProtocol(uint32_t protocol);
  MatchBuilder& RegA(uint32_t value);
  MatchBuilder& RegC(int index, uint32_t value);  // index 0..7
  MatchBuilder& IcmpType(uint32_t type);
  MatchBuilder& IcmpCode(uint32_t code);
  MatchBuilder& Icmpv6Type(uint32_t type);
  MatchBuilder& Icmpv6Code(uint32_t code);

  // The parameters, or InvalidArgument naming the first field given a bad value or name.
  absl::StatusOr<MatchParams> Build() const;

 private:
  void Fail(absl::Status status);

  MatchParams params_;
  absl::Status status_;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_MATCH_PARAMS_H_
