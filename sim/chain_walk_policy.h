// ChainWalkPolicy: whether a worker's bursts walk the first matchers of an indexed table's chain before
// asking the table's index (sim::Nic's burst fast path, nic_burst.cc).
//
// What
//   Walking pays when most frames hit there: a few hot matchers before a long tail, each refusing most
//   frames on its summary for a few cycles. It does not when frames hit all over the table: then each frame
//   pays a summary test per matcher walked, in vain, before the index answers it anyway. The policy says,
//   once a burst, whether to walk (WalkThisBurst), and learns from the walks (TallyWalk).
//
// How
//   Only a walk tells whether walking pays. While the chain is walked, what the walks found decides afresh
//   every kFrames frames. While it is not, one burst in kProbeEvery walks it anyway (matchers and traffic
//   come and go), and the probes decide once they have walked kProbeFrames frames: mostly one probe, a
//   burst's frames into the table. The index's hits are not counted as the walk's: a frame leaves a walk for
//   the index after hw::TableIndex::kChainLookups lookups in vain, so how far a walk reaches differs from
//   frame to frame, and a hit the index finds past the first matchers may be one no walk would find.
//
// Thread-safety
//   None: each worker keeps its own (Nic::Burst), and only its thread calls it.
#ifndef DRSIM_SIM_CHAIN_WALK_POLICY_H_
#define DRSIM_SIM_CHAIN_WALK_POLICY_H_

#include <cstdint>

namespace drsim::sim {

class ChainWalkPolicy {
 public:
  static constexpr uint32_t kFrames = 256;  // walked frames a decision is drawn from while walking
  static constexpr uint32_t kProbeEvery = 1024;
  static constexpr uint32_t kProbeFrames = 32;

  // Whether to walk the chain in the burst numbered `burst` (Nic::Burst::serial): decided once a burst, so
  // that every caller in the burst gets the same answer.
  bool WalkThisBurst(uint64_t burst) {
    if (burst != decided_burst_) {
      decided_burst_ = burst;
      walk_this_burst_ = walk_pays_ || ++unwalked_bursts_ % kProbeEvery == 0;
    }
    return walk_this_burst_;
  }
  // Counts a walk of the chain: `n` frames walked into the table, `hits` of them hit in the matchers
  // walked.
  void TallyWalk(uint32_t n, uint32_t hits) {
    frames_ += n;
    hits_ += hits;
    if (frames_ < (walk_pays_ ? kFrames : kProbeFrames)) return;
    walk_pays_ = 2 * hits_ >= frames_;
    frames_ = hits_ = 0;
  }
  // Whether walking paid at the last decision (true before any).
  bool walk_pays() const { return walk_pays_; }

 private:
  uint32_t frames_ = 0;
  uint32_t hits_ = 0;
  uint32_t unwalked_bursts_ = 0;
  bool walk_pays_ = true;
  uint64_t decided_burst_ = ~uint64_t{0};
  bool walk_this_burst_ = false;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_CHAIN_WALK_POLICY_H_
