// drctl against an independent model: random testpmd rule files (IPv4 prefixes, addresses, TCP/UDP
// ports, priorities, marks, queues, drops) and random frames go through `drctl run`, and every line of the
// verdict file is compared with what a brute-force classifier written from the documented semantics says:
// rte_flow's item semantics, DR's matcher order (priority, then the newest matcher of equal priority), the
// oldest of duplicate rules, and a NIC_RX miss dropped.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "hw/net_addr.h"
#include "sim/frame_builder.h"
#include "sim/pcap_file.h"
#include "tools/drctl.h"

namespace drsim::tools {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name);
}

enum class L4 { kNone, kTcp, kUdp };

// One random rule, in the model's terms.
struct ModelRule {
  int priority;
  uint32_t src, src_mask;  // src_mask 0: no src field
  std::optional<uint32_t> dst;
  L4 l4;
  std::optional<uint16_t> dport;  // only with l4
  bool drop;
  int queue;
  std::optional<uint32_t> mark;

  // What makes DR put two rules in one matcher: priority and mask.
  auto MatcherKey() const {
    return std::make_tuple(priority, src_mask, dst.has_value(), l4 != L4::kNone,
                           dport.has_value() ? static_cast<int>(l4) : 0);
  }
  bool Matches(uint32_t fsrc, uint32_t fdst, uint8_t proto, uint16_t fdport) const {
    if ((fsrc & src_mask) != (src & src_mask)) return false;
    if (dst && *dst != fdst) return false;
    if (l4 == L4::kTcp && proto != 6) return false;
    if (l4 == L4::kUdp && proto != 17) return false;
    if (dport && *dport != fdport) return false;
    return true;
  }
};

std::string Ip(uint32_t v) { return hw::Ipv4Address{v}.ToString(); }

// The rule as a testpmd command in group 1 (the root jumps there), in one of testpmd's spellings.
std::string Command(const ModelRule& r, std::mt19937& rng) {
  std::string pattern = "eth / ipv4";
  if (r.src_mask != 0) {
    const int prefix = __builtin_popcount(r.src_mask);
    if (prefix == 32 && rng() % 2) {
      absl::StrAppend(&pattern, " src is ", Ip(r.src));
    } else if (rng() % 2) {
      absl::StrAppend(&pattern, " src spec ", Ip(r.src), " src prefix ", prefix);
    } else {
      absl::StrAppend(&pattern, " src spec ", Ip(r.src), " src mask ", Ip(r.src_mask));
    }
  }
  if (r.dst) absl::StrAppend(&pattern, " dst is ", Ip(*r.dst));
  if (r.l4 != L4::kNone) absl::StrAppend(&pattern, r.l4 == L4::kTcp ? " / tcp" : " / udp");
  if (r.dport) absl::StrAppend(&pattern, " dst is ", *r.dport);
  std::string actions;
  if (r.drop) {
    actions = "drop";
  } else {
    if (r.mark) absl::StrAppend(&actions, "mark id ", *r.mark, " / ");
    if (rng() % 4 == 0) absl::StrAppend(&actions, "count / ");
    absl::StrAppend(&actions, "queue index ", r.queue);
  }
  return absl::StrFormat("flow create 0 ingress group 1 priority %d pattern %s / end actions %s / end",
                         r.priority, pattern, actions);
}

constexpr uint32_t kNet = 0x0a000000;  // 10.0.0.0: addresses are drawn from 10.0.0.0/22 and 10.1.0.0/30
constexpr uint16_t kPorts[] = {53, 80, 443, 8080};

uint32_t RandomAddress(std::mt19937& rng) {
  return rng() % 4 == 0 ? 0x0a010000 | (rng() % 4) : kNet | (rng() % 4) << 8 | (rng() % 4);
}

ModelRule RandomRule(std::mt19937& rng) {
  ModelRule r;
  r.priority = static_cast<int>(rng() % 4);
  r.src = RandomAddress(rng);
  static constexpr uint32_t kMasks[] = {0, 0xff000000, 0xffff0000, 0xffffff00, 0xffffffff};
  r.src_mask = kMasks[rng() % 5];
  r.src &= r.src_mask;  // testpmd would match the masked value anyway; keep the file tidy
  if (rng() % 2) r.dst = RandomAddress(rng);
  r.l4 = static_cast<L4>(rng() % 3);
  if (r.l4 != L4::kNone && rng() % 2) r.dport = kPorts[rng() % 4];
  r.drop = rng() % 5 == 0;
  r.queue = static_cast<int>(rng() % 16);
  if (rng() % 2) r.mark = rng() % 100000;
  return r;
}

struct Frame {
  uint32_t src, dst;
  uint8_t proto;
  uint16_t dport;
};

