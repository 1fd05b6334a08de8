#include "hw/reclaimer.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

TEST(ReclaimerTest, WithoutReadersInsideFreesAtOnce) {
  Reclaimer r;
  Reclaimer::Reader reader(&r);
  int freed = 0;
  r.Retire([&] { ++freed; });
  EXPECT_EQ(freed, 1);
  reader.Enter();
  reader.Leave();
  r.Retire([&] { ++freed; });
  EXPECT_EQ(freed, 2);
}

TEST(ReclaimerTest, WaitsForEveryReaderThatEnteredBefore) {
  Reclaimer r;
  Reclaimer::Reader early(&r), late(&r);
  int freed = 0;
  early.Enter();
  r.Retire([&] { ++freed; });  // `early` may hold it
  late.Enter();                // entered after: cannot hold it, does not delay it
  r.Retire([] {});
  EXPECT_EQ(freed, 0);
  early.Leave();
  r.Retire([] {});  // collects what is safe now
  EXPECT_EQ(freed, 1);
  late.Leave();
}

TEST(ReclaimerTest, StampsBecomeSafeWhenOlderReadersLeave) {
  Reclaimer r;
  Reclaimer::Reader reader(&r);
  reader.Enter();
  const uint64_t stamp = r.Stamp();
  EXPECT_FALSE(r.Safe(stamp));
  reader.Leave();
  EXPECT_TRUE(r.Safe(stamp));
}

TEST(ReclaimerTest, DestructorRunsWhatIsPending) {
  int freed = 0;
  {
    Reclaimer r;
    Reclaimer::Reader reader(&r);
    reader.Enter();
    r.Retire([&] { ++freed; });
    reader.Leave();
    EXPECT_EQ(freed, 0);
  }
  EXPECT_EQ(freed, 1);
}

TEST(ReclaimerTest, SlotsRunOutAndComeBack) {
  Reclaimer r;
  std::vector<std::unique_ptr<Reclaimer::Reader>> readers;
  for (size_t i = 0; i < Reclaimer::kMaxReaders; ++i) {
    readers.push_back(std::make_unique<Reclaimer::Reader>(&r));
    ASSERT_TRUE(readers.back()->valid());
  }
  EXPECT_FALSE(Reclaimer::Reader(&r).valid());
  readers.pop_back();
  EXPECT_TRUE(Reclaimer::Reader(&r).valid());
}

// Readers follow a published pointer while a writer replaces and retires it: no reader may ever see a
// freed object (ASan and TSan report a use after free).
TEST(ReclaimerTest, PublishedValuesOutliveEveryReader) {
  Reclaimer r;
  Published<std::vector<int>> value;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      Reclaimer::Reader reader(&r);
      while (!stop.load(std::memory_order_relaxed)) {
        reader.Enter();
        const std::vector<int>& v = value.Read();
        for (int x : v) ASSERT_EQ(x, static_cast<int>(v.size()));
        reader.Leave();
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  // Until the readers have read a while too (on a busy machine they may start after 20000 publishes), but
  // not past a deadline: a reader whose check failed has stopped reading, and the test must end and say so.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 1; i <= 20000 || (reads.load(std::memory_order_relaxed) < 1000 &&
                                 std::chrono::steady_clock::now() < deadline);
       ++i)
    value.Publish(std::vector<int>(i % 64, i % 64), &r);
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_GT(reads.load(), 0u);
}

}  // namespace
}  // namespace drsim::hw
