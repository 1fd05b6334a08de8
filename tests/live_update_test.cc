// Live updates: worker threads process frames through the software NIC while a control thread inserts and
// deletes rules, creates and destroys matchers (republishing a table's chain) and jumps. Checked on every
// frame: it hit a rule completely (the tag and destination of the rule for its key) or missed; frames of
// rules that never change always hit. At the end the counters of those rules hold every frame the workers
// sent for them. Run under --config=tsan for the data races and --config=asan for use after free (a
// deleted rule freed while a worker still reads it). Run twice: with the rules' matcher as created, and sized
// for 2^17 rules, whose match table then queues inserts (hw::MatchTable::InsertQueued: the stable rules made
// last stay queued until the churn's first delete).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "dr/dr.h"
#include "gtest/gtest.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"

namespace drsim {
namespace {

using hw::kOuter;

constexpr int kStableKeys = 64;
constexpr int kChurnKeys = 256;
constexpr int kWorkers = 2;

hw::MatchParams PortMask() {
  return *hw::MatchBuilder().IpVersion(kOuter, 4).UdpSport(kOuter, 0xffff).UdpDport(kOuter, 0xffff).Build();
}
hw::MatchParams PortValue(uint16_t key) {
  return *hw::MatchBuilder().IpVersion(kOuter, 4).UdpSport(kOuter, key).UdpDport(kOuter, 4789).Build();
}
std::vector<uint8_t> Frame(uint16_t key) {
  sim::FrameSpec s;
  s.protocol = sim::kIpProtoUdp;
  s.sport = key;
  s.dport = 4789;
  return sim::BuildFrame(s);
}
uint32_t TagOf(int key) { return 0x100000 | static_cast<uint32_t>(key); }

class LiveUpdateTest : public ::testing::TestWithParam<bool> {  // sized
 protected:
  void SetUp() override {
    qp_ = nic_.pf().CreateQueue(1);  // stays full: frames end as kQueueFull, with their tag
    domain_ = *dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    root_ = *dr::Table::Create(domain_, 0);
    table_ = *dr::Table::Create(domain_, 1);
    dr::Matcher all = *dr::Matcher::Create(root_, 0, 0, nullptr);
    to_table_ = *dr::Action::DestTable(table_);
    root_rule_ = *dr::Rule::Create(all, hw::MatchParams(), {&to_table_});
    root_matcher_ = std::move(all);
    matcher_ = *dr::Matcher::Create(table_, 10, PortMask());
    if (GetParam()) {
      ASSERT_TRUE(
          matcher_.SetLayout({MLX5DV_DR_MATCHER_LAYOUT_RESIZABLE | MLX5DV_DR_MATCHER_LAYOUT_NUM_RULE, 17})
              .ok());
    }
    to_queue_ = *dr::Action::DestQp(nic_.pf(), qp_);
    counter_base_ = *nic_.AllocateCounters(kStableKeys);
    for (int k = 0; k < kStableKeys + kChurnKeys; ++k) tags_.push_back(*dr::Action::Tag(TagOf(k)));
    for (int k = 0; k < kStableKeys; ++k) {
      counters_.push_back(*dr::Action::FlowCounter(nic_.pf(), counter_base_, k));
      stable_.push_back(
          *dr::Rule::Create(matcher_, PortValue(k), {&tags_[k], &counters_.back(), &to_queue_}));
    }
    for (int k = 0; k < kStableKeys + kChurnKeys; ++k) frames_.push_back(Frame(static_cast<uint16_t>(k)));
  }

