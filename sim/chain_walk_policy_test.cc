#include "sim/chain_walk_policy.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace drsim::sim {
namespace {

class ChainWalkPolicyTest : public testing::Test {
 protected:
  // Sends `bursts` bursts of 32 frames in turn, each walked one finding `hits` hits in the walk, as
  // WalkTogether tallies a walked burst; returns how many of them walked.
  uint32_t RunBursts(uint32_t bursts, uint32_t hits) {
    uint32_t walked = 0;
    for (uint32_t i = 0; i < bursts; ++i, ++serial_) {
      if (!policy_.WalkThisBurst(serial_)) continue;
      ++walked;
      policy_.TallyWalk(32, hits);
    }
    return walked;
  }
  // A window of walks with no hits: from then on only the probes walk.
  void TurnWalkingOff() {
    RunBursts(ChainWalkPolicy::kFrames / 32, 0);
    ASSERT_FALSE(policy_.walk_pays());
  }
  // Moves on to the next burst that walks.
  void NextWalkingBurst() {
    for (++serial_; !policy_.WalkThisBurst(serial_); ++serial_) {
    }
  }

  ChainWalkPolicy policy_;
  uint64_t serial_ = 0;
};

TEST_F(ChainWalkPolicyTest, WalksUntilAWindowOfWalksFindsFewHits) {
  // Every burst walks until kFrames frames have been walked; then, with no hits, none but the probes do.
  constexpr uint32_t kWindowBursts = ChainWalkPolicy::kFrames / 32;
  EXPECT_EQ(RunBursts(kWindowBursts, 0), kWindowBursts);
  EXPECT_FALSE(policy_.walk_pays());
  EXPECT_EQ(RunBursts(10 * ChainWalkPolicy::kProbeEvery, 0), 10u);
  EXPECT_FALSE(policy_.walk_pays());
}

TEST_F(ChainWalkPolicyTest, KeepsWalkingWhileMostWalkedFramesHit) {
  EXPECT_EQ(RunBursts(1000, 16), 1000u);
  EXPECT_TRUE(policy_.walk_pays());
}

TEST_F(ChainWalkPolicyTest, AProbeThatFindsMostFramesHitTurnsWalkingBackOn) {
  TurnWalkingOff();
  // The traffic turns to the first matchers: the next probe sees it, and from then on every burst walks.
  EXPECT_EQ(RunBursts(ChainWalkPolicy::kProbeEvery, 30), 1u);
  EXPECT_TRUE(policy_.walk_pays());
  EXPECT_EQ(RunBursts(100, 30), 100u);
}

TEST_F(ChainWalkPolicyTest, ProbesOfFewFramesDecideTogether) {
  TurnWalkingOff();
  // A probe that walked one frame, which hit, does not decide alone; with the next probe's 31 frames, 16
  // of them hits, more than half the 32 hit.
  NextWalkingBurst();
  policy_.TallyWalk(1, 1);
  EXPECT_FALSE(policy_.walk_pays());
  NextWalkingBurst();
  policy_.TallyWalk(31, 16);
  EXPECT_TRUE(policy_.walk_pays());
}

TEST_F(ChainWalkPolicyTest, DecidesOnceABurst) {
  TurnWalkingOff();
  // Asked again in one burst, the answer stands, and asking does not move the probe count on.
  uint32_t walked = 0;
  for (uint32_t i = 0; i < ChainWalkPolicy::kProbeEvery; ++i, ++serial_) {
    const bool walk = policy_.WalkThisBurst(serial_);
    EXPECT_EQ(policy_.WalkThisBurst(serial_), walk);
    EXPECT_EQ(policy_.WalkThisBurst(serial_), walk);
    walked += walk;
  }
  EXPECT_EQ(walked, 1u);
}

}  // namespace
}  // namespace drsim::sim
