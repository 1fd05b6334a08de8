// ACL sets on the NIC (acl_nic.h) with a mix of actions: every frame's verdict is that of the first filter
// its header fits, and equals the traced walk's, whichever way its burst took it. A burst asks the ACL
// table's index about the frames its root's hits jump there (sim/nic_burst.cc, LookUpJumpsInIndexes),
// reading a plain IPv4 frame's words straight from it and another's from its outer headers; a frame whose
// rule only drops or queues is finished from the named hit, one whose rule also tags is walked from it; a
// frame the index cannot answer so is walked. The index answers by its tries at first, by its compiled trees
// once compiled. The queue is shorter than a burst: it must take the frames in the order they came.
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
#include "hw/match_params.h"
#include "hw/table_index.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

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
  // A queue shorter than a burst: a burst's frames fill it in the order they came, and the last ones find
  // it full.
  static constexpr size_t kQueueCapacity = 24;

  // Installs `filters`: filter i drops (i % 3 == 0), queues to queue_ (1), or tags with i and queues to
  // queue_ (2). `keyed_root`: the root also jumps from a matcher on the IP version, tried before the
  // catch-all, so that frames that are not plain are parsed for their first lookup.
  void Install(const std::vector<Filter>& filters, bool keyed_root) {
    filters_ = filters;
    queue_ = net_.nic.pf().CreateQueue(kQueueCapacity);
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

  // Sends `frames` (of `headers`) in bursts, untraced and then traced, each into an empty queue, and checks
  // each verdict: the traced walk hits the rule of the first filter the header fits (or nothing), that
  // filter's actions ran, and the untraced verdict is the traced one's, the queue taking the frames in the
  // order they came. Returns how many frames the checks failed for (the first few reported).
  size_t SendAndCheck(const std::vector<Header>& headers, const std::vector<std::vector<uint8_t>>& frames) {
    size_t wrong = 0;
    sim::RxQueue& queue = *net_.nic.pf().queue(queue_);
    for (size_t at = 0; at < frames.size(); at += kBurst) {
      const size_t n = std::min(kBurst, frames.size() - at);
      std::vector<sim::Frame> views;
      for (size_t j = 0; j < n; ++j) views.emplace_back(frames[at + j]);
      std::vector<sim::Verdict> quick(n), traced(n);
      EXPECT_TRUE(net_.nic.ReceiveFromWire(views, absl::MakeSpan(quick), /*trace=*/false).ok());
      for (size_t j = 0; j < n; ++j) {
        if (quick[j].fate != sim::Fate::kQueued) continue;
        const std::optional<sim::RxCompletion> c = queue.Poll();
        if (!c.has_value() || c->frame != frames[at + j]) {
          if (++wrong <= 5) ADD_FAILURE() << "frame " << at + j << " is not next in the queue";
        }
      }
      EXPECT_EQ(queue.Poll(), std::nullopt);
      EXPECT_TRUE(net_.nic.ReceiveFromWire(views, absl::MakeSpan(traced), /*trace=*/true).ok());
      while (queue.Poll().has_value()) {
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
  std::vector<Filter> filters_;
  uint32_t queue_ = 0;
  dr::Action drop_, to_queue_;
  std::vector<dr::Action> tags_;
  DrAcl acl_;
  absl::flat_hash_map<uint32_t, size_t> filter_of_rule_id_;
  dr::Matcher v4_;
  dr::Rule v4_jump_;

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
      const bool fate_right = *want % 3 == 0
                                  ? traced.fate == sim::Fate::kDropped
                                  : traced.fate == sim::Fate::kQueued || traced.fate == sim::Fate::kQueueFull;
      if (!fate_right || traced.has_flow_tag != (*want % 3 == 2) ||
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
  for (const bool keyed_root : {false, true}) {
    for (Profile profile : {Profile::kAcl, Profile::kFw, Profile::kIpc}) {
      SCOPED_TRACE(absl::StrFormat("profile %d, keyed root %d", static_cast<int>(profile), keyed_root));
      // The narrowest addresses first, as in ClassBench's files, so that frames hit all over the table: had
      // most hit its first matchers, bursts would walk those instead (Burst::ChainWalkPolicy).
      std::vector<Filter> filters = Generate(profile, 600, 21);
      std::stable_sort(filters.begin(), filters.end(), [](const Filter& a, const Filter& b) {
        return __builtin_popcount(a.src_mask) + __builtin_popcount(a.dst_mask) >
               __builtin_popcount(b.src_mask) + __builtin_popcount(b.dst_mask);
      });
      // Frames of the trace, and every eighth again with a VLAN tag (not a plain frame; the same verdict).
      std::vector<Header> headers = GenerateTrace(filters, 3000, 22);
      std::vector<std::vector<uint8_t>> frames;
      for (const Header& h : headers) frames.push_back(FrameOf(h));
      for (size_t i = 0, n = headers.size(); i < n; i += 8) {
        headers.push_back(headers[i]);
        frames.push_back(Tagged(frames[i]));
      }
      auto acl = std::make_unique<CheckedAcl>();
      ASSERT_NO_FATAL_FAILURE(acl->Install(filters, keyed_root));
      const hw::TableIndex* index = dr::CompiledTableOf(acl->net_.acl)->index.load();
      ASSERT_NE(index, nullptr);
      // Through the index's tries (the trace sent twice over, so that the bursts settle on asking the index),
      // then through its compiled trees. Most frames are answered by the index ahead of any walk.
      for (int pass = 0; pass < 3; ++pass) {
        if (pass == 2) {
          ASSERT_TRUE(index->Compile());
          ASSERT_TRUE(index->LooksUpByTrees());
        }
        const uint64_t answered_before = acl->net_.nic.stats().answered_by_index;
        EXPECT_EQ(acl->SendAndCheck(headers, frames), 0u) << "pass " << pass;
        // (Each frame is sent untraced once, then traced: only the untraced ones may be answered so.)
        const uint64_t answered = acl->net_.nic.stats().answered_by_index - answered_before;
        if (pass > 0) EXPECT_GT(answered, frames.size() / 2) << "pass " << pass;
      }
    }
  }
}

}  // namespace
}  // namespace drsim::classbench
