#include "hw/line_hash_map.h"

#include <cstdint>
#include <random>
#include <unordered_map>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

// Every key's home is one of the last five slots: probes wrap around the table's end, and an erase moves
// slots back across it.
struct Clustered {
  size_t operator()(uint32_t key) const { return ~size_t{0} - key % 5; }
};

// Checks that `map` holds exactly `model`'s keys, with their values, and no other key below `key_space`.
template <typename Map>
void ExpectSame(Map& map, const std::unordered_map<uint32_t, uint64_t>& model, uint32_t key_space) {
  ASSERT_EQ(map.size(), model.size());
  for (uint32_t key = 0; key < key_space; ++key) {
    const uint64_t* found = map.Find(key);
    auto it = model.find(key);
    if (it == model.end()) {
      EXPECT_EQ(found, nullptr) << "key " << key;
    } else {
      ASSERT_NE(found, nullptr) << "key " << key;
      EXPECT_EQ(*found, it->second) << "key " << key;
    }
  }
}

template <typename Hash>
void RandomOperationsMatchAModel(uint32_t key_space, int operations) {
  LineHashMap<uint32_t, uint64_t, Hash> map;
  std::unordered_map<uint32_t, uint64_t> model;
  std::mt19937 random(20261146);
  for (int op = 0; op < operations; ++op) {
    const uint32_t key = random() % key_space;
    if (random() % 2 == 0) {
      uint64_t& value = map.At(key);
      auto [it, added] = model.try_emplace(key, 0);
      ASSERT_EQ(value, it->second) << "At(" << key << ") at operation " << op;
      value = it->second = random();
    } else {
      map.Erase(key);
      model.erase(key);
    }
    if (op % 64 == 0) ExpectSame(map, model, key_space);
  }
  ExpectSame(map, model, key_space);
}

TEST(LineHashMapTest, EmptyFindsNothing) {
  LineHashMap<uint32_t, uint64_t> map;
  map.Request(7);
  map.Erase(7);
  EXPECT_EQ(map.Find(7), nullptr);
  EXPECT_EQ(map.size(), 0u);
}

TEST(LineHashMapTest, AtAddsAValueInitialisedValueOnceAndKeepsIt) {
  LineHashMap<uint32_t, uint64_t> map;
  EXPECT_EQ(map.At(3), 0u);
  map.At(3) = 42;
  EXPECT_EQ(map.At(3), 42u);
  EXPECT_EQ(map.size(), 1u);
  ASSERT_NE(map.Find(3), nullptr);
  EXPECT_EQ(*map.Find(3), 42u);
}

TEST(LineHashMapTest, RandomOperationsMatchAModel) {
  RandomOperationsMatchAModel<absl::Hash<uint32_t>>(3000, 200000);
}

TEST(LineHashMapTest, CollidingKeysThatWrapAroundMatchAModel) {
  // Few enough keys that the table stays at 64 slots, all homed in its last five.
  RandomOperationsMatchAModel<Clustered>(30, 20000);
}

TEST(LineHashMapTest, GrowsAndEmptiesAgain) {
  LineHashMap<uint32_t, uint64_t> map;
  constexpr uint32_t kKeys = 100000;
  for (uint32_t key = 0; key < kKeys; ++key) map.At(key) = uint64_t{key} * 3;
  ASSERT_EQ(map.size(), kKeys);
  for (uint32_t key = 0; key < kKeys; ++key) {
    ASSERT_NE(map.Find(key), nullptr) << key;
    EXPECT_EQ(*map.Find(key), uint64_t{key} * 3);
  }
  for (uint32_t key = 0; key < kKeys; key += 2) map.Erase(key);
  EXPECT_EQ(map.size(), kKeys / 2);
  for (uint32_t key = 0; key < kKeys; ++key) EXPECT_EQ(map.Find(key) != nullptr, key % 2 == 1) << key;
  for (uint32_t key = 1; key < kKeys; key += 2) map.Erase(key);
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.Find(1), nullptr);
}

}  // namespace
}  // namespace drsim::hw
