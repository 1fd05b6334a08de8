#include "hw/lookup_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <set>
#include <thread>
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

TEST(SmallBlockArenaTest, ClassesPadLittle) {
  EXPECT_EQ(SmallBlockArena::BlockBytes(1), 64u);
  EXPECT_EQ(SmallBlockArena::BlockBytes(64), 64u);
  EXPECT_EQ(SmallBlockArena::BlockBytes(65), 128u);
  EXPECT_EQ(SmallBlockArena::BlockBytes(1024), 1024u);
  EXPECT_EQ(SmallBlockArena::BlockBytes(1025), 1280u);
  EXPECT_EQ(SmallBlockArena::BlockBytes(2048), 2048u);
  EXPECT_EQ(SmallBlockArena::BlockBytes(2049), 2560u);
  EXPECT_EQ(SmallBlockArena::BlockBytes(SmallBlockArena::kMaxBytes), kHugePageBytes);
  for (size_t bytes = 1; bytes <= SmallBlockArena::kMaxBytes; bytes += bytes / 7 + 1) {
    const size_t block = SmallBlockArena::BlockBytes(bytes);
    ASSERT_EQ(block % 64, 0u) << bytes;
    ASSERT_GE(block, bytes);
    if (bytes <= 1024) {
      ASSERT_LT(block - bytes, 64u) << bytes;
    } else {
      ASSERT_LT(block - bytes, block / 5) << bytes;
    }
    // Classes are monotonic: a block fits every smaller request.
    ASSERT_LE(SmallBlockArena::BlockBytes(bytes - 1 + (bytes == 1)), block) << bytes;
  }
}

// Blocks of mixed sizes over several slabs: aligned, distinct, each keeping what was written into it; a freed
// block serves the next request of its class.
TEST(SmallBlockArenaTest, BlocksAreAlignedDistinctAndReused) {
  SmallBlockArena arena;
  struct Block {
    uint8_t* p;
    size_t bytes;
  };
  std::vector<Block> blocks;
  const size_t sizes[] = {1, 40, 64, 100, 320, 1216, 4000, 70000, 300000};
  size_t total = 0;
  for (int i = 0; total < 3 * kHugePageBytes; ++i) {
    const size_t bytes = sizes[i % std::size(sizes)];
    auto* p = static_cast<uint8_t*>(arena.Allocate(bytes));
    ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, i & 0xff, bytes);
    blocks.push_back({p, bytes});
    total += bytes;
  }
  std::set<std::pair<uintptr_t, uintptr_t>> spans;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const auto begin = reinterpret_cast<uintptr_t>(blocks[i].p);
    ASSERT_EQ(blocks[i].p[0], i & 0xff);
    ASSERT_EQ(blocks[i].p[blocks[i].bytes - 1], i & 0xff);
    spans.insert({begin, begin + blocks[i].bytes});
  }
  for (auto it = spans.begin(); std::next(it) != spans.end(); ++it) {
    ASSERT_LE(it->second, std::next(it)->first) << "blocks overlap";
  }
  void* freed = blocks[5].p;
  arena.Free(freed, blocks[5].bytes);
  EXPECT_EQ(arena.Allocate(blocks[5].bytes - 1), freed);  // the same class
  for (const Block& b : blocks) arena.Free(b.p, b.bytes);
}

// A request the newest slab cannot hold starts a slab; what the old one had left serves other requests.
TEST(SmallBlockArenaTest, ASlabsRestServesSmallerBlocks) {
  SmallBlockArena arena;
  constexpr size_t kLarge = 1536 * 1024;
  auto* first = static_cast<char*>(arena.Allocate(kLarge));
  auto* second = static_cast<char*>(arena.Allocate(kLarge));
  EXPECT_TRUE(second < first || second >= first + kHugePageBytes) << "two large blocks in one slab";
  auto* rest = static_cast<char*>(arena.Allocate(kHugePageBytes - kLarge));
  EXPECT_EQ(rest, first + kLarge);
  arena.Free(first, kLarge);
  arena.Free(second, kLarge);
  arena.Free(rest, kHugePageBytes - kLarge);
}

// Two threads take and give back blocks at once: no block is handed to both (each keeps its mark).
TEST(SmallBlockArenaTest, ThreadsShareIt) {
  SmallBlockArena arena;
  auto churn = [&arena](uint8_t mark) {
    std::vector<std::pair<uint8_t*, size_t>> kept;
    for (int round = 0; round < 3000; ++round) {
      const size_t bytes = 64 + round % 13 * 100;
      auto* p = static_cast<uint8_t*>(arena.Allocate(bytes));
      std::memset(p, mark, bytes);
      if (round % 3 == 0) {
        arena.Free(p, bytes);  // for either thread's next block of its class
      } else {
        kept.emplace_back(p, bytes);
      }
    }
    for (const auto& [p, bytes] : kept) {
      EXPECT_EQ(p[0], mark);
      EXPECT_EQ(p[bytes - 1], mark);
      arena.Free(p, bytes);
    }
  };
  std::thread other(churn, 0xa5);
  churn(0x5a);
  other.join();
}

}  // namespace
}  // namespace drsim::hw
