// Internal to the :nic library: the types and inline functions that nic.cc, nic_function.cc,
// nic_pipeline.cc and nic_burst.cc share. Not a public header (it is in the target's srcs).
//
// What
//   Nic::InFlight, a frame being processed; InFlight::BurstLookups, what the burst fast path looked up
//   for a frame ahead of its walk; Nic::Burst, a worker's scratch for one burst of frames; and the
//   small functions both the per-frame walk (nic_pipeline.cc) and the burst fast path (nic_burst.cc)
//   call per frame.
//
// How
//   The functions here are defined inline so each file that calls them can inline them, as the fast
//   path needs: the burst loop and the walk run them for every frame.
#ifndef DRSIM_SIM_NIC_INTERNAL_H_
#define DRSIM_SIM_NIC_INTERNAL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "hw/action_program.h"
#include "hw/flow_table.h"
#include "hw/match_layout.h"
#include "hw/match_table.h"
#include "hw/table_index.h"
#include "sim/action_executor.h"
#include "sim/aso.h"
#include "sim/chain_walk_policy.h"
#include "sim/counters.h"
#include "sim/meter.h"
#include "sim/nic.h"
#include "sim/packet.h"
#include "sim/packet_parser.h"
#include "sim/plain_ipv4.h"
#include "sim/rx_queue.h"

namespace drsim::sim {

// The NIC's stateful objects, shared by every function and worker, under Nic::control_mu_ (the
// counters and ASO objects are also read by workers' executors, which synchronise on their own).
struct Nic::Objects {
  struct Sampler {
    uint32_t ratio;
    uint64_t seen = 0;
  };
  CounterBank counters;
  AsoBank aso;
  GeneveOptionParser geneve_options;
  absl::flat_hash_map<uint32_t, TokenMeter> meters;
  absl::flat_hash_map<uint32_t, Sampler> samplers;
};

// A frame being processed, with what travels with it. Copies (dest array, sampler) report into the
// original frame's verdict.
struct Nic::InFlight {
  // What the burst fast path (nic_burst.cc) already looked up for this frame, handed to the frame's
  // walk (WalkDomain) so that it does not look up again. Every lookup here was made on the frame's
  // headers as they are now: a parse forgets the lookup made ahead.
  struct BurstLookups {
    // A lookup made ahead: `hit` (nullptr: a miss) in `matcher` (nullptr: none made). Made by
    // Process's first lookup, FollowJumps, WalkTogether or LookUpIndexedTogether. The walk takes it
    // once, when it reaches `matcher`.
    const hw::CompiledMatcher* matcher = nullptr;
    const hw::RuleRecord* hit = nullptr;
    // Set by FollowJumps for every frame of its burst (its burst only), and by Process for a frame whose
    // hit LookUpJumpsInIndexes found: the table the frame's walk starts at, past the jumps it followed
    // (table nullptr: it followed none).
    Entry after_jumps;
    // WalkTogether's walk of one table for the frame.
    struct TableWalk {
      const hw::FlowTable* table = nullptr;  // the table walked (nullptr: none)
      // The matcher that hit (its hit is `hit` above), or nullptr when none did.
      const hw::CompiledMatcher* hit_matcher = nullptr;
      // When none hit, in a table with an index: the matcher the walk stopped before (nullptr: the
      // chain's end), for the index to take over from.
      const hw::CompiledMatcher* stopped_before = nullptr;
    };
    TableWalk walk;

    // The query the frame's walk makes as it enters its first table: WalkTogether's walk of `table`
    // for the frame (table nullptr in the result: it made none). The walk takes it once.
    TableWalk TakeWalkOf(const hw::FlowTable* table) {
      TableWalk w;
      if (table != nullptr && walk.table == table) w = walk;
      walk.table = nullptr;
      return w;
    }
  };

  Worker* worker = nullptr;
  PacketBuffer buffer;
  PacketMeta meta;
  hw::HeaderVector hv;
  PacketLayers layers;
  // What `hv` and `layers` hold of the frame as it is now: nothing, what ParseOuterHeaders gives (the words
  // FilledByOuterParse accepts, the outer layers) or all of it.
  enum class Parsed : uint8_t { kNo, kOuter, kWhole };
  Parsed parsed = Parsed::kNo;
  Verdict* verdict = nullptr;  // the original frame's
  BurstLookups by_burst;
  bool copy = false;  // a copy: its outcome goes to verdict->copies

