// Reclaimer: deferred freeing for the structures the data path reads without locks (epoch-based
// reclamation, as RCU does it).
//
// The device's workers read match tables, matcher chains, rule records and action programs while the
// control path changes them. The control path never changes what a reader may be looking at: it builds
// the new version beside the old one, publishes it with one atomic store (Published<T> below, or a slot's
// record index in a match table), and hands the old one to Retire(). The old one is freed once every
// reader that could have loaded it has left its read section — so a packet sees a rule completely or not
// at all, and a delete never frees memory a worker still uses.
//
// Readers: each thread that reads registers a Reader and brackets its reads (a burst of packets) with
// Enter()/Leave(): two stores and a load, no shared writes. A reader must not stay inside a section for
// long: memory retired meanwhile waits for it.
//
// The epoch: a counter the control path advances on every retirement. A reader in a section publishes the
// epoch it entered at; something retired at stamp s is safe to free once no reader is inside a section it
// entered at an epoch <= s.
#ifndef DRSIM_HW_RECLAIMER_H_
#define DRSIM_HW_RECLAIMER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

namespace drsim::hw {

class Reclaimer {
 public:
  static constexpr size_t kMaxReaders = 256;

  Reclaimer();
  // Runs every pending free. No reader may be inside a section.
  ~Reclaimer();
  Reclaimer(const Reclaimer&) = delete;
  Reclaimer& operator=(const Reclaimer&) = delete;

  // A thread's registration as a reader. Not thread-safe itself: one thread uses it at a time.
  class Reader {
   public:
    // Takes a free reader slot; valid() is false when all kMaxReaders are taken.
    explicit Reader(Reclaimer* reclaimer);
    ~Reader();
    Reader(const Reader&) = delete;
    Reader& operator=(const Reader&) = delete;

    bool valid() const { return slot_ != nullptr; }
    // Reads made between Enter() and Leave() see only memory that is not freed until after Leave().
    void Enter();
    void Leave();

   private:
    Reclaimer* reclaimer_;
    std::atomic<uint64_t>* slot_;
  };

  // Frees with `free` once no reader can still see what the caller unlinked before this call. Thread-safe;
  // `free` runs on whichever control thread collects it (or in the destructor) and must only free memory.
  void Retire(std::function<void()> free);

  // For callers keeping their own deferred lists (a match table's reusable records): a stamp taken after
  // unlinking, and whether what was unlinked before that stamp can now be reused.
  uint64_t Stamp() { return epoch_.fetch_add(1, std::memory_order_seq_cst); }
  bool Safe(uint64_t stamp) const { return OldestActive() > stamp; }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> entered{0};  // 0: not in a section; else the epoch it entered at
    bool taken = false;                // guarded by mu_
  };
  // The smallest epoch a reader inside a section entered at; UINT64_MAX when none is.
  uint64_t OldestActive() const;

  std::atomic<uint64_t> epoch_{1};
  std::unique_ptr<Slot[]> slots_;
  std::atomic<size_t> slots_used_{0};                               // slots [0, slots_used_) may be taken
  std::mutex mu_;                                                   // slot registration and the pending list
  std::deque<std::pair<uint64_t, std::function<void()>>> pending_;  // by stamp, ascending
};

// Retires through `reclaimer`, or frees at once when there is none (no concurrent readers).
inline void Retire(Reclaimer* reclaimer, std::function<void()> free) {
  if (reclaimer != nullptr) {
    reclaimer->Retire(std::move(free));
  } else {
    free();
  }
}

// A value the data path reads without locks and the control path replaces whole: copy, change, Publish.
// Writers are serialised by the caller; Read() may run on any thread inside a read section, and the
// reference stays good until the section ends.
template <typename T>
class Published {
 public:
  Published() : current_(new T()) {}
  ~Published() { delete current_.load(std::memory_order_relaxed); }
  Published(const Published&) = delete;
  Published& operator=(const Published&) = delete;

  const T& Read() const { return *current_.load(std::memory_order_acquire); }
  void Publish(T value, Reclaimer* reclaimer) {
    const T* old = current_.exchange(new T(std::move(value)), std::memory_order_acq_rel);
    Retire(reclaimer, [old] { delete old; });
  }

 private:
  std::atomic<const T*> current_;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_RECLAIMER_H_
