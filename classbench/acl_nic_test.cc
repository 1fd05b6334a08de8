// ACL sets on the NIC (acl_nic.h) with a mix of actions, in NIC_RX, FDB and NIC_TX: every frame's verdict is
// that of the first filter its header fits, and equals the traced walk's, whichever way its burst took it. A
// burst asks the ACL table's index about the frames its root's hits jump there (sim/nic_burst.cc,
// LookUpJumpsInIndexes), reading a plain IPv4 frame's words straight from it and another's from its outer
// headers; a frame whose rule only drops or queues is finished from the named hit, one whose rule also tags
// is walked from it; a frame the index cannot answer so is walked. The index answers by its tries at first,
// by its compiled trees once compiled. The queue is shorter than a burst: it must take the frames in the
// order they came. With two sets, each in a table of its own (UDP frames jump to the second), a burst asks
// both indexes about its frames.
#include "classbench/acl_nic.h"

#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "classbench/dr_acl.h"
#include "classbench/filter.h"
#include "classbench/generator.h"
#include "classbench/header_frame.h"
#include "dr/compiled_table.h"
#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "hw/table_index.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace drsim::classbench {
namespace {

constexpr size_t kBurst = 32;

// `frame` with an 802.1Q tag of VLAN `vid` after its MAC addresses.
std::vector<uint8_t> Tagged(std::vector<uint8_t> frame, uint16_t vid = 7) {
  const uint8_t tag[] = {0x81, 0x00, static_cast<uint8_t>(vid >> 8), static_cast<uint8_t>(vid)};
  frame.insert(frame.begin() + 12, std::begin(tag), std::end(tag));
  return frame;
}

// The VLAN a NIC_TX set's filter i (odd) tags its frames with.
uint16_t VidOf(size_t i) { return static_cast<uint16_t>(1 + i % 4094); }

// A filter set installed in a table. In NIC_RX, filter i drops (i % 3 == 0), queues to the NIC's queue (1),
// or tags with tag_base + i and queues (2). In FDB, it drops (i % 3 == 0) or forwards to VF i % 3. In NIC_TX,
// it drops (i even) or pushes a VLAN tag (VidOf(i)) and goes on to the wire.
struct InstalledSet {
  std::vector<Filter> filters;
  uint32_t tag_base = 0;
  std::vector<dr::Action> tags;  // NIC_RX: a flow tag each filter; NIC_TX: a VLAN push each filter
  DrAcl acl;
  absl::flat_hash_map<uint32_t, size_t> filter_of_rule_id;
};

// ACL sets on a NIC of their own, and the checks of its verdicts.
class CheckedAcl {
 public:
  // A queue shorter than a burst: a burst's frames fill it in the order they came, and the last ones find
  // it full.
  static constexpr size_t kQueueCapacity = 24;

  explicit CheckedAcl(mlx5dv_dr_domain_type type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX)
      : net_(type),
        queue_(net_.nic.pf().CreateQueue(kQueueCapacity)),
        drop_(*dr::Action::Drop()),
        to_queue_(*dr::Action::DestQp(net_.nic.pf(), queue_)) {
    if (type == MLX5DV_DR_DOMAIN_TYPE_FDB) {
      for (uint32_t vf = 1; vf <= AclNic::kVfs; ++vf)
        to_vf_.push_back(*dr::Action::DestVport(net_.domain, vf));
    }
  }

  // Installs `filters` in the NIC's ACL table (InstalledSet, tags from 0). `keyed_root`: the root also jumps
  // from a matcher on the IP version, tried before the catch-all, so that frames that are not plain are
  // parsed for their first lookup.
  void Install(const std::vector<Filter>& filters, bool keyed_root) {
    ASSERT_NO_FATAL_FAILURE(InstallSet(net_.acl, filters, 0, &first_));
    if (keyed_root) {
      const hw::MatchParams mask = *hw::MatchBuilder().IpVersion(hw::kOuter, 0xf).Build();
      absl::StatusOr<dr::Matcher> v4 = dr::Matcher::Create(net_.root, 0, mask);
      ASSERT_TRUE(v4.ok()) << v4.status();
      v4_ = *std::move(v4);
      absl::StatusOr<dr::Rule> jump =
          dr::Rule::Create(v4_, *hw::MatchBuilder().IpVersion(hw::kOuter, 4).Build(), {&net_.to_acl});
      ASSERT_TRUE(jump.ok()) << jump.status();
      v4_jump_ = *std::move(jump);
    }
  }