  // The GENEVE option the NIC's parser samples as option 0, read at each parse (the control side may
  // change it).
  GeneveOptionSelector GeneveOption() const { return worker->nic_.geneve_option(); }
  // Parses the frame as it is now, with its metadata, for the lookups that follow.
  void Parse() {
    // Built in place (guaranteed elision): assigning the returned struct would reload with wide loads the
    // narrow fields the parser has just stored, and stall on them.
    new (&layers)
        PacketLayers(ParsePacket(buffer.data(), buffer.size(), meta.source_port, &hv, GeneveOption()));
    LoadMetadata(meta, &hv);
    parsed = Parsed::kWhole;
    by_burst.matcher = nullptr;
  }
  // Fills only the words of `hv` that ParseOuterHeaders fills (FilledByOuterParse: the outer headers and
  // the source port), and the outer layers, for lookups and actions that read nothing else; metadata and
  // registers are not among them, so a read of those parses the frame whole.
  void ParseOuter() {
    new (&layers) PacketLayers(ParseOuterHeaders(buffer.data(), buffer.size(), meta.source_port, &hv));
    parsed = Parsed::kOuter;
  }
  void EnsureParsed() {
    if (parsed != Parsed::kWhole) Parse();
  }
  // Makes `hv` hold at least what a read needs: the outer words when `outer_only`, else everything.
  void EnsureParsedFor(bool outer_only) {
    if (parsed == Parsed::kWhole || (outer_only && parsed == Parsed::kOuter)) return;
    ParseFor(outer_only);
  }
  // Out of line: walks inline the check above, and most of their frames need no parse there.
  ABSL_ATTRIBUTE_NOINLINE void ParseFor(bool outer_only) {
    if (outer_only) {
      ParseOuter();
    } else {
      Parse();
    }
  }
  // The frame changed (a rewrite, new metadata): what `hv` holds is stale.
  void Unparse() { parsed = Parsed::kNo; }
  // What `executor_` changed: the headers (then `hv` is stale), only metadata (then the headers' words
  // still hold, and a whole parse takes the new metadata), or nothing.
  void Changed(ActionExecutor::Change change) {
    if (change >= ActionExecutor::Change::kHeaders) return Unparse();
    if (change == ActionExecutor::Change::kNothing) return;
    if (parsed == Parsed::kWhole) StoreMetadata(meta, &hv);
    by_burst.matcher = nullptr;  // a lookup made ahead saw the old metadata
  }
  // What the executor may start from instead of parsing again.
  KnownParse Known() const {
    if (parsed == Parsed::kNo) return {};
    return {&hv, &layers, parsed == Parsed::kWhole};
  }
  // The frame's hit in `m`, or nullptr; `key` is scratch for its key. Most matchers of a long walk (an
  // ACL's) refuse the frame on their summary word alone, read from the outer headers if that is where it
  // lies and the frame is parsed that far; the key is extracted, and the frame parsed as far as it needs,
  // only for the others.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const hw::RuleRecord* LookUp(const hw::CompiledMatcher& m, uint32_t* key) {
    if (parsed != Parsed::kWhole) EnsureParsedFor(m.summary_word.ReadsOnly(FilledByOuterParse));
    if (!m.MayMatch(hv.bytes)) return nullptr;
    return LookUpPastSummary(m, key);
  }
  // The first hit among the matchers of rank `from_rank` or more (hw::LookupRank) of the table `index`
  // indexes (nullptr: none) in `*hit`, and in `*hit_matcher` its matcher (on a miss, the last candidate
  // tried, if any), from the index's candidates in lookup order; false when there were too many candidates
  // (then walk the table's chain from `from_rank`: what was looked up missed). `key` is scratch for keys.
  bool LookUpIndexed(const hw::TableIndex& index, uint64_t from_rank, uint32_t* key,
                     const hw::RuleRecord** hit, const hw::CompiledMatcher** hit_matcher) {
    if (parsed != Parsed::kWhole) EnsureParsedFor(index.ReadsOnly(FilledByOuterParse));
    hw::TableIndex::Candidate candidates[hw::TableIndex::kMaxCandidates];
    const size_t n = index.Candidates(hv.bytes, from_rank, candidates);
    if (n > hw::TableIndex::kMaxCandidates) return false;
    return LookUpCandidates(index, candidates, n, key, hit, hit_matcher);
  }
  // LookUpIndexed past the index's `n` candidates (n <= kMaxCandidates).
  bool LookUpCandidates(const hw::TableIndex& index, hw::TableIndex::Candidate* candidates, size_t n,
                        uint32_t* key, const hw::RuleRecord** hit, const hw::CompiledMatcher** hit_matcher) {
    *hit = nullptr;
    for (;;) {
      for (size_t i = 0; i < n && *hit == nullptr; ++i) {
        const hw::CompiledMatcher* m = candidates[i].matcher;
        // The burst's lookup made ahead on these same headers (FollowJumps's in the table's first matcher,
        // LookUpIndexedTogether's in the first candidate), the hit the index names, or one now.
        *hit = m == by_burst.matcher          ? by_burst.hit
               : candidates[i].hit != nullptr ? candidates[i].hit
                                              : LookUp(*m, key);
        *hit_matcher = m;
      }
      // The exact candidate that ended the candidates missed: its rule is coming or going. The matchers
      // after it are asked about.
      if (*hit != nullptr || n == 0 || !candidates[n - 1].exact) break;
      n = index.Candidates(hv.bytes, candidates[n - 1].rank + 1, candidates);
      if (n > hw::TableIndex::kMaxCandidates) return false;
    }
    by_burst.matcher = nullptr;
    return true;
  }
  // LookUp for a frame `m`'s summary has let through already.
  ABSL_ATTRIBUTE_ALWAYS_INLINE const hw::RuleRecord* LookUpPastSummary(const hw::CompiledMatcher& m,
                                                                       uint32_t* key) {
    if (parsed != Parsed::kWhole) EnsureParsedFor(m.definer.ReadsOnly(FilledByOuterParse));
    m.definer.Extract(hv.bytes, key);
    return m.table.Find(key);
  }
};

