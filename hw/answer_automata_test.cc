#include "hw/answer_automata.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

using Rule = AnswerAutomata::Rule;

bool Matches(const Rule& rule, const std::array<uint32_t, 4>& words) {
  for (int w = 0; w < 4; ++w) {
    if ((words[w] & rule.mask[w]) != (rule.value[w] & rule.mask[w])) return false;
  }
  return true;
}

// The reference: every rule the packet matches, in rank order, up to the first that ends the search.
std::vector<uint32_t> FirstMatches(const std::vector<Rule>& rules, const std::array<uint32_t, 4>& words) {
  std::vector<uint32_t> out;
  for (uint32_t r = 0; r < rules.size(); ++r) {
    if (!Matches(rules[r], words)) continue;
    out.push_back(r);
    if (rules[r].ends_search) break;
  }
  return out;
}

// The descents this CPU can take.
std::vector<AnswerAutomata::Descent> Descents() {
  std::vector<AnswerAutomata::Descent> out = {AnswerAutomata::Descent::kScalar};
  if (AnswerAutomata::CpuHas(AnswerAutomata::Descent::kAvx512))
    out.push_back(AnswerAutomata::Descent::kAvx512);
  return out;
}

// What the automata say: each one's leaf, merged in rank order, up to the first that ends the search.
std::vector<uint32_t> FromAutomata(const AnswerAutomata& automata, const std::vector<Rule>& rules,
                                   const std::array<uint32_t, 4>& words,
                                   AnswerAutomata::Descent descent = AnswerAutomata::Descent::kScalar) {
  std::array<AnswerAutomata::Key, AnswerAutomata::kBurst> keys{};
  keys[0] = automata.KeyOf(words.data());
  std::vector<uint32_t> all;
  for (size_t a = 0; a < automata.automata(); ++a) {
    std::array<uint64_t, AnswerAutomata::kBurst> leaf;
    automata.Descend(a, keys.data(), 1, leaf.data(), descent);
    for (uint32_t k = 0; k < AnswerAutomata::LeafSize(leaf[0]); ++k)
      all.push_back(automata.LeafRule(leaf[0], k));
  }
  std::sort(all.begin(), all.end());
  for (size_t k = 0; k < all.size(); ++k) {
    if (rules[all[k]].ends_search) {
      all.resize(k + 1);
      break;
    }
  }
  return all;
}

uint32_t PrefixMask(int bits) { return bits == 0 ? 0 : ~uint32_t{0} << (32 - bits); }

// ACL-like rules: address prefixes, a ports word of two prefixes, a protocol exact or wild; some with a
// mask that is no prefix (testing single bits), most ending the search.
std::vector<Rule> RandomRules(std::mt19937* rng, size_t n) {
  std::vector<Rule> rules(n);
  std::vector<uint32_t> bases;
  for (int i = 0; i < 8; ++i) bases.push_back((*rng)());
  for (Rule& rule : rules) {
    for (int w = 0; w < 2; ++w) {
      const int bits = std::array<int, 6>{0, 8, 16, 24, 28, 32}[(*rng)() % 6];
      rule.mask[w] = PrefixMask(bits);
      rule.value[w] = (bases[(*rng)() % bases.size()] ^ ((*rng)() & 0xff)) & rule.mask[w];
    }
    const int sport = std::array<int, 3>{0, 10, 16}[(*rng)() % 3];
    const int dport = std::array<int, 4>{0, 6, 12, 16}[(*rng)() % 4];
    rule.mask[2] = PrefixMask(sport) | (PrefixMask(dport) >> 16);
    rule.value[2] = ((*rng)() % 4 * 0x04000400u) & rule.mask[2];
    rule.mask[3] = (*rng)() % 2 ? 0xff000000u : 0;
    if ((*rng)() % 8 == 0) rule.mask[3] = 0x0f0f0000u;  // no prefix: every byte value tested alone
    rule.value[3] = (std::array<uint32_t, 3>{6, 17, 1}[(*rng)() % 3] << 24 | 0x05000000u) & rule.mask[3];
    rule.ends_search = (*rng)() % 5 != 0;
  }
  return rules;
}

// Packets that mostly fall under some rule's key, with random bits where it is wild.
std::vector<std::array<uint32_t, 4>> PacketsFor(std::mt19937* rng, const std::vector<Rule>& rules, size_t n) {
  std::vector<std::array<uint32_t, 4>> packets(n);
  for (auto& words : packets) {
    const Rule& rule = rules[(*rng)() % rules.size()];
    for (int w = 0; w < 4; ++w) words[w] = (rule.value[w] & rule.mask[w]) | ((*rng)() & ~rule.mask[w]);
    if ((*rng)() % 10 == 0) words[(*rng)() % 4] ^= 1u << ((*rng)() % 32);
  }
  return packets;
}