Frame RandomFrame(std::mt19937& rng) {
  static constexpr uint8_t kProtos[] = {6, 17, 1};
  const uint16_t dport = rng() % 3 == 0 ? static_cast<uint16_t>(1024 + rng() % 1000) : kPorts[rng() % 4];
  return {RandomAddress(rng), RandomAddress(rng), kProtos[rng() % 3], dport};
}

std::vector<uint8_t> Build(const Frame& f) {
  sim::FrameSpec s;
  s.ipv4_src.value = f.src;
  s.ipv4_dst.value = f.dst;
  s.protocol = f.proto;
  s.sport = 40000;
  s.dport = f.dport;
  return sim::BuildFrame(s);
}

// The matchers in the order DR walks them, each as its first rule's index: ascending priority, and among
// equal priorities the newest first (a matcher is created by the first rule with its key; nothing is
// destroyed here).
std::vector<size_t> MatcherOrder(const std::vector<ModelRule>& rules) {
  std::vector<std::tuple<int, int, size_t>> order;  // (priority, -creation, first rule)
  std::vector<decltype(rules[0].MatcherKey())> keys;
  for (size_t i = 0; i < rules.size(); ++i) {
    bool seen = false;
    for (const auto& k : keys) seen |= k == rules[i].MatcherKey();
    if (seen) continue;
    keys.push_back(rules[i].MatcherKey());
    order.emplace_back(rules[i].priority, -static_cast<int>(keys.size()), i);
  }
  std::sort(order.begin(), order.end());
  std::vector<size_t> firsts;
  for (const auto& [priority, creation, first] : order) firsts.push_back(first);
  return firsts;
}

// The model's verdict line for frame `index`, given the rules' MatcherOrder.
std::string Expected(const std::vector<ModelRule>& rules, const std::vector<size_t>& matchers, size_t index,
                     const Frame& f) {
  for (size_t first : matchers) {
    // In one matcher, of rules that match (duplicates, necessarily), the oldest wins.
    for (size_t i = first; i < rules.size(); ++i) {
      const ModelRule& r = rules[i];
      if (r.MatcherKey() != rules[first].MatcherKey() || !r.Matches(f.src, f.dst, f.proto, f.dport)) continue;
      if (r.drop) return absl::StrCat(index, " drop");
      return absl::StrCat(index, " queue:0/", r.queue, r.mark ? absl::StrCat(" tag=", *r.mark) : "");
    }
  }
  return absl::StrCat(index, " drop");  // NIC_RX's default
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DrctlDifferentialTest, VerdictsAgreeWithABruteForceModel) {
  constexpr int kSeeds = 4, kRules = 150, kFrames = 1500;
  int compared = 0, hits = 0;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    std::mt19937 rng(seed);
    std::vector<ModelRule> rules;
    std::string text = "flow create 0 ingress pattern end actions jump group 1 / end\n";
    for (int i = 0; i < kRules; ++i) {
      rules.push_back(RandomRule(rng));
      absl::StrAppend(&text, Command(rules.back(), rng), "\n");
    }
    const std::string rules_path = TempPath(absl::StrCat("rules", seed, ".txt"));
    std::ofstream(rules_path) << text;
    std::vector<Frame> frames;
    std::vector<std::vector<uint8_t>> bytes;
    for (int i = 0; i < kFrames; ++i) {
      frames.push_back(RandomFrame(rng));
      bytes.push_back(Build(frames.back()));
    }
    const std::string pcap = TempPath(absl::StrCat("in", seed, ".pcap"));
    ASSERT_TRUE(sim::WritePcapFile(pcap, bytes).ok());
    const std::string verdicts = TempPath(absl::StrCat("verdicts", seed, ".txt"));
    std::ostringstream out, err;
    ASSERT_EQ(Drctl({"run", rules_path, "--pcap", pcap, "--verdicts", verdicts}, out, err), 0) << err.str();

    const std::vector<size_t> matchers = MatcherOrder(rules);
    std::istringstream lines(ReadFile(verdicts));
    std::string line;
    for (size_t i = 0; i < frames.size(); ++i) {
      ASSERT_TRUE(std::getline(lines, line)) << "seed " << seed << ": no verdict for frame " << i;
      const std::string expected = Expected(rules, matchers, i, frames[i]);
      ASSERT_EQ(line, expected) << "seed " << seed << ", rules in " << rules_path;
      hits += expected.find("queue") != std::string::npos;
      ++compared;
    }
    EXPECT_FALSE(std::getline(lines, line)) << "more verdicts than frames";
  }
  EXPECT_EQ(compared, kSeeds * kFrames);
  EXPECT_GT(hits, compared / 4);  // the pools make most frames meet some rule
}

}  // namespace
}  // namespace drsim::tools