  // Installs `tcp` in the NIC's ACL table, as Install does, and `udp` (tags from kUdpTags) in a table of its
  // own. The root's first matcher, on the protocol (tried before the catch-all), jumps a TCP frame to the
  // first and a UDP frame to the second: a burst's first lookup finds both jumps (the index is asked ahead
  // of a walk about the jumps of the root's first matcher only).
  static constexpr uint32_t kUdpTags = 1u << 20;
  void InstallByProtocol(const std::vector<Filter>& tcp, const std::vector<Filter>& udp) {
    ASSERT_NO_FATAL_FAILURE(InstallSet(net_.acl, tcp, 0, &first_));
    absl::StatusOr<dr::Table> table = dr::Table::Create(net_.domain, 2);
    ASSERT_TRUE(table.ok()) << table.status();
    udp_table_ = *std::move(table);
    udp_set_ = std::make_unique<InstalledSet>();
    ASSERT_NO_FATAL_FAILURE(InstallSet(udp_table_, udp, kUdpTags, udp_set_.get()));
    absl::StatusOr<dr::Action> to_udp = dr::Action::DestTable(udp_table_);
    ASSERT_TRUE(to_udp.ok()) << to_udp.status();
    to_udp_ = *std::move(to_udp);
    const hw::MatchParams mask = *hw::MatchBuilder().IpProtocol(hw::kOuter, 0xff).Build();
    absl::StatusOr<dr::Matcher> by_protocol = dr::Matcher::Create(net_.root, 0, mask);
    ASSERT_TRUE(by_protocol.ok()) << by_protocol.status();
    by_protocol_ = *std::move(by_protocol);
    for (const auto& [protocol, to, jump] : {std::tuple(sim::kIpProtoTcp, &net_.to_acl, &tcp_jump_),
                                             std::tuple(sim::kIpProtoUdp, &to_udp_, &udp_jump_)}) {
      absl::StatusOr<dr::Rule> rule =
          dr::Rule::Create(by_protocol_, *hw::MatchBuilder().IpProtocol(hw::kOuter, protocol).Build(), {to});
      ASSERT_TRUE(rule.ok()) << rule.status();
      *jump = *std::move(rule);
    }
  }

  // Sends `frames` (of `headers`) in bursts, untraced and then traced, and checks each verdict: the traced
  // walk hits the rule of the first filter the header fits (or nothing), that filter's actions ran, and the
  // untraced verdict is the traced one's, the queue, the VFs' ports and the wire taking the frames in the
  // order they came (each empty before a burst). NIC_RX and FDB take frames from the wire, NIC_TX from the
  // PF. Returns how many frames the checks failed for (the first few reported).
  size_t SendAndCheck(const std::vector<Header>& headers, const std::vector<std::vector<uint8_t>>& frames) {
    size_t wrong = 0;
    sim::RxQueue& queue = *net_.nic.pf().queue(queue_);
    const bool sent = net_.domain.type() == MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
    auto send = [&](absl::Span<const sim::Frame> views, absl::Span<sim::Verdict> verdicts, bool trace) {
      return sent ? net_.nic.pf().Send(views, verdicts, trace)
                  : net_.nic.ReceiveFromWire(views, verdicts, trace);
    };
    for (size_t at = 0; at < frames.size(); at += kBurst) {
      const size_t n = std::min(kBurst, frames.size() - at);
      std::vector<sim::Frame> views;
      for (size_t j = 0; j < n; ++j) views.emplace_back(frames[at + j]);
      std::vector<sim::Verdict> quick(n), traced(n);
      EXPECT_TRUE(send(views, absl::MakeSpan(quick), /*trace=*/false).ok());
      for (size_t j = 0; j < n; ++j) {
        std::optional<std::vector<uint8_t>> delivered;
        std::vector<uint8_t> expected = frames[at + j];
        const char* where = "";
        switch (quick[j].fate) {
          case sim::Fate::kQueued:
            if (std::optional<sim::RxCompletion> c = queue.Poll()) delivered = c->frame;
            where = "the queue";
            break;
          case sim::Fate::kPort:
            delivered = net_.nic.function(quick[j].vport)->PollPort();
            where = "its function's port";
            break;
          case sim::Fate::kWire:
            delivered = net_.nic.PollWire();
            if (std::optional<size_t> want =
                    FirstMatch(SetOf(headers[at + j]).filters, AsParsed(headers[at + j])))
              expected = Tagged(expected, VidOf(*want));
            where = "the wire";
            break;
          default:
            continue;
        }
        if (delivered != expected) {
          if (++wrong <= 5) ADD_FAILURE() << "frame " << at + j << " is not next on " << where << " as sent";
        }
      }
      EXPECT_EQ(queue.Poll(), std::nullopt);
      EXPECT_EQ(net_.nic.PollWire(), std::nullopt);
      for (uint16_t vport = 0; vport <= AclNic::kVfs; ++vport)
        EXPECT_EQ(net_.nic.function(vport)->PollPort(), std::nullopt);
      EXPECT_TRUE(send(views, absl::MakeSpan(traced), /*trace=*/true).ok());
      while (queue.Poll().has_value() || net_.nic.PollWire().has_value()) {
      }
      for (uint16_t vport = 0; vport <= AclNic::kVfs; ++vport) {
        while (net_.nic.function(vport)->PollPort().has_value()) {
        }
      }
      for (size_t j = 0; j < n; ++j) {
        const std::string why = Check(headers[at + j], quick[j], traced[j]);
        if (why.empty()) continue;
        if (++wrong <= 5) ADD_FAILURE() << "frame " << at + j << ": " << why;
      }
    }
    return wrong;
  }