static_assert(std::is_trivially_destructible_v<PacketLayers>);  // InFlight::Parse builds it over the old one
// Process starts each frame by copying these in whole.
static_assert(std::is_trivially_copyable_v<PacketMeta> && std::is_trivially_copyable_v<Delivery>);

// A worker's frames in flight, and the keys of the lookups made ahead for them: the first (with its hits),
// then those FollowJumps makes, then LookUpIndexedTogether's (with their hashes and candidate records). Kept
// by the worker, so packet buffers and verdicts keep their capacity from one burst to the next.
struct Nic::Burst {
  // The largest key a definer can produce: every word of the layout.
  static constexpr size_t kMaxKeyWords = hw::kMatchParamBytes / 4;

  InFlight frames[kBurst];
  Verdict scratch_verdicts[kBurst];  // the verdicts when the caller takes none
  uint32_t keys[kBurst * kMaxKeyWords];
  uint64_t hashes[kBurst];
  hw::MatchTable::Candidate candidates[kBurst];
  const hw::RuleRecord* first_hits[kBurst];  // the first lookup's

  // Lookup i of LookUpIndexedTogether's overlapped lookups, each in its own matcher `m`, in
  // three passes over them all: RequestBucket reads and hashes its key from `hv` and requests its bucket,
  // RequestRecord requests the record under the key's signature there, Find compares it (or looks on).
  void RequestBucket(size_t i, const hw::CompiledMatcher& m, const uint8_t* hv) {
    uint32_t* key = keys + i * kMaxKeyWords;
    m.definer.Extract(hv, key);
    hashes[i] = m.table.Hash(key);
    m.table.Prefetch(hashes[i]);
  }
  void RequestRecord(size_t i, const hw::CompiledMatcher& m) {
    candidates[i] = m.table.PrefetchRecords(hashes[i]);
  }
  const hw::RuleRecord* Find(size_t i, const hw::CompiledMatcher& m) const {
    return m.table.FindFrom(keys + i * kMaxKeyWords, hashes[i], candidates[i]);
  }
  PlainIpv4KeyReader plain_ipv4;  // the first lookup's key from plain IPv4 frames
  static_assert(kBurst <= 64, "PlainIpv4KeyReader::ReadBurst reads up to 64 frames");
  // The frames whose looked-up hit only jumps (no ops, to a table with a matcher), for FollowJumps: their
  // index in the burst, the table each jumps to and that table's first matcher (read once).
  size_t num_jumping = 0;
  size_t jumping_frame[kBurst];
  const hw::FlowTable* jump_table[kBurst];
  const hw::CompiledMatcher* jump_matcher[kBurst];
  // LookUpIndexedTogether: no lookup ahead (no candidate, too many, or the index named the hit).
  bool no_lookup_ahead[kBurst];
  // LookUpJumpsInIndexes: what reads plain frames' index words straight from them, and by frame, the table
  // it asked and the hit the index named there, with its matcher (both nullptr: a miss of the table).
  PlainIpv4KeyReader index_word_reader;
  hw::HeaderVector outer_headers;  // a frame's that is not plain, parsed for its index words
  const hw::FlowTable* named_table[kBurst];
  const hw::CompiledMatcher* named_matcher[kBurst];
  const hw::RuleRecord* named_hit[kBurst];
  // WalkTogether: the frames the index takes over for, and their queries and candidates.
  size_t to_index[kBurst];
  hw::TableIndex::Query queries[kBurst];
  hw::TableIndex::Candidate index_candidates[kBurst][hw::TableIndex::kMaxCandidates];
  // Whether to walk an indexed table's first matchers before asking its index, by index (stale entries
  // only mislead until they are cleared).
  absl::flat_hash_map<const hw::TableIndex*, ChainWalkPolicy> chain_walk_policies;
  // The policy for `index`, made if missing (the map is cleared when it holds more than
  // kMaxChainWalkPolicies).
  ChainWalkPolicy& PolicyOf(const hw::TableIndex* index) {
    if (chain_walk_policies.size() > kMaxChainWalkPolicies) chain_walk_policies.clear();
    return chain_walk_policies[index];
  }
  // Counts the bursts Process takes (ChainWalkPolicy decides once a burst).
  uint64_t serial = 0;

