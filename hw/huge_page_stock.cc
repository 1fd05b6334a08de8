#include "hw/huge_page_stock.h"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "hw/huge_page_map.h"
#include "hw/lookup_memory.h"

namespace drsim::hw {
namespace {

constexpr size_t kFirstStockedPages = 2;

// `bytes` (a multiple of kHugePageBytes) freshly mapped, huge-page aligned and advised. Memory the heap
// hands out again is already mapped in 4 KiB pages, which advice does not change: map a huge page more than
// needed and trim the ends to an aligned start.
void* MapFreshHugePages(size_t bytes) {
  void* map =
      mmap(nullptr, bytes + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = (reinterpret_cast<uintptr_t>(map) + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  const size_t head = start - reinterpret_cast<uintptr_t>(map);
  if (head != 0) munmap(map, head);
  if (head != kHugePageBytes) munmap(reinterpret_cast<void*>(start + bytes), kHugePageBytes - head);
  void* p = reinterpret_cast<void*>(start);
  madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

bool MayRunOnTwoCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return false;
  return CPU_COUNT(&set) >= 2;
}

// The process's stock (huge_page_stock.h, How).
class Stock {
 public:
  // Starts the thread for the first stocking (when `start` allows); returns whether it runs.
  bool Open(bool start) {
    std::lock_guard<std::mutex> lifetime(lifetime_mu_);
    if (stockings_ == 0) {
      if (!start) return false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = false;
        target_ = kFirstStockedPages;
        pages_.reserve(kMaxStockedPages);
      }
      try {
        thread_ = std::thread([this] { Fill(); });
      } catch (const std::system_error&) {
        return false;  // no thread to be had: the load maps its own pages, as on one CPU
      }
      open_.store(true, std::memory_order_release);
    }
    ++stockings_;
    return true;
  }

  // Ends a stocking Open returned true for; the last one stops the thread and unmaps the pages left.
  void Close() {
    std::lock_guard<std::mutex> lifetime(lifetime_mu_);
    if (--stockings_ != 0) return;
    open_.store(false, std::memory_order_release);
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (void* page : pages_) munmap(page, kHugePageBytes);
    pages_.clear();
  }

  // A page faulted in ahead, or nullptr.
  void* Take() {
    if (!open_.load(std::memory_order_acquire)) return nullptr;
    void* page = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (pages_.empty()) {
        ++counts_.missed;
      } else {
        page = pages_.back();
        pages_.pop_back();
        ++counts_.taken;
      }
      target_ = std::min(kMaxStockedPages, target_ + 1);
    }
    wake_.notify_one();
    return page;
  }

  HugePageStockCounts Counts() {
    std::lock_guard<std::mutex> lock(mu_);
    HugePageStockCounts counts = counts_;
    counts.ready = pages_.size();
    return counts;
  }

 private:
  // The thread: keeps target_ pages ready until stopped. A page that cannot be mapped ends the filling
  // (requests then map their own and fail there, where an error can be reported).
  void Fill() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (pages_.size() >= target_) {
        wake_.wait(lock);
        continue;
      }
      lock.unlock();
      void* page = nullptr;
      try {
        page = MapFreshHugePages(kHugePageBytes);
        TouchPages(page, kHugePageBytes);
      } catch (const std::bad_alloc&) {
      }
      lock.lock();
      if (page == nullptr) break;
      pages_.push_back(page);  // (reserved: never throws)
      ++counts_.faulted;
    }
  }

  std::mutex lifetime_mu_;  // orders Open and Close
  int stockings_ = 0;
  std::thread thread_;
  std::atomic<bool> open_{false};

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  size_t target_ = 0;
  std::vector<void*> pages_;
  HugePageStockCounts counts_;
};

// Never destroyed: lookup memory may be mapped by static destructors of any order.
Stock& ProcessStock() {
  static auto* const stock = new Stock;
  return *stock;
}

}  // namespace

HugePageStocking::HugePageStocking(When when)
    : stocking_(ProcessStock().Open(when == When::kAlways || MayRunOnTwoCpus())) {}

HugePageStocking::~HugePageStocking() {
  if (stocking_) ProcessStock().Close();
}

HugePageStockCounts HugePageStockCountsNow() { return ProcessStock().Counts(); }

namespace internal {

void* MapHugePages(size_t bytes) {
  Stock& stock = ProcessStock();
  if (bytes == kHugePageBytes) {
    if (void* page = stock.Take(); page != nullptr) return page;
    return MapFreshHugePages(bytes);
  }
  // A larger block is mapped whole, then stocked pages are moved over its first pages (the kernel moves a
  // huge page's mapping without copying it) until the stock runs out.
  auto* block = static_cast<char*>(MapFreshHugePages(bytes));
  for (size_t at = 0; at < bytes; at += kHugePageBytes) {
    void* page = stock.Take();
    if (page == nullptr) break;
    if (mremap(page, kHugePageBytes, kHugePageBytes, MREMAP_MAYMOVE | MREMAP_FIXED, block + at) ==
        MAP_FAILED) {
      munmap(page, kHugePageBytes);
      break;
    }
  }
  return block;
}

}  // namespace internal
}  // namespace drsim::hw
