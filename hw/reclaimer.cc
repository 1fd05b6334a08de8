#include "hw/reclaimer.h"

#include <limits>
#include <vector>

namespace drsim::hw {

Reclaimer::Reclaimer() : slots_(new Slot[kMaxReaders]) {}

Reclaimer::~Reclaimer() {
  for (auto& [stamp, free] : pending_) free();
}

Reclaimer::Reader::Reader(Reclaimer* reclaimer) : reclaimer_(reclaimer), slot_(nullptr) {
  std::lock_guard<std::mutex> lock(reclaimer->mu_);
  for (size_t i = 0; i < kMaxReaders; ++i) {
    Slot& s = reclaimer->slots_[i];
    if (s.taken) continue;
    s.taken = true;
    slot_ = &s.entered;
    // Sequentially consistent, like the slot stores: a collector that read the old count advanced the
    // epoch first, so this reader's first Enter() sees the new epoch.
    if (i >= reclaimer->slots_used_.load(std::memory_order_seq_cst)) {
      reclaimer->slots_used_.store(i + 1, std::memory_order_seq_cst);
    }
    return;
  }
}

Reclaimer::Reader::~Reader() {
  if (slot_ == nullptr) return;
  slot_->store(0, std::memory_order_release);
  std::lock_guard<std::mutex> lock(reclaimer_->mu_);
  for (size_t i = 0; i < kMaxReaders; ++i) {
    if (&reclaimer_->slots_[i].entered == slot_) reclaimer_->slots_[i].taken = false;
  }
}

void Reclaimer::Reader::Enter() {
  // Publish the epoch, then check it did not move meanwhile: a collector that read this slot as idle
  // before the store has advanced the epoch before reading, so the re-check sees that and retries with
  // the newer epoch (the one that no longer sees what the collector frees).
  uint64_t epoch = reclaimer_->epoch_.load(std::memory_order_seq_cst);
  for (;;) {
    slot_->store(epoch, std::memory_order_seq_cst);
    const uint64_t now = reclaimer_->epoch_.load(std::memory_order_seq_cst);
    if (now == epoch) return;
    epoch = now;
  }
}

void Reclaimer::Reader::Leave() { slot_->store(0, std::memory_order_release); }

uint64_t Reclaimer::OldestActive() const {
  uint64_t oldest = std::numeric_limits<uint64_t>::max();
  const size_t used = slots_used_.load(std::memory_order_seq_cst);
  for (size_t i = 0; i < used; ++i) {
    const uint64_t entered = slots_[i].entered.load(std::memory_order_seq_cst);
    if (entered != 0 && entered < oldest) oldest = entered;
  }
  return oldest;
}

void Reclaimer::Retire(std::function<void()> free) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t stamp = Stamp();
  const uint64_t oldest = OldestActive();
  if (pending_.empty() && stamp < oldest) {
    lock.unlock();  // nothing older waits and no reader can see it (no worker is inside a burst): free now
    free();
    return;
  }
  pending_.emplace_back(stamp, std::move(free));
  std::vector<std::function<void()>> ready;
  while (!pending_.empty() && pending_.front().first < oldest) {
    ready.push_back(std::move(pending_.front().second));
    pending_.pop_front();
  }
  lock.unlock();
  for (std::function<void()>& f : ready) f();
}

}  // namespace drsim::hw
