// Huge pages faulted in ahead, by a thread of their own, for a bulk load to take.
//
// What
//   A load of a million rules maps about 300 MB of lookup memory, most of it one 2 MiB page at a time (the
//   slabs of rule pools and of the small-block arena). The kernel zeroes each page on its first touch, and
//   on a virtual machine whose host takes back the pages its guest frees, that first touch also waits for
//   the host to back the page again: up to 0.9 s of system time a million rules, on the thread that loads
//   them. While a HugePageStocking lives, a second thread keeps a few such pages mapped and touched, and
//   lookup memory's requests take them, so the faults run beside the load instead of in it.
//
// How
//   The process has one stock. The first HugePageStocking starts its thread, if the process may run on two
//   CPUs or more (on one, the thread would only take turns with the load and add its switches); the last
//   one stops it and unmaps the pages left. The stock holds two pages at first and one more for each page
//   asked for, up to kMaxStockedPages, so a short load faults in little it does not use. A request that finds
//   the stock empty maps its page itself, as without a stock. A larger request (a match table's buckets, a
//   table's records) is mapped whole, and stocked pages are moved over its pages (mremap moves a huge page's
//   mapping without copying it) while the stock has them.
//
// Thread-safety
//   Thread-safe. Stockings may be made and destroyed on any threads; a page is taken under the stock's
//   mutex, and when no stocking lives a request reads only an atomic flag.
#ifndef DRSIM_HW_HUGE_PAGE_STOCK_H_
#define DRSIM_HW_HUGE_PAGE_STOCK_H_

#include <cstddef>

namespace drsim::hw {

inline constexpr size_t kMaxStockedPages = 8;  // 16 MiB

class HugePageStocking {
 public:
  enum class When {
    kTwoCpusOrMore,  // only if the process's affinity allows two CPUs or more
    kAlways,         // tests: on one CPU too
  };
  explicit HugePageStocking(When when = When::kTwoCpusOrMore);
  ~HugePageStocking();
  HugePageStocking(const HugePageStocking&) = delete;
  HugePageStocking& operator=(const HugePageStocking&) = delete;

  // Whether this stocking keeps the stock's thread running (false where it was not started: one CPU).
  bool stocking() const { return stocking_; }

 private:
  bool stocking_;
};

// What the process's stock has done since it started, for tests and benches.
struct HugePageStockCounts {
  size_t faulted = 0;  // pages the thread mapped and touched
  size_t taken = 0;    // pages lookup memory took from it
  size_t missed = 0;   // single pages asked for while it was empty (mapped by the caller)
  size_t ready = 0;    // pages in it now
};
HugePageStockCounts HugePageStockCountsNow();

}  // namespace drsim::hw

#endif  // DRSIM_HW_HUGE_PAGE_STOCK_H_