TEST(AnswerAutomataTest, LeavesListTheFirstMatchesOfEveryPacket) {
  std::mt19937 rng(20261201);
  for (size_t n : {0, 1, 2, 30, 400, 1500}) {
    const std::vector<Rule> rules = n == 0 ? std::vector<Rule>{} : RandomRules(&rng, n);
    const auto automata = AnswerAutomata::Build(rules, AnswerAutomata::Limits{});
    ASSERT_NE(automata, nullptr) << n << " rules";
    if (rules.empty()) {
      EXPECT_TRUE(FromAutomata(*automata, rules, {1, 2, 3, 4}).empty());
      continue;
    }
    for (const auto& words : PacketsFor(&rng, rules, 1000)) {
      for (const AnswerAutomata::Descent descent : Descents()) {
        ASSERT_EQ(FromAutomata(*automata, rules, words, descent), FirstMatches(rules, words))
            << n << " rules, descent " << static_cast<int>(descent) << ", packet " << words[0] << " "
            << words[1] << " " << words[2] << " " << words[3];
      }
    }
  }
}

// `n` random rules, with their automaton under the default limits (one: the tests below split it).
std::pair<std::vector<Rule>, std::unique_ptr<AnswerAutomata>> RulesInOneAutomaton(std::mt19937* rng,
                                                                                  size_t n) {
  std::vector<Rule> rules = RandomRules(rng, n);
  auto one = AnswerAutomata::Build(rules, AnswerAutomata::Limits{});
  EXPECT_NE(one, nullptr);
  if (one != nullptr) {
    EXPECT_EQ(one->automata(), 1u);
  }
  return {std::move(rules), std::move(one)};
}

// Every descent of `automata` leads `packets` packets made for `rules` to their first matches.
void ExpectFirstMatchesOf(std::mt19937* rng, const AnswerAutomata& automata, const std::vector<Rule>& rules,
                          size_t packets) {
  for (const auto& words : PacketsFor(rng, rules, packets)) {
    for (const AnswerAutomata::Descent descent : Descents())
      ASSERT_EQ(FromAutomata(automata, rules, words, descent), FirstMatches(rules, words));
  }
}

TEST(AnswerAutomataTest, SplitsWhenOneWouldBeTooLarge) {
  std::mt19937 rng(20261202);
  const auto [rules, one] = RulesInOneAutomaton(&rng, 400);
  ASSERT_NE(one, nullptr);
  AnswerAutomata::Limits count;
  count.max_automata = 1;
  size_t low = 1, high = size_t{1} << 18;
  // The least state limit the whole set builds under in one automaton; one below it forces the split.
  while (low < high) {
    count.max_states = (low + high) / 2;
    const auto built = AnswerAutomata::Build(rules, count);
    if (built != nullptr && built->automata() == 1) {
      high = count.max_states;
    } else {
      low = count.max_states + 1;
    }
  }
  count.max_states = low - 1;
  count.max_automata = AnswerAutomata::Limits{}.max_automata;
  const auto split = AnswerAutomata::Build(rules, count);
  ASSERT_NE(split, nullptr) << "the runs build under " << count.max_states << " states";
  EXPECT_GT(split->automata(), 1u);
  for (size_t a = 1; a < split->automata(); ++a) EXPECT_LT(split->least_rule(a - 1), split->least_rule(a));
  ExpectFirstMatchesOf(&rng, *split, rules, 3000);
}

TEST(AnswerAutomataTest, SplitsIntoAutomataOfAtMostTheSplitsCells) {
  std::mt19937 rng(20261205);
  const auto [rules, one] = RulesInOneAutomaton(&rng, 600);
  ASSERT_NE(one, nullptr);
  AnswerAutomata::Limits small;
  small.max_cells = one->cells() - 1;
  small.split_cells = one->cells() / 3;
  small.max_automata = 16;
  const auto split = AnswerAutomata::Build(rules, small);
  ASSERT_NE(split, nullptr);
  EXPECT_GE(split->automata(), 2u);
  EXPECT_LE(split->cells(), split->automata() * small.split_cells);
  ExpectFirstMatchesOf(&rng, *split, rules, 3000);
  // One automaton fewer than the split needs, or a budget of work too small for its builds: refused.
  AnswerAutomata::Limits fewer = small;
  fewer.max_automata = split->automata() - 1;
  EXPECT_EQ(AnswerAutomata::Build(rules, fewer), nullptr);
  AnswerAutomata::Limits no_work = small;
  no_work.split_work = 1000;
  EXPECT_EQ(AnswerAutomata::Build(rules, no_work), nullptr);
}

