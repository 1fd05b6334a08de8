// ACL sets on the NIC (acl_nic.h) with a mix of actions: every frame's verdict is that of the first filter
// its header fits, and equals the traced walk's, whichever way its burst took it. A burst answers a plain
// IPv4 frame from the ACL table's index (sim/nic_burst.cc, LookUpJumpsInIndexes), and finishes it there when
// its rule only drops or queues it; a rule that also tags hands the frame to the walk from the hit the
// index named; a frame that is not plain (other protocols, a VLAN tag) is parsed and walked. The index
// answers by its tries at first, by its compiled trees once compiled.
#include "classbench/acl_nic.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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
#include "hw/table_index.h"
#include "sim/nic.h"

namespace drsim::classbench {
namespace {

constexpr size_t kBurst = 32;

// `frame` with an 802.1Q tag after its MAC addresses.
std::vector<uint8_t> Tagged(std::vector<uint8_t> frame) {
  const uint8_t tag[] = {0x81, 0x00, 0x00, 0x07};
  frame.insert(frame.begin() + 12, std::begin(tag), std::end(tag));
  return frame;
}

// An ACL set on a NIC of its own, and the checks of its verdicts.
class CheckedAcl {
 public:
  // Installs `filters`: filter i drops (i % 3 == 0), queues to queue_ (1), or tags with i and queues to
  // queue_ (2).
  void Install(const std::vector<Filter>& filters) {
    filters_ = filters;
    queue_ = net_.nic.pf().CreateQueue(1 << 20);
    drop_ = *dr::Action::Drop();
    to_queue_ = *dr::Action::DestQp(net_.nic.pf(), queue_);
    tags_.reserve(filters.size());
    for (size_t i = 0; i < filters.size(); ++i) tags_.push_back(*dr::Action::Tag(static_cast<uint32_t>(i)));
    absl::StatusOr<DrAcl> acl = InstallAcl(net_.acl, filters, [&](size_t i) {
      switch (i % 3) {
        case 0:
          return std::vector<const dr::Action*>{&drop_};
        case 1:
          return std::vector<const dr::Action*>{&to_queue_};
        default:
          return std::vector<const dr::Action*>{&tags_[i], &to_queue_};
      }
    });
    ASSERT_TRUE(acl.ok()) << acl.status();
    acl_ = *std::move(acl);
    for (size_t r = 0; r < acl_.rules.size(); ++r)
      filter_of_rule_id_[acl_.rules[r].id()] = acl_.filter_of_rule[r];
  }

  // Sends `frames` (of `headers`) in bursts, untraced and then traced, and checks each verdict: the traced
  // walk hits the rule of the first filter the header fits (or nothing), and the untraced verdict is the
  // traced one's. Returns how many frames the checks failed for (each reported).
  size_t SendAndCheck(const std::vector<Header>& headers, const std::vector<std::vector<uint8_t>>& frames) {
    size_t wrong = 0;
    for (size_t at = 0; at < frames.size(); at += kBurst) {
      const size_t n = std::min(kBurst, frames.size() - at);
      std::vector<sim::Frame> views;
      for (size_t j = 0; j < n; ++j) views.emplace_back(frames[at + j]);
      std::vector<sim::Verdict> quick(n), traced(n);
      EXPECT_TRUE(net_.nic.ReceiveFromWire(views, absl::MakeSpan(quick), /*trace=*/false).ok());
      EXPECT_TRUE(net_.nic.ReceiveFromWire(views, absl::MakeSpan(traced), /*trace=*/true).ok());
      for (size_t j = 0; j < n; ++j) {
        const std::string why = Check(headers[at + j], quick[j], traced[j]);
        if (why.empty()) continue;
        if (++wrong <= 5) ADD_FAILURE() << "frame " << at + j << ": " << why;
      }
    }
    return wrong;
  }

  AclNic net_;
  std::vector<Filter> filters_;
  uint32_t queue_ = 0;
  dr::Action drop_, to_queue_;
  std::vector<dr::Action> tags_;
  DrAcl acl_;
  absl::flat_hash_map<uint32_t, size_t> filter_of_rule_id_;

 private:
  std::string Check(const Header& header, const sim::Verdict& quick, const sim::Verdict& traced) const {
    const std::optional<size_t> want = FirstMatch(filters_, AsParsed(header));
    std::optional<size_t> hit;
    if (traced.path.size() >= 2 && traced.path[1].rule_id != 0)
      hit = filter_of_rule_id_.at(traced.path[1].rule_id);
    if (hit != want) {
      return absl::StrFormat("the walk hit filter %d, first match is %d", hit.value_or(-1),
                             want.value_or(-1));
    }
    if (want.has_value()) {
      const sim::Fate fate = *want % 3 == 0 ? sim::Fate::kDropped : sim::Fate::kQueued;
      if (traced.fate != fate || traced.has_flow_tag != (*want % 3 == 2) ||
          (traced.has_flow_tag && traced.flow_tag != *want)) {
        return absl::StrFormat("filter %d's actions did not run as they say", *want);
      }
    }
    if (quick.fate != traced.fate || quick.qp_num != traced.qp_num ||
        quick.has_flow_tag != traced.has_flow_tag || quick.flow_tag != traced.flow_tag ||
        !quick.path.empty() || !quick.copies.empty()) {
      return absl::StrFormat("untraced fate %d queue %d tag %d/%d; traced fate %d queue %d tag %d/%d",
                             static_cast<int>(quick.fate), quick.qp_num, quick.has_flow_tag, quick.flow_tag,
                             static_cast<int>(traced.fate), traced.qp_num, traced.has_flow_tag,
                             traced.flow_tag);
    }
    return "";
  }
};

TEST(AclNicTest, EveryVerdictIsFirstMatchWhicheverWayTheBurstTookTheFrame) {
  for (Profile profile : {Profile::kAcl, Profile::kFw, Profile::kIpc}) {
    SCOPED_TRACE(static_cast<int>(profile));
    const std::vector<Filter> filters = Generate(profile, 600, 21);
    // Frames of the trace, and every eighth again with a VLAN tag (not a plain frame; the same verdict).
    std::vector<Header> headers = GenerateTrace(filters, 3000, 22);
    std::vector<std::vector<uint8_t>> frames;
    for (const Header& h : headers) frames.push_back(FrameOf(h));
    for (size_t i = 0, n = headers.size(); i < n; i += 8) {
      headers.push_back(headers[i]);
      frames.push_back(Tagged(frames[i]));
    }
    size_t plain = 0;  // frames of TCP or UDP, with no tag
    for (size_t i = 0; i < headers.size() && i < 3000; ++i)
      plain += headers[i].proto == 6 || headers[i].proto == 17;
    EXPECT_GT(plain, headers.size() / 2);

    auto acl = std::make_unique<CheckedAcl>();
    ASSERT_NO_FATAL_FAILURE(acl->Install(filters));
    const hw::TableIndex* index = dr::CompiledTableOf(acl->net_.acl)->index.load();
    ASSERT_NE(index, nullptr);
    // Through the index's tries (the trace sent twice over, so that the bursts settle on asking the index).
    EXPECT_EQ(acl->SendAndCheck(headers, frames), 0u);
    EXPECT_EQ(acl->SendAndCheck(headers, frames), 0u);
    // Through its compiled trees.
    ASSERT_TRUE(index->Compile());
    ASSERT_TRUE(index->LooksUpByTrees());
    EXPECT_EQ(acl->SendAndCheck(headers, frames), 0u);
  }
}

}  // namespace
}  // namespace drsim::classbench
