#include "hw/lookup_memory.h"

#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

TEST(LookupMemoryTest, SmallBlocksAreCacheLineAligned) {
  void* p = AllocateLookupMemory(100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  std::memset(p, 0xab, 100);
  FreeLookupMemory(p, 100);
}

TEST(LookupMemoryTest, LargeBlocksAreHugePageAlignedAndWritable) {
  const size_t bytes = kHugePageBytes * 2 + 12345;
  auto* p = static_cast<uint8_t*>(AllocateLookupMemory(bytes));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  std::memset(p, 0x5a, bytes);
  EXPECT_EQ(p[0], 0x5a);
  EXPECT_EQ(p[bytes - 1], 0x5a);
  FreeLookupMemory(p, bytes);
}

TEST(SlabPoolTest, ObjectsAreDistinctAlignedAndReused) {
  SlabPool pool(40);
  std::set<uintptr_t> seen;
  std::vector<void*> objects;
  // More than one slab's worth (2 MiB / 48 bytes).
  for (int i = 0; i < 100000; ++i) {
    void* p = pool.Allocate();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 16, 0u);
    std::memset(p, i & 0xff, 40);
    EXPECT_TRUE(seen.insert(reinterpret_cast<uintptr_t>(p)).second) << "object " << i << " handed out twice";
    objects.push_back(p);
  }
  // Objects do not overlap: each still holds what was written into it.
  for (int i = 0; i < 100000; ++i) ASSERT_EQ(static_cast<uint8_t*>(objects[i])[39], i & 0xff);
  void* freed = objects.back();
  objects.pop_back();
  pool.Free(freed);
  EXPECT_EQ(pool.Allocate(), freed);  // reused before new memory is taken
  objects.push_back(freed);
  for (void* p : objects) pool.Free(p);
}

// Reserved slabs serve the objects that follow, with the newest slab's rest first: every object stays
// distinct and holds what was written into it, across the slabs reserved and the ones mapped after them.
TEST(SlabPoolTest, ReservedSlabsServeTheObjectsThatFollow) {
  SlabPool pool(48);
  const int per_slab = static_cast<int>(kHugePageBytes / 48);
  std::vector<void*> objects;
  std::set<uintptr_t> seen;
  auto take = [&](int count) {
    for (int i = 0; i < count; ++i) {
      void* p = pool.Allocate();
      ASSERT_TRUE(seen.insert(reinterpret_cast<uintptr_t>(p)).second) << "object handed out twice";
      std::memset(p, static_cast<int>(objects.size() & 0xff), 48);
      objects.push_back(p);
    }
  };
  take(10);
  pool.Reserve(3 * per_slab);
  pool.Reserve(per_slab);  // already there: maps nothing more
  take(3 * per_slab + 10);
  pool.Reserve(0);
  take(10);
  for (size_t i = 0; i < objects.size(); ++i) ASSERT_EQ(static_cast<uint8_t*>(objects[i])[47], i & 0xff);
  for (void* p : objects) pool.Free(p);
}

}  // namespace
}  // namespace drsim::hw
