#include "bench/five_tuple.h"

#include <cstring>

#include "sim/frame_builder.h"

namespace drsim::bench {

using hw::kOuter;

hw::MatchParams FiveTupleMask() {
  return *hw::MatchBuilder()
              .IpVersion(kOuter, 4)
              .IpProtocol(kOuter, 0xff)
              .Ipv4Src(kOuter, hw::Ipv4Address::PrefixMask(32))
              .Ipv4Dst(kOuter, hw::Ipv4Address::PrefixMask(32))
              .UdpSport(kOuter, 0xffff)
              .UdpDport(kOuter, 0xffff)
              .Build();
}

hw::MatchParams FiveTupleValue(const Flow& f) {
  return *hw::MatchBuilder()
              .IpVersion(kOuter, 4)
              .IpProtocol(kOuter, 17)
              .Ipv4Src(kOuter, {f.src})
              .Ipv4Dst(kOuter, {f.dst})
              .UdpSport(kOuter, f.sport)
              .UdpDport(kOuter, f.dport)
              .Build();
}

void WriteFiveTupleValue(const Flow& f, mlx5dv_flow_match_parameters* v) {
  v->match_sz = hw::kSectionBytes;
  // The first section; its fields not set here are not matched, and stay zero.
  auto* outer = reinterpret_cast<uint8_t*>(v->match_buf);
  std::memset(outer, 0, hw::kSectionBytes);
  hw::SetField(outer, hw::Field::kOuterIpVersion, 4);
  hw::SetField(outer, hw::Field::kOuterIpProtocol, 17);
  hw::SetField(outer, hw::Field::kOuterSrcIp31_0, f.src);
  hw::SetField(outer, hw::Field::kOuterDstIp31_0, f.dst);
  hw::SetField(outer, hw::Field::kOuterUdpSport, f.sport);
  hw::SetField(outer, hw::Field::kOuterUdpDport, f.dport);
}

PackedValues::PackedValues(const std::vector<Flow>& flows) : storage_(flows.size() * kWords) {
  static_assert(sizeof(FiveTupleValueBuffer) % 8 == 0);
  for (size_t i = 0; i < flows.size(); ++i) {
    WriteFiveTupleValue(flows[i], reinterpret_cast<mlx5dv_flow_match_parameters*>(&storage_[i * kWords]));
  }
}

std::vector<std::vector<uint8_t>> TraceFrames(const std::vector<Flow>& flows) {
  std::vector<std::vector<uint8_t>> frames;
  for (size_t i : Trace(flows.size(), kTraceLength, kTraceSeed)) {
    const Flow& f = flows[i];
    sim::FrameSpec s;
    s.ipv4_src = {f.src};
    s.ipv4_dst = {f.dst};
    s.sport = f.sport;
    s.dport = f.dport;
    frames.push_back(sim::BuildFrame(s));
  }
  return frames;
}

bool SendDroppedBursts(benchmark::State& state, sim::Worker& worker, absl::Span<const sim::Frame> frames) {
  std::vector<sim::Verdict> verdicts(kBurst);
  size_t at = 0;
  bool accepted = true, all_dropped = true;
  for (auto _ : state) {
    accepted &= worker.ReceiveFromWire(frames.subspan(at, kBurst), absl::MakeSpan(verdicts)).ok();
    for (const sim::Verdict& v : verdicts) all_dropped &= v.fate == sim::Fate::kDropped;
    at = (at + kBurst) % frames.size();
  }
  state.SetItemsProcessed(state.iterations() * kBurst);
  if (!accepted) state.SkipWithError("a burst was refused");
  if (!all_dropped) state.SkipWithError("a frame missed its rule");
  return accepted && all_dropped;
}

FiveTupleTable::FiveTupleTable(uint32_t level)
    : domain(*dr::Domain::Create(nic.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX)),
      table(*dr::Table::Create(domain, level)),
      matcher(*dr::Matcher::Create(table, 0, FiveTupleMask())),
      drop(*dr::Action::Drop()) {}

}  // namespace drsim::bench