  // Classifies frames on its own worker until `stop`; returns how many it sent per stable key.
  void RunWorker(int seed, std::vector<uint64_t>* sent) {
    std::unique_ptr<sim::Worker> worker = *sim::Worker::Create(nic_);
    std::vector<sim::Frame> burst;
    std::vector<int> keys;
    std::vector<sim::Verdict> verdicts(sim::Nic::kBurst);
    uint32_t x = static_cast<uint32_t>(seed) * 2654435761u + 1;
    while (!stop_.load(std::memory_order_relaxed)) {
      burst.clear();
      keys.clear();
      for (size_t i = 0; i < sim::Nic::kBurst; ++i) {
        x = x * 1664525u + 1013904223u;
        const int key = static_cast<int>((x >> 8) % (kStableKeys + kChurnKeys));
        keys.push_back(key);
        burst.push_back(frames_[key]);
      }
      ASSERT_TRUE(worker->ReceiveFromWire(burst, absl::MakeSpan(verdicts)).ok());
      for (size_t i = 0; i < burst.size(); ++i) {
        const int key = keys[i];
        const sim::Verdict& v = verdicts[i];
        const bool hit = (v.fate == sim::Fate::kQueued || v.fate == sim::Fate::kQueueFull) &&
                         v.has_flow_tag && v.flow_tag == TagOf(key) && v.qp_num == qp_;
        const bool miss = v.fate == sim::Fate::kDomainDefault && !v.has_flow_tag;
        if (key < kStableKeys) {
          ++(*sent)[key];
          if (!hit)
            Fail(absl::StrFormat("stable key %d: fate %s tag %x", key, sim::FateName(v.fate), v.flow_tag));
        } else if (!hit && !miss) {
          Fail(absl::StrFormat("churn key %d: torn verdict: fate %s tag %x (has %d)", key,
                               sim::FateName(v.fate), v.flow_tag, v.has_flow_tag));
        }
      }
      frames_done_.fetch_add(burst.size(), std::memory_order_relaxed);
    }
  }

  size_t failures_size() {
    absl::MutexLock lock(&failures_mu_);
    return failures_.size();
  }

  void Fail(const std::string& what) {
    absl::MutexLock lock(&failures_mu_);
    if (failures_.size() < 10) failures_.push_back(what);
  }

  sim::Nic nic_;
  uint32_t qp_ = 0;
  dr::Domain domain_;
  dr::Table root_, table_;
  dr::Matcher root_matcher_, matcher_;
  dr::Action to_table_, to_queue_;
  dr::Rule root_rule_;
  uint32_t counter_base_ = 0;
  std::vector<dr::Action> tags_, counters_;
  std::vector<dr::Rule> stable_;
  std::vector<std::vector<uint8_t>> frames_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> frames_done_{0};
  absl::Mutex failures_mu_;
  std::vector<std::string> failures_;
};

TEST_P(LiveUpdateTest, WorkersSeeRulesWholeAndLoseNoCount) {
  std::vector<std::vector<uint64_t>> sent(kWorkers, std::vector<uint64_t>(kStableKeys));
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) workers.emplace_back([&, w] { RunWorker(w, &sent[w]); });

  // The control thread: churn rules in and out, with a matcher of higher priority created and destroyed
  // around them (it never matches: its rules are on a port no frame uses) so the chain is republished.
  // The workers first meet the rules as made (sized, the last stable ones still queued), then the churn.
  // (Bounded: a worker that stopped on a failed call sends no more.)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (frames_done_.load() < 20000 && failures_size() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  std::vector<dr::Rule> churn(kChurnKeys);
  uint32_t x = 12345;
  int ops = 0;
  while (ops < 20000 || frames_done_.load() < 50000) {
    x = x * 1664525u + 1013904223u;
    const int i = static_cast<int>((x >> 8) % kChurnKeys);
    if (churn[i].valid()) {
      ASSERT_TRUE(churn[i].Destroy().ok());
    } else {
      churn[i] = *dr::Rule::Create(matcher_, PortValue(static_cast<uint16_t>(kStableKeys + i)),
                                   {&tags_[kStableKeys + i], &to_queue_});
    }
    if (++ops % 500 == 0) {
      dr::Matcher shadow = *dr::Matcher::Create(table_, 1, PortMask());
      dr::Action drop = *dr::Action::Drop();
      hw::MatchParams unused_port =
          *hw::MatchBuilder().IpVersion(kOuter, 4).UdpSport(kOuter, 9).UdpDport(kOuter, 1).Build();
      dr::Rule never = *dr::Rule::Create(shadow, unused_port, {&drop});
      ASSERT_TRUE(never.Destroy().ok());
      ASSERT_TRUE(shadow.Destroy().ok());
    }
  }
  stop_ = true;
  for (std::thread& t : workers) t.join();

  for (const std::string& f : failures_) ADD_FAILURE() << f;
  for (int k = 0; k < kStableKeys; ++k) {
    uint64_t packets = 0, bytes = 0, want = 0;
    for (int w = 0; w < kWorkers; ++w) want += sent[w][k];
    ASSERT_TRUE(nic_.QueryCounter(counter_base_ + k, &packets, &bytes).ok());
    EXPECT_EQ(packets, want) << "stable key " << k;
  }
  EXPECT_EQ(nic_.stats().frames, frames_done_.load());
}

INSTANTIATE_TEST_SUITE_P(AsCreatedAndSized, LiveUpdateTest, ::testing::Bool());

}  // namespace
}  // namespace drsim