TEST(AnswerAutomataTest, RefusesASetPastItsLimits) {
  std::mt19937 rng(20261203);
  const std::vector<Rule> rules = RandomRules(&rng, 500);
  AnswerAutomata::Limits none;
  none.max_states = 4;
  EXPECT_EQ(AnswerAutomata::Build(rules, none), nullptr);
  AnswerAutomata::Limits no_cells;
  no_cells.max_cells = 8;
  EXPECT_EQ(AnswerAutomata::Build(rules, no_cells), nullptr);
}

TEST(AnswerAutomataTest, DescendsABurstAsItDoesEachPacket) {
  std::mt19937 rng(20261204);
  const std::vector<Rule> rules = RandomRules(&rng, 1000);
  const auto automata = AnswerAutomata::Build(rules, AnswerAutomata::Limits{});
  ASSERT_NE(automata, nullptr);
  const auto packets = PacketsFor(&rng, rules, AnswerAutomata::kBurst);
  std::array<AnswerAutomata::Key, AnswerAutomata::kBurst> keys;
  for (size_t j = 0; j < keys.size(); ++j) keys[j] = automata->KeyOf(packets[j].data());
  for (size_t a = 0; a < automata->automata(); ++a) {
    for (const AnswerAutomata::Descent descent : Descents()) {
      for (const uint32_t going : {0xdeadbeefu, ~0u, 1u, 0x80000000u}) {
        std::array<uint64_t, AnswerAutomata::kBurst> together;
        automata->Descend(a, keys.data(), going, together.data(), descent);
        for (size_t j = 0; j < keys.size(); ++j) {
          if ((going >> j & 1) == 0) continue;
          std::array<AnswerAutomata::Key, AnswerAutomata::kBurst> one{};
          one[0] = keys[j];
          std::array<uint64_t, AnswerAutomata::kBurst> alone;
          automata->Descend(a, one.data(), 1, alone.data(), AnswerAutomata::Descent::kScalar);
          EXPECT_EQ(together[j], alone[0]) << "packet " << j << ", descent " << static_cast<int>(descent);
        }
      }
    }
  }
}

// A byte every rule tests under one mask that is no prefix (a flags field) is masked in the key, and its
// tests become ranges: the automaton stays small, and packets whose other bits there differ still match.
TEST(AnswerAutomataTest, MasksAFlagsByteInTheKey) {
  std::mt19937 rng(20261205);
  std::vector<Rule> rules = RandomRules(&rng, 600);
  // The same tests of four bits as a prefix of the byte (a range of its values), for the size.
  std::vector<Rule> as_prefix = rules;
  for (size_t r = 0; r < rules.size(); ++r) {
    const uint32_t flags = rng() % 16;
    rules[r].mask[3] = (rules[r].mask[3] & 0xff000000u) | 0x00001e00u;
    rules[r].value[3] = (rules[r].value[3] & 0xff000000u) | flags << 9;
    as_prefix[r].mask[3] = (as_prefix[r].mask[3] & 0xff000000u) | 0x0000f000u;
    as_prefix[r].value[3] = (as_prefix[r].value[3] & 0xff000000u) | flags << 12;
  }
  const auto automata = AnswerAutomata::Build(rules, AnswerAutomata::Limits{});
  const auto prefix_automata = AnswerAutomata::Build(as_prefix, AnswerAutomata::Limits{});
  ASSERT_NE(automata, nullptr);
  ASSERT_NE(prefix_automata, nullptr);
  // About the same size (compared value by value, each state at the byte would be a full node of 256
  // cells; the masked key's values the mask never yields still part its ranges, so not the very same).
  EXPECT_LT(automata->cells(), prefix_automata->cells() * 11 / 10);
  for (auto words : PacketsFor(&rng, rules, 3000)) {
    words[3] ^= rng() & 0x0000e1ffu;  // (bits no rule tests)
    for (const AnswerAutomata::Descent descent : Descents())
      ASSERT_EQ(FromAutomata(*automata, rules, words, descent), FirstMatches(rules, words));
  }
}

}  // namespace
}  // namespace drsim::hw
