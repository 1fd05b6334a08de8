// libFuzzer target: a flow table's index (hw::TableIndex) through rule churn, its walk and its compiled
// trees checked against what its matchers hold. The input is a program of operations on a table of ACL
// matchers (hw::IndexedTable, which keeps each matcher's rules beside the index): matchers over source and
// destination prefixes, a destination port mask, the protocol and sometimes a word the index does not read
// (inexact entries); rules whose values come from small pools, so that they share prefixes and keys; rule
// and matcher removals. Checks look packets up (the rules' values, variants of them with a bit flipped, and
// packets the input gives) one at a time and in one burst, walked and then compiled (TableIndex::Compile),
// from the first rank and from a later one: the candidates must cover every matcher holding a hit in lookup
// order (hw::CoverProblem), and the compiled ones must be the walk's. On a failure the target prints it and
// aborts.
//
// Decoding (fuzz/fuzz_input.h; zeros past the end): up to 96 operations, each a byte (% 6) and operands, one
// byte each unless said; a matcher index is taken modulo the matchers made so far.
//   0 matcher:      priority (% 8); source and destination prefix lengths (% 33 each); port mask (% 4: none,
//                   all, high byte, all but the low nibble); protocol masked (bit 0), ttl masked (bit 1).
//                   The index is built over the first kBuildAt matchers and joined by the later ones.
//   1, 2 rule:      matcher; source, destination (each % 8, from the host pool, xored with a byte % 4),
//                   port (% 4: 80, 443, 0x1234, 0x1200), protocol (bit 0: TCP, else UDP), ttl (bit 1: 64,
//                   else 65)
//   3 remove rule:  matcher; which of its rules
//   4 matcher out:  matcher: it leaves the index with its rules (a second time: it comes back without any)
//   5 check:        packets: a count (% 8) of them, each 4 bytes (a value as for a rule)
// A check runs at the end too. Bits flipped in variants come from a generator seeded with the input's length.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"
#include "hw/flow_table.h"
#include "hw/match_params.h"
#include "hw/table_index.h"
#include "hw/table_index_testing.h"