  AclNic net_;
  uint32_t queue_;
  dr::Action drop_, to_queue_;
  std::vector<dr::Action> to_vf_;  // FDB: to VF 1, VF 2
  InstalledSet first_;             // in net_.acl
  dr::Matcher v4_;
  dr::Rule v4_jump_;
  // InstallByProtocol's: the UDP frames' set, its table, and the root's jumps by protocol.
  dr::Table udp_table_;
  std::unique_ptr<InstalledSet> udp_set_;
  dr::Action to_udp_;
  dr::Matcher by_protocol_;
  dr::Rule tcp_jump_, udp_jump_;

 private:
  // Installs `filters` into `table` as `set` (InstalledSet).
  void InstallSet(const dr::Table& table, const std::vector<Filter>& filters, uint32_t tag_base,
                  InstalledSet* set) {
    set->filters = filters;
    set->tag_base = tag_base;
    const mlx5dv_dr_domain_type type = net_.domain.type();
    set->tags.reserve(filters.size());
    for (size_t i = 0; i < filters.size(); ++i) {
      set->tags.push_back(type == MLX5DV_DR_DOMAIN_TYPE_NIC_TX
                              ? *dr::Action::PushVlan(net_.domain, htonl(0x81000000u | VidOf(i)))
                              : *dr::Action::Tag(tag_base + static_cast<uint32_t>(i)));
    }
    absl::StatusOr<DrAcl> acl = InstallAcl(table, filters, [&](size_t i) -> std::vector<const dr::Action*> {
      switch (type) {
        case MLX5DV_DR_DOMAIN_TYPE_NIC_TX:
          if (i % 2 == 0) return {&drop_};
          return {&set->tags[i]};
        case MLX5DV_DR_DOMAIN_TYPE_FDB:
          if (i % 3 == 0) return {&drop_};
          return {&to_vf_[i % 3 - 1]};
        default:
          if (i % 3 == 0) return {&drop_};
          if (i % 3 == 1) return {&to_queue_};
          return {&set->tags[i], &to_queue_};
      }
    });
    ASSERT_TRUE(acl.ok()) << acl.status();
    set->acl = *std::move(acl);
    for (size_t r = 0; r < set->acl.rules.size(); ++r)
      set->filter_of_rule_id[set->acl.rules[r].id()] = set->acl.filter_of_rule[r];
  }

  // The set a frame with `header` is looked up in: UDP frames' once InstallByProtocol made one.
  const InstalledSet& SetOf(const Header& header) const {
    return udp_set_ != nullptr && header.proto == sim::kIpProtoUdp ? *udp_set_ : first_;
  }