  // Adds frame `j` to the jumping frames when its looked-up `hit` only jumps (no ops, a kTable destination
  // with a matcher in it).
  void AddIfOnlyJumps(size_t j, const hw::RuleRecord& hit, hw::Pipe pipe) {
    if (hit.shape(pipe) != hw::ProgramShape::kOnlyJumps) return;
    const hw::ActionProgram& program = hit.program(pipe);
    const hw::CompiledMatcher* m = program.table->first_matcher();
    if (m == nullptr) return;
    jumping_frame[num_jumping] = j;
    jump_table[num_jumping] = program.table;
    jump_matcher[num_jumping++] = m;
  }
};

// ---- Shared by the walk and the burst fast path: each runs these for most frames ----------------

inline void Worker::Count(Fate fate) {
  // Only this worker's thread writes: a load and a store, no read-modify-write.
  std::atomic<uint64_t>& c = fates_[static_cast<int>(fate)];
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

inline void Worker::CountAnsweredByIndex(uint64_t frames) {
  answered_by_index_.store(answered_by_index_.load(std::memory_order_relaxed) + frames,
                           std::memory_order_relaxed);
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool Nic::TerminalExit(const hw::ActionProgram& program, DomainExit* e) {
  switch (program.destination) {
    case hw::Destination::kNone:
    case hw::Destination::kDefaultMiss:
      *e = {};
      return true;
    case hw::Destination::kDrop:
      *e = {Exit::kDrop};
      return true;
    case hw::Destination::kQueue:
      *e = {Exit::kQueue, program.queue};
      return true;
    case hw::Destination::kTir:
      *e = {Exit::kTir, program.tir};
      return true;
    case hw::Destination::kVport:
      *e = {Exit::kVport, program.vport};
      return true;
    default:
      return false;
  }
}

inline void Nic::Record(Delivery& d, Fate fate, const PacketMeta& meta, uint16_t vport, uint32_t qp_num) {
  // Field by field: a Delivery built aside and copied in would be reloaded whole right after its narrow
  // stores, and stall on them.
  d.fate = fate;
  d.vport = vport;
  d.qp_num = qp_num;
  d.has_flow_tag = meta.has_flow_tag;
  d.flow_tag = meta.flow_tag;
}

inline Fate Nic::Enqueue(Function& fn, uint32_t qp_num, Frame frame, const PacketMeta& meta) {
  RxQueue* q = fn.queue(qp_num);
  const bool ok =
      q != nullptr && q->Push(frame.data(), frame.size(), meta.has_flow_tag, meta.flow_tag, meta.reg_b);
  return ok ? Fate::kQueued : Fate::kQueueFull;
}

inline void Nic::Finish(Fate fate, InFlight& p, uint16_t vport, uint32_t qp_num) {
  Record(p.copy ? p.verdict->copies.emplace_back() : *p.verdict, fate, p.meta, vport, qp_num);
  p.worker->Count(fate);
}

inline void Nic::Dispatch(InFlight& p, Stage stage, Function& fn, DomainExit e, bool trace) {
  switch (e.exit) {
    case Exit::kDone:
      return;
    case Exit::kLoop:
      return Finish(Fate::kTableLoop, p);
    case Exit::kNoTunnel:
      return Finish(Fate::kNoTunnel, p);
    case Exit::kDrop:
      return Finish(Fate::kDropped, p);
    default:
      return Forward(p, stage, fn, e, trace);
  }
}

inline void Nic::Run(InFlight& p, Stage stage, Function& fn, Entry entry, bool trace) {
  Dispatch(p, stage, fn, WalkDomain(p, stage, fn, entry, trace), trace);
}

}  // namespace drsim::sim

#endif  // DRSIM_SIM_NIC_INTERNAL_H_
