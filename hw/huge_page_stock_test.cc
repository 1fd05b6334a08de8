#include "hw/huge_page_stock.h"

#include <sched.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "hw/lookup_memory.h"

namespace drsim::hw {
namespace {

// Waits (up to 10 s) until the stock holds `pages` pages.
bool WaitForReady(size_t pages) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (HugePageStockCountsNow().ready < pages) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

TEST(HugePageStockTest, SinglePagesComeFromTheStock) {
  HugePageStocking stocking(HugePageStocking::When::kAlways);
  ASSERT_TRUE(stocking.stocking());
  ASSERT_TRUE(WaitForReady(2));
  const HugePageStockCounts before = HugePageStockCountsNow();
  auto* page = static_cast<uint8_t*>(AllocateLookupMemory(kHugePageBytes));
  const HugePageStockCounts after = HugePageStockCountsNow();
  EXPECT_EQ(after.taken, before.taken + 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(page) % kHugePageBytes, 0u);
  std::memset(page, 0x5a, kHugePageBytes);
  EXPECT_EQ(page[kHugePageBytes - 1], 0x5a);
  FreeLookupMemory(page, kHugePageBytes);
}

// A larger block takes stocked pages for its first pages, as far as the stock has them.
TEST(HugePageStockTest, LargerBlocksTakeStockedPages) {
  HugePageStocking stocking(HugePageStocking::When::kAlways);
  ASSERT_TRUE(WaitForReady(2));
  const HugePageStockCounts before = HugePageStockCountsNow();
  const size_t bytes = 5 * kHugePageBytes;
  auto* block = static_cast<uint8_t*>(AllocateLookupMemory(bytes));
  const HugePageStockCounts after = HugePageStockCountsNow();
  EXPECT_GE(after.taken, before.taken + 2);
  EXPECT_LE(after.taken, before.taken + 5);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(block) % kHugePageBytes, 0u);
  for (size_t page = 0; page < 5; ++page)
    std::memset(block + page * kHugePageBytes, int(page + 1), kHugePageBytes);
  for (size_t page = 0; page < 5; ++page) {
    EXPECT_EQ(block[page * kHugePageBytes], page + 1);
    EXPECT_EQ(block[(page + 1) * kHugePageBytes - 1], page + 1);
  }
  FreeLookupMemory(block, bytes);
}

// The stock grows by a page for each page taken, to kMaxStockedPages; pages taken are distinct.
TEST(HugePageStockTest, GrowsWithWhatIsTakenUpToItsLimit) {
  HugePageStocking stocking(HugePageStocking::When::kAlways);
  ASSERT_TRUE(WaitForReady(2));
  const HugePageStockCounts start = HugePageStockCountsNow();
  std::set<void*> pages;
  for (size_t i = 0; i < 3 * kMaxStockedPages; ++i) {
    pages.insert(AllocateLookupMemory(kHugePageBytes));
    EXPECT_LE(HugePageStockCountsNow().ready, kMaxStockedPages);
  }
  EXPECT_EQ(pages.size(), 3 * kMaxStockedPages);
  ASSERT_TRUE(WaitForReady(kMaxStockedPages));
  const HugePageStockCounts end = HugePageStockCountsNow();
  EXPECT_EQ(end.ready, kMaxStockedPages);
  EXPECT_EQ(end.taken - start.taken + end.missed - start.missed, 3 * kMaxStockedPages);
  EXPECT_GT(end.taken, start.taken);
  for (void* page : pages) FreeLookupMemory(page, kHugePageBytes);
}

// The last stocking stops the thread and unmaps what is left; requests then map their own. A stocking
// made while another lives shares its thread.
TEST(HugePageStockTest, TheLastStockingEmptiesIt) {
  {
    HugePageStocking outer(HugePageStocking::When::kAlways);
    {
      HugePageStocking inner(HugePageStocking::When::kAlways);
      ASSERT_TRUE(inner.stocking());
      ASSERT_TRUE(WaitForReady(2));
    }
    const size_t taken = HugePageStockCountsNow().taken;
    void* page = AllocateLookupMemory(kHugePageBytes);
    EXPECT_EQ(HugePageStockCountsNow().taken, taken + 1);
    FreeLookupMemory(page, kHugePageBytes);
  }
  const HugePageStockCounts closed = HugePageStockCountsNow();
  EXPECT_EQ(closed.ready, 0u);
  void* page = AllocateLookupMemory(kHugePageBytes);
  const HugePageStockCounts after = HugePageStockCountsNow();
  EXPECT_EQ(after.taken, closed.taken);
  EXPECT_EQ(after.missed, closed.missed);
  FreeLookupMemory(page, kHugePageBytes);
}

// Two threads take pages at once: each page goes to one of them (each keeps its mark).
TEST(HugePageStockTest, ThreadsShareIt) {
  HugePageStocking stocking(HugePageStocking::When::kAlways);
  auto take = [](uint8_t mark, std::vector<uint8_t*>* pages) {
    for (int i = 0; i < 24; ++i) {
      auto* page = static_cast<uint8_t*>(AllocateLookupMemory(kHugePageBytes));
      std::memset(page, mark, kHugePageBytes);
      pages->push_back(page);
    }
  };
  std::vector<uint8_t*> a, b;
  std::thread other(take, 0xa5, &a);
  take(0x5a, &b);
  other.join();
  for (uint8_t* page : a) EXPECT_EQ(page[kHugePageBytes / 2], 0xa5);
  for (uint8_t* page : b) EXPECT_EQ(page[kHugePageBytes / 2], 0x5a);
  for (uint8_t* page : a) FreeLookupMemory(page, kHugePageBytes);
  for (uint8_t* page : b) FreeLookupMemory(page, kHugePageBytes);
}

// On one CPU a stocking starts no thread: it would only take turns with the load.
TEST(HugePageStockTest, OneCpuStartsNoThread) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  {
    HugePageStocking stocking;
    EXPECT_FALSE(stocking.stocking());
    const size_t missed = HugePageStockCountsNow().missed;
    void* page = AllocateLookupMemory(kHugePageBytes);
    EXPECT_EQ(HugePageStockCountsNow().missed, missed);  // no stock was asked
    FreeLookupMemory(page, kHugePageBytes);
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
  if (CPU_COUNT(&all) >= 2) {
    HugePageStocking stocking;
    EXPECT_TRUE(stocking.stocking());
  }
}

}  // namespace
}  // namespace drsim::hw