  // Whether `v` shows set filter `i`'s actions (InstalledSet).
  bool ActionsRan(const InstalledSet& set, size_t i, const sim::Verdict& v) const {
    switch (net_.domain.type()) {
      case MLX5DV_DR_DOMAIN_TYPE_NIC_TX:
        return !v.has_flow_tag && v.fate == (i % 2 == 0 ? sim::Fate::kDropped : sim::Fate::kWire);
      case MLX5DV_DR_DOMAIN_TYPE_FDB:
        return !v.has_flow_tag &&
               (i % 3 == 0 ? v.fate == sim::Fate::kDropped : v.fate == sim::Fate::kPort && v.vport == i % 3);
      default: {
        const bool fate_right = i % 3 == 0 ? v.fate == sim::Fate::kDropped
                                           : v.fate == sim::Fate::kQueued || v.fate == sim::Fate::kQueueFull;
        return fate_right && v.has_flow_tag == (i % 3 == 2) &&
               (!v.has_flow_tag || v.flow_tag == set.tag_base + i);
      }
    }
  }

  std::string Check(const Header& header, const sim::Verdict& quick, const sim::Verdict& traced) const {
    const InstalledSet& set = SetOf(header);
    const std::optional<size_t> want = FirstMatch(set.filters, AsParsed(header));
    std::optional<size_t> hit;
    if (traced.path.size() >= 2 && traced.path[1].rule_id != 0) {
      auto it = set.filter_of_rule_id.find(traced.path[1].rule_id);
      if (it == set.filter_of_rule_id.end())
        return absl::StrFormat("the walk hit rule %d, not one of its set's", traced.path[1].rule_id);
      hit = it->second;
    }
    if (hit != want) {
      return absl::StrFormat("the walk hit filter %d, first match is %d", hit.value_or(-1),
                             want.value_or(-1));
    }
    if (want.has_value() && !ActionsRan(set, *want, traced))
      return absl::StrFormat("filter %d's actions did not run as they say", *want);
    if (quick.fate != traced.fate || quick.vport != traced.vport || quick.qp_num != traced.qp_num ||
        quick.has_flow_tag != traced.has_flow_tag || quick.flow_tag != traced.flow_tag ||
        !quick.path.empty() || !quick.copies.empty()) {
      return absl::StrFormat(
          "untraced fate %d vport %d queue %d tag %d/%d; traced fate %d vport %d queue %d tag %d/%d",
          static_cast<int>(quick.fate), quick.vport, quick.qp_num, quick.has_flow_tag, quick.flow_tag,
          static_cast<int>(traced.fate), traced.vport, traced.qp_num, traced.has_flow_tag, traced.flow_tag);
    }
    return "";
  }
};

// The narrowest addresses first, as in ClassBench's files, so that frames hit all over the table: had most
// hit its first matchers, bursts would walk those instead (ChainWalkPolicy).
void SortNarrowestFirst(std::vector<Filter>* filters) {
  std::stable_sort(filters->begin(), filters->end(), [](const Filter& a, const Filter& b) {
    return __builtin_popcount(a.src_mask) + __builtin_popcount(a.dst_mask) >
           __builtin_popcount(b.src_mask) + __builtin_popcount(b.dst_mask);
  });
}

// Sends the frames through `acl` three times (SendAndCheck), each verdict first match: through the `indexes`'
// tries twice (so that the bursts settle on asking the indexes), then through their compiled trees. After the
// first pass, more than `answered_share` of the frames must have been answered by an index ahead of any walk
// (only the untraced sending of each frame may be).
void CheckThreePasses(CheckedAcl& acl, const std::vector<const hw::TableIndex*>& indexes,
                      const std::vector<Header>& headers, const std::vector<std::vector<uint8_t>>& frames,
                      double answered_share) {
  for (int pass = 0; pass < 3; ++pass) {
    if (pass == 2) {
      for (const hw::TableIndex* index : indexes) {
        ASSERT_TRUE(index->Compile());
        ASSERT_TRUE(index->LooksUpByTrees());
      }
    }
    const uint64_t answered_before = acl.net_.nic.stats().answered_by_index;
    EXPECT_EQ(acl.SendAndCheck(headers, frames), 0u) << "pass " << pass;
    const uint64_t answered = acl.net_.nic.stats().answered_by_index - answered_before;
    if (pass > 0) {
      EXPECT_GT(static_cast<double>(answered), answered_share * static_cast<double>(frames.size()))
          << "pass " << pass;
    }
  }
}

TEST(AclNicTest, EveryVerdictIsFirstMatchWhicheverWayTheBurstTookTheFrame) {
  for (const mlx5dv_dr_domain_type type :
       {MLX5DV_DR_DOMAIN_TYPE_NIC_RX, MLX5DV_DR_DOMAIN_TYPE_FDB, MLX5DV_DR_DOMAIN_TYPE_NIC_TX}) {
    for (const bool keyed_root : {false, true}) {
      for (Profile profile : {Profile::kAcl, Profile::kFw, Profile::kIpc}) {
        SCOPED_TRACE(absl::StrFormat("domain %d, profile %d, keyed root %d", static_cast<int>(type),
                                     static_cast<int>(profile), keyed_root));
        std::vector<Filter> filters = Generate(profile, 600, 21);
        SortNarrowestFirst(&filters);
        // Frames of the trace, and every eighth again with a VLAN tag (not a plain frame; the same verdict).
        std::vector<Header> headers = GenerateTrace(filters, 3000, 22);
        std::vector<std::vector<uint8_t>> frames;
        for (const Header& h : headers) frames.push_back(FrameOf(h));
        for (size_t i = 0, n = headers.size(); i < n; i += 8) {
          headers.push_back(headers[i]);
          frames.push_back(Tagged(frames[i]));
        }
        auto acl = std::make_unique<CheckedAcl>(type);
        ASSERT_NO_FATAL_FAILURE(acl->Install(filters, keyed_root));
        const hw::TableIndex* index = dr::CompiledTableOf(acl->net_.acl)->index.load();
        ASSERT_NE(index, nullptr);
        CheckThreePasses(*acl, {index}, headers, frames, 0.5);
      }
    }
  }
}

// Two sets, each in an indexed table of its own: a burst's TCP frames jump to the first, its UDP frames to
// the second, and the burst asks each table's index about its own frames (LookUpJumpsInIndexes takes them
// table by table). Every verdict is first match in the frame's set (or a miss of the second's table),
// through the tries and then the trees.
TEST(AclNicTest, ABurstAsksEachIndexedTableAboutItsOwnFrames) {
  std::vector<Filter> tcp = Generate(Profile::kAcl, 500, 31);
  std::vector<Filter> udp = Generate(Profile::kFw, 500, 32);
  // Only its filters of 16 address bits or more (no catch-all), so that UDP frames with random addresses
  // miss their table: the index says so ahead, beside the hits it names.
  udp.erase(std::remove_if(udp.begin(), udp.end(),
                           [](const Filter& f) {
                             return __builtin_popcount(f.src_mask) + __builtin_popcount(f.dst_mask) < 16;
                           }),
            udp.end());
  SortNarrowestFirst(&tcp);
  SortNarrowestFirst(&udp);
  // The two traces in turn, each burst half TCP frames of the first set's and half UDP of the second's.
  const std::vector<Header> tcp_trace = GenerateTrace(tcp, 1600, 33);
  const std::vector<Header> udp_trace = GenerateTrace(udp, 1600, 34);
  std::vector<Header> headers;
  std::vector<std::vector<uint8_t>> frames;
  std::mt19937 random(35);
  for (size_t i = 0; i < tcp_trace.size(); ++i) {
    for (Header h : {tcp_trace[i], udp_trace[i]}) {
      const bool to_udp = headers.size() % 2 == 1;
      h.proto = to_udp ? sim::kIpProtoUdp : sim::kIpProtoTcp;
      if (to_udp && i % 4 == 0) {  // random addresses: these fit hardly any of the UDP filters
        h.src = static_cast<uint32_t>(random());
        h.dst = static_cast<uint32_t>(random());
      }
      headers.push_back(h);
      frames.push_back(FrameOf(h));
    }
  }
  auto acl = std::make_unique<CheckedAcl>();
  ASSERT_NO_FATAL_FAILURE(acl->InstallByProtocol(tcp, udp));
  const hw::TableIndex* tcp_index = dr::CompiledTableOf(acl->net_.acl)->index.load();
  const hw::TableIndex* udp_index = dr::CompiledTableOf(acl->udp_table_)->index.load();
  ASSERT_NE(tcp_index, nullptr);
  ASSERT_NE(udp_index, nullptr);
  // (Each table takes half the frames: more than three quarters answered ahead is both tables answering.)
  CheckThreePasses(*acl, {tcp_index, udp_index}, headers, frames, 0.75);
}

}  // namespace
}  // namespace drsim::classbench