namespace drsim::fuzz {
namespace {

using hw::Acl;
using hw::IndexedTable;
using hw::MatchParams;
using hw::Prefix;
using hw::TableIndex;

constexpr int kMaxOperations = 96;
constexpr size_t kBuildAt = 4;
constexpr uint32_t kHosts[] = {0x0a000001, 0x0a000102, 0x0a0a0a0a, 0x0a0a0b00,
                               0xc0a80001, 0xc0a80101, 0x7f000001, 0x00000000};
constexpr uint16_t kPortMasks[] = {0, 0xffff, 0xff00, 0xfff0};
constexpr uint16_t kPorts[] = {80, 443, 0x1234, 0x1200};

struct Program {
  IndexedTable table;
  size_t matchers = 0;
  bool built = false;
  std::vector<bool> out;            // by matcher: left the index
  std::vector<MatchParams> values;  // of every rule added, for packets
  std::string log;                  // the operations so far, for a failure's report
};

MatchParams DecodeValue(FuzzInput& in) {
  const uint8_t src = in.Byte(), dst = in.Byte(), port = in.Byte(), flags = in.Byte();
  return Acl(kHosts[src % 8] ^ (src >> 3) % 4, kHosts[dst % 8] ^ (dst >> 3) % 4, kPorts[port % 4],
             (flags & 1) != 0 ? 6 : 17, (flags & 2) != 0 ? 64 : 65);
}

[[noreturn]] void Fail(const Program& p, const std::string& what) {
  std::fprintf(stderr, "table_index_fuzzer: %s\noperations:\n%s", what.c_str(), p.log.c_str());
  std::abort();
}

// Looks `packets` up walked and compiled, one at a time and together, from the first rank and from the
// rank of the matcher `later` names.
void Check(Program& p, const std::vector<MatchParams>& packets, size_t later) {
  if (!p.built || packets.empty()) return;
  const TableIndex& index = p.table.index();
  const uint64_t from = hw::LookupRank(*p.table.matcher(later % p.matchers));
  // (A form compiled at an earlier check may still serve: the walk is only known before the next change.)
  const bool walked = !index.IsCompiled();
  const auto first = hw::CandidatesOfAll(index, packets, 0);
  const auto from_later = hw::CandidatesOfAll(index, packets, from);
  for (size_t i = 0; i < packets.size(); ++i) {
    if (std::string problem = hw::CoverProblem(p.table, packets[i], first[i]); !problem.empty())
      Fail(p, "packet " + std::to_string(i) + (walked ? " walked: " : " compiled: ") + problem);
    if (std::string problem = hw::SameCandidates({p.table.Candidates(packets[i])}, {first[i]}, "alone");
        !problem.empty())
      Fail(p, "packet " + std::to_string(i) + ": " + problem);
  }
  if (!walked) return;
  if (!index.Compile()) Fail(p, "the index did not compile");
  if (std::string problem = hw::SameCandidates(hw::CandidatesOfAll(index, packets, 0), first, "compiled");
      !problem.empty())
    Fail(p, problem);
  if (std::string problem =
          hw::SameCandidates(hw::CandidatesOfAll(index, packets, from), from_later, "compiled, later ranks");
      !problem.empty())
    Fail(p, problem);
}

void Run(FuzzInput& in, size_t size) {
  Program p;
  std::mt19937 rng(static_cast<uint32_t>(size));
  std::vector<MatchParams> given;
  for (int op = 0; op < kMaxOperations && !in.done(); ++op) {
    const int code = in.Below(6);
    if (code == 0) {
      const auto priority = static_cast<uint16_t>(in.Below(8));
      const int src = in.Below(33), dst = in.Below(33), ports = in.Below(4), flags = in.Byte();
      p.table.AddMatcher(priority, Acl(Prefix(src), Prefix(dst), kPortMasks[ports],
                                       (flags & 1) != 0 ? 0xff : 0, (flags & 2) != 0 ? 0xff : 0));
      p.out.push_back(false);
      ++p.matchers;
      p.log += "matcher " + std::to_string(priority) + " /" + std::to_string(src) + " /" +
               std::to_string(dst) + " ports " + std::to_string(ports) + " flags " +
               std::to_string(flags & 3) + "\n";
      if (!p.built && p.matchers == kBuildAt) {
        p.table.Build();
        p.built = true;
      }
      continue;
    }
    if (p.matchers == 0) continue;
    if (code == 1 || code == 2) {
      const size_t m = in.Below(256) % p.matchers;
      const MatchParams value = DecodeValue(in);
      if (p.out[m]) continue;
      p.table.AddRule(m, value);
      p.values.push_back(value);
      p.log += "rule of " + std::to_string(m) + "\n";
    } else if (code == 3) {
      const size_t m = in.Below(256) % p.matchers;
      const size_t k = in.Byte();
      if (!p.out[m] && p.table.RemoveRule(m, k))
        p.log += "remove rule " + std::to_string(k) + " of " + std::to_string(m) + "\n";
    } else if (code == 4) {
      const size_t m = in.Below(256) % p.matchers;
      if (!p.built) continue;
      if (p.out[m]) {
        p.table.RejoinMatcher(m);
      } else {
        p.table.RemoveMatcher(m);
      }
      p.out[m] = !p.out[m];
      p.log += (p.out[m] ? "out: " : "back: ") + std::to_string(m) + "\n";
    } else {
      const int count = in.Below(8);
      for (int i = 0; i < count; ++i) given.push_back(DecodeValue(in));
      std::vector<MatchParams> packets = given;
      for (const MatchParams& v : p.values) {
        packets.push_back(v);
        MatchParams variant = v;
        // (A bit of the source, the destination or the port's word.)
        const size_t bit = (rng() % 3 == 0 ? 0x14 : rng() % 2 == 0 ? 0x2c : 0x3c) * 8 + rng() % 32;
        variant.bytes()[bit / 8] ^= static_cast<uint8_t>(1u << bit % 8);
        packets.push_back(variant);
      }
      p.log += "check\n";
      Check(p, packets, in.Byte());
    }
  }
  std::vector<MatchParams> packets = given;
  packets.insert(packets.end(), p.values.begin(), p.values.end());
  Check(p, packets, 0);
}

}  // namespace
}  // namespace drsim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  drsim::fuzz::FuzzInput in(data, size);
  drsim::fuzz::Run(in, size);
  return 0;
}
