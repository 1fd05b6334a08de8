// sim::Nic's burst fast path: Process takes frames a burst (kBurst) at a time, makes the first lookup of
// all of them together, asks the index of a table that hits only jump into about those frames
// (LookUpJumpsInIndexes), follows the other jumps together (FollowJumps), walks the
// tables those jumps lead to together (WalkTogether, LookUpIndexedTogether), and then finishes each frame
// from its hit when that is all it needs (FinishFromHit, DispatchLookedUpHit), or hands what it looked up
// (InFlight::BurstLookups) to the frame's walk (nic_pipeline.cc). Lookups made together overlap their
// cache misses instead of waiting on each in turn.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "hw/action_program.h"
#include "hw/flow_table.h"
#include "hw/match_table.h"
#include "hw/reclaimer.h"
#include "hw/table_index.h"
#include "sim/nic.h"
#include "sim/nic_internal.h"
#include "sim/packet.h"
#include "sim/packet_parser.h"
#include "sim/plain_ipv4.h"

namespace drsim::sim {

Nic::FirstLookup Nic::FirstLookupOf(Stage stage, Function& fn) {
  auto first = [](const Function& f, mlx5dv_dr_domain_type type) -> const hw::CompiledMatcher* {
    const std::vector<Function::RootEntry>& root = f.root_[type].Read().entries;
    return root.empty() ? nullptr : root.front().matcher;
  };
  switch (stage) {
    case Stage::kFdbRx:
      if (const hw::CompiledMatcher* m = first(pf(), MLX5DV_DR_DOMAIN_TYPE_FDB))
        return {m, stage, &pf(), hw::kRxPipe};
      return {first(pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX), Stage::kNicRx, &pf(), hw::kRxPipe};
    case Stage::kNicTx:
      if (const hw::CompiledMatcher* m = first(fn, MLX5DV_DR_DOMAIN_TYPE_NIC_TX))
        return {m, stage, &fn, hw::kTxPipe};
      return {first(pf(), MLX5DV_DR_DOMAIN_TYPE_FDB), Stage::kFdbTx, &pf(), hw::kTxPipe};
    default:
      return {};
  }
}

// Always inlined: Process's burst loop runs it for most frames, and a call there would show.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool Nic::DispatchLookedUpHit(InFlight& p, const FirstLookup& first) {
  if (p.by_burst.hit->shape(first.pipe) != hw::ProgramShape::kSendsOn) return false;
  DomainExit e;
  // hw::ShapeOf and TerminalExit each list the terminal destinations: should they ever disagree, walk.
  if (!TerminalExit(p.by_burst.hit->program(first.pipe), &e)) return false;
  Dispatch(p, first.stage, *first.fn, e, /*trace=*/false);
  return true;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool Nic::FinishFromHit(Worker& worker, const hw::RuleRecord& hit,
                                                            const FirstLookup& first, Frame frame,
                                                            const PacketMeta& meta, Verdict& verdict) {
  if (hit.shape(first.pipe) != hw::ProgramShape::kSendsOn) return false;
  auto finish = [&](Fate fate, uint16_t vport, uint32_t qp_num) {
    // Tested first: a clear stores even when there is nothing to clear, and most verdicts come back empty.
    if (!verdict.path.empty()) verdict.path.clear();
    if (!verdict.copies.empty()) verdict.copies.clear();
    Record(verdict, fate, meta, vport, qp_num);
    worker.Count(fate);
    return true;
  };
  const hw::ActionProgram& program = hit.program(first.pipe);
  switch (program.destination) {
    case hw::Destination::kDrop:
      return finish(Fate::kDropped, 0, 0);
    case hw::Destination::kQueue:
      if (first.stage != Stage::kNicRx) return false;
      return finish(Enqueue(*first.fn, program.queue, frame, meta), first.fn->vport(), program.queue);
    default:
      return false;
  }
}

uint64_t Nic::LookUpJumpsInIndexes(Burst& b, const Frame* frames, uint16_t source) {
  uint64_t named = 0;
  bool taken[kBurst] = {};  // by jumping entry: looked at with its table
  bool keep[kBurst];        // by jumping entry: left jumping
  std::fill_n(keep, b.num_jumping, true);
  for (size_t s = 0; s < b.num_jumping; ++s) {
    if (taken[s]) continue;
    // The entries into this table (mostly every one).
    const hw::FlowTable* table = b.jump_table[s];
    size_t entry[kBurst];
    size_t count = 0;
    for (size_t i = s; i < b.num_jumping; ++i) {
      if (taken[i] || b.jump_table[i] != table) continue;
      taken[i] = true;
      entry[count++] = i;
    }
    const hw::TableIndex* index = table->index.load(std::memory_order_acquire);
    if (index == nullptr || !index->ReadsOnly(FilledByOuterParse)) continue;
    ChainWalkPolicy& policy = b.PolicyOf(index);
    if (policy.WalkThisBurst(b.serial)) continue;
    // The plain frames' words straight from them (when the index's words allow), the others' from their
    // outer headers, parsed aside.
    Frame entering[kBurst];
    for (size_t c = 0; c < count; ++c) entering[c] = frames[b.jumping_frame[entry[c]]];
    hw::TableIndex::PacketWords words[kBurst];
    static_assert(sizeof words[0] == hw::TableIndex::kWords * sizeof(uint32_t), "read end to end");
    const uint64_t plain = b.index_word_reader.Prepare(index->word_reads())
                               ? b.index_word_reader.ReadBurst(entering, count, source, words[0].data())
                               : 0;
    for (size_t c = 0; c < count; ++c) {
      if (plain >> c & 1) continue;
      ParseOuterHeaders(entering[c].data(), entering[c].size(), source, &b.outer_headers);
      words[c] = index->ReadWords(b.outer_headers.bytes);
    }
    // From the table's first matcher on, as WalkTogether asks when it walks none of the chain.
    const hw::CompiledMatcher* first_matcher = b.jump_matcher[s];
    const uint64_t from_rank = hw::LookupRank(*first_matcher);
    for (size_t c = 0; c < count; ++c) b.queries[c] = {words[c], from_rank, b.index_candidates[c], 0};
    index->CandidatesOf(b.queries, count);
    for (size_t c = 0; c < count; ++c) {
      const hw::TableIndex::Query& query = b.queries[c];
      // No candidate at all is a miss of the whole table: asked again after a walk, the index would say so
      // again.
      const bool misses = query.count == 0;
      if (!misses && !hw::TableIndex::NamesFirstHit(query)) continue;
      const hw::TableIndex::Candidate* answer = misses ? nullptr : &query.out[0];
      keep[entry[c]] = false;
      const size_t j = b.jumping_frame[entry[c]];
      named |= uint64_t{1} << j;
      b.named_table[j] = table;
      b.named_matcher[j] = misses ? nullptr : answer->matcher;
      b.named_hit[j] = misses ? nullptr : answer->hit;
      // (Its record is read once the burst's lookups are done, FinishFromHit first: requested now, once a
      // frame. Not by the index as it takes each exact candidate: a packet may take several, and a lookup
      // whose caller reads no record would wait on their requests.)
      if (b.named_hit[j] != nullptr) __builtin_prefetch(b.named_hit[j]);
    }
  }
  size_t left = 0;
  for (size_t i = 0; i < b.num_jumping; ++i) {
    if (!keep[i]) continue;
    b.jumping_frame[left] = b.jumping_frame[i];
    b.jump_table[left] = b.jump_table[i];
    b.jump_matcher[left++] = b.jump_matcher[i];
  }
  b.num_jumping = left;
  return named;
}

void Nic::FollowJumps(Burst& b, const FirstLookup& first) {
  InFlight* burst = b.frames;
  // A level's jumps, taken aside: AddIfOnlyJumps refills the burst's list with the next level's.
  size_t jumping_frame[kBurst];
  const hw::FlowTable* jump_table[kBurst];
  const hw::CompiledMatcher* jump_matcher[kBurst];
  for (int jumps = 1; b.num_jumping > 0 && jumps <= kMaxTableJumps; ++jumps) {
    const size_t k = b.num_jumping;
    std::copy_n(b.jumping_frame, k, jumping_frame);
    std::copy_n(b.jump_table, k, jump_table);
    std::copy_n(b.jump_matcher, k, jump_matcher);
    b.num_jumping = 0;
    // A matcher at a time (mostly one for the whole level): the frames into it that its summary lets through
    // are looked up together, their keys end to end (the first lookup's are done with).
    bool taken[kBurst] = {};
    for (size_t s = 0; s < k; ++s) {
      if (taken[s]) continue;
      const hw::CompiledMatcher* m = jump_matcher[s];
      const bool outer_key = m->definer.ReadsOnly(FilledByOuterParse);
      const size_t words = m->definer.key_words();
      size_t looking[kBurst];
      size_t count = 0;
      for (size_t i = s; i < k; ++i) {
        if (taken[i] || jump_matcher[i] != m) continue;
        taken[i] = true;
        InFlight& p = burst[jumping_frame[i]];
        p.by_burst.after_jumps = {jump_table[i], 0, jumps};
        p.by_burst.matcher = m;
        p.by_burst.hit = nullptr;
        p.EnsureParsedFor(outer_key);
        // A table that refuses the frame on its summary (an ACL's first matcher, mostly) is not looked into.
        if (!m->MayMatch(p.hv.bytes)) continue;
        m->definer.Extract(p.hv.bytes, b.keys + count * words);
        looking[count++] = jumping_frame[i];
      }
      const hw::RuleRecord* found[kBurst];
      m->table.FindBurst(b.keys, count, found);
      for (size_t c = 0; c < count; ++c) {
        burst[looking[c]].by_burst.hit = found[c];
        if (found[c] != nullptr) b.AddIfOnlyJumps(looking[c], *found[c], first.pipe);
      }
    }
  }
}

void Nic::WalkTogether(Burst& b, size_t n) {
  InFlight* burst = b.frames;
  // The frames left to walk, those of the table being walked first, with what the summary test reads of
  // them kept at hand: most matchers refuse every frame on its summary word, read here without a call.
  struct Walking {
    size_t frame;
    const uint8_t* hv;
    InFlight::Parsed parsed;
    int lookups;  // past the summary, in vain
  };
  Walking walking[kBurst];
  size_t left = 0;
  for (size_t j = 0; j < n; ++j) {
    InFlight& p = burst[j];
    if (p.by_burst.after_jumps.table != nullptr && p.by_burst.hit == nullptr) {
      walking[left++] = {j, p.hv.bytes, p.parsed, 0};
    }
  }
  uint32_t key[Burst::kMaxKeyWords];
  while (left > 0) {
    const hw::FlowTable* table = burst[walking[0].frame].by_burst.after_jumps.table;
    size_t live = 0;  // walking[0, live): the frames into `table` not hit yet
    for (size_t i = 0; i < left; ++i) {
      if (burst[walking[i].frame].by_burst.after_jumps.table == table) std::swap(walking[i], walking[live++]);
    }
    const size_t into_table = live;
    // A table with an index is walked for its first matchers only, and by a frame only while their
    // summaries do not let it through to a lookup in vain more than kChainLookups times (early matchers
    // that are broad), and only while that pays (ChainWalkPolicy); the index takes over from there for the
    // frames together (LookUpIndexedTogether).
    const hw::TableIndex* index = table->index.load(std::memory_order_acquire);
    ChainWalkPolicy* policy = nullptr;
    int chain_left = std::numeric_limits<int>::max();
    if (index != nullptr) {
      policy = &b.PolicyOf(index);
      chain_left = policy->WalkThisBurst(b.serial) ? index->chain_first() : 0;
    }
    const bool walk_chain = chain_left > 0;
    uint32_t chain_hits = 0;
    size_t to_index = 0;  // b.to_index[0, to_index): the frames the index takes over for
    const hw::CompiledMatcher* m = table->first_matcher();
    for (; m != nullptr && live > 0 && chain_left > 0; m = m->next_matcher(), --chain_left) {
      m->PrefetchAhead();
      const hw::Definer::Word summary_word = m->summary_word;
      const bool outer_word = summary_word.ReadsOnly(FilledByOuterParse);
      const uint64_t summary = m->table.summary();  // (one load for all the frames: one instant)
      for (size_t i = 0; i < live;) {
        Walking& w = walking[i];
        const bool readable =
            w.parsed == InFlight::Parsed::kWhole || (w.parsed == InFlight::Parsed::kOuter && outer_word);
        if (readable && !hw::MatchTable::MayHoldIn(summary, summary_word.Read(w.hv))) {
          ++i;
          continue;
        }
        InFlight& p = burst[w.frame];
        // (The frame missed the first matcher, which FollowJumps looked it up in.) A readable frame's summary
        // word passed above.
        const hw::RuleRecord* hit = m == p.by_burst.matcher ? nullptr
                                    : readable              ? p.LookUpPastSummary(*m, key)
                                                            : p.LookUp(*m, key);
        w.parsed = p.parsed;
        if (hit == nullptr && (index == nullptr || ++w.lookups <= hw::TableIndex::kChainLookups)) {
          ++i;
          continue;
        }
        if (hit == nullptr) {  // the index takes over after `m`
          p.by_burst.walk = {table, nullptr, m->next_matcher()};
          p.by_burst.matcher = nullptr;
          if (p.by_burst.walk.stopped_before != nullptr) b.to_index[to_index++] = w.frame;
          std::swap(w, walking[--live]);
          continue;
        }
        p.by_burst.walk.table = table;  // (stopped_before is not read when a matcher hit)
        p.by_burst.walk.hit_matcher = m;
        p.by_burst.matcher = m;
        p.by_burst.hit = hit;
        ++chain_hits;
        std::swap(w, walking[--live]);
      }
    }
    for (size_t i = 0; i < live; ++i) {  // missed every matcher walked
      InFlight& p = burst[walking[i].frame];
      p.by_burst.walk = {table, nullptr, m};
      p.by_burst.matcher = nullptr;  // consumed, as a walk consumes it
      if (index != nullptr && m != nullptr) b.to_index[to_index++] = walking[i].frame;
    }
    if (to_index > 0) LookUpIndexedTogether(b, *index, to_index);
    if (walk_chain && policy != nullptr) policy->TallyWalk(static_cast<uint32_t>(into_table), chain_hits);
    // The frames into other tables are next.
    for (size_t i = into_table; i < left; ++i) walking[i - into_table] = walking[i];
    left -= into_table;
  }
}

void Nic::LookUpIndexedTogether(Burst& b, const hw::TableIndex& index, size_t k) {
  const bool outer_words = index.ReadsOnly(FilledByOuterParse);
  for (size_t i = 0; i < k; ++i) {
    InFlight& p = b.frames[b.to_index[i]];
    p.EnsureParsedFor(outer_words);
    b.queries[i] = {index.ReadWords(p.hv.bytes), hw::LookupRank(*p.by_burst.walk.stopped_before),
                    b.index_candidates[i], 0};
  }
  index.CandidatesOf(b.queries, k);
  // Each frame's first candidate (its hit, mostly: an exact candidate ends them) looked up the overlapped
  // way, as FollowJumps does (its scratch arrays are free again), unless the index named its hit.
  for (size_t i = 0; i < k; ++i) {
    const hw::TableIndex::Query& q = b.queries[i];
    const bool listed = q.count != 0 && q.count <= hw::TableIndex::kMaxCandidates;
    b.no_lookup_ahead[i] = !listed || q.out[0].hit != nullptr;
    if (b.no_lookup_ahead[i]) {
      // (A named hit's record, read once the burst's lookups are done: requested now.)
      if (listed) __builtin_prefetch(q.out[0].hit);
      continue;
    }
    InFlight& p = b.frames[b.to_index[i]];
    const hw::CompiledMatcher& m = *q.out[0].matcher;
    if (p.parsed != InFlight::Parsed::kWhole) p.EnsureParsedFor(m.definer.ReadsOnly(FilledByOuterParse));
    b.RequestBucket(i, m, p.hv.bytes);
  }
  for (size_t i = 0; i < k; ++i) {
    if (!b.no_lookup_ahead[i]) b.RequestRecord(i, *b.queries[i].out[0].matcher);
  }
  for (size_t i = 0; i < k; ++i) {
    if (b.no_lookup_ahead[i]) continue;
    InFlight& p = b.frames[b.to_index[i]];
    const hw::CompiledMatcher* m = b.queries[i].out[0].matcher;
    p.by_burst.matcher = m;  // (LookUpCandidates takes it)
    p.by_burst.hit = b.Find(i, *m);
  }
  uint32_t key[Burst::kMaxKeyWords];
  for (size_t i = 0; i < k; ++i) {
    const hw::TableIndex::Query& q = b.queries[i];
    InFlight& p = b.frames[b.to_index[i]];
    const hw::RuleRecord* hit = nullptr;
    const hw::CompiledMatcher* hit_matcher = nullptr;
    if (q.count > hw::TableIndex::kMaxCandidates ||
        !p.LookUpCandidates(index, q.out, q.count, key, &hit, &hit_matcher)) {
      p.by_burst.matcher = nullptr;
      continue;  // (stopped_before stays: the frame's walk asks the index again, then walks the chain)
    }
    p.by_burst.walk.hit_matcher = hit == nullptr ? nullptr : hit_matcher;
    p.by_burst.walk.stopped_before = nullptr;  // (a miss: no matcher from there on holds a hit)
    p.by_burst.matcher = p.by_burst.walk.hit_matcher;
    p.by_burst.hit = hit;
  }
}

absl::Status Nic::Process(Worker& worker, absl::Span<const Frame> frames, absl::Span<Verdict> verdicts,
                          bool trace, uint16_t source, uint32_t sqn, Stage stage, Function& fn) {
  if (!verdicts.empty() && verdicts.size() != frames.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d verdicts for %d frames: pass one per frame, or none", verdicts.size(), frames.size()));
  }
  InFlight* burst = worker.burst_->frames;
  uint32_t* keys = worker.burst_->keys;
  for (size_t at = 0; at < frames.size(); at += kBurst) {
    const size_t n = std::min(kBurst, frames.size() - at);
    const Frame* in = frames.data() + at;
    Verdict* out = verdicts.empty() ? worker.burst_->scratch_verdicts : verdicts.data() + at;
    // One read section per burst: what the driver retires meanwhile waits at most a burst.
    worker.reader_.Enter();
    ++worker.burst_->serial;
    worker.frames_.store(worker.frames_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    // Each frame starts afresh; the vectors keep their capacity from one frame to the next.
    // Copied whole into each frame (memcpy: a few wide stores, where assigning stores field by field).
    PacketMeta fresh_meta;
    fresh_meta.source_port = source;
    fresh_meta.source_sqn = sqn;
    const Delivery fresh_delivery;
    auto start = [&](size_t j) {
      InFlight& p = burst[j];
      p.worker = &worker;
      p.buffer.Borrow(in[j].data(), in[j].size());  // copied in only if rewritten
      std::memcpy(&p.meta, &fresh_meta, sizeof fresh_meta);
      p.copy = false;
      p.verdict = out + j;
      std::memcpy(static_cast<Delivery*>(p.verdict), &fresh_delivery, sizeof fresh_delivery);
      p.verdict->path.clear();
      p.verdict->copies.clear();
      p.Unparse();
      p.by_burst.matcher = nullptr;
      p.by_burst.hit = nullptr;
      p.by_burst.walk.table = nullptr;
    };
    // The first lookup of every frame, overlapped: read and hash all their keys, load their buckets, then
    // their records, so what follows finds them in cache instead of waiting on each miss in turn. A key that
    // lies in the outer headers is read straight from a plain IPv4 frame (sim/plain_ipv4.h), and needs a
    // parse of those headers only from any other frame (sim/packet_parser.h); the frame is parsed further
    // when something later needs it.
    const FirstLookup first = FirstLookupOf(stage, fn);
    Burst& b = *worker.burst_;
    bool followed = false;  // FollowJumps set the frames' entries
    uint64_t named = 0;     // frames whose hit (or miss) an index named ahead (LookUpJumpsInIndexes)
    // The frames not started yet: those whose key needs no parse wait for their first lookup's hit, as most
    // need nothing of the walk (FinishFromHit).
    uint64_t unstarted = 0;
    static_assert(kBurst < 64, "a burst's frames are bits of a word");
    // The parse of each frame starts with a load from its headers: request all of them first, so those
    // misses (frames fresh from the wire, or pushed out of cache by a large rule set) overlap.
    for (size_t j = 0; j < n; ++j) __builtin_prefetch(in[j].data());
    if (const hw::CompiledMatcher* m = first.matcher) {
      const bool outer_key = m->definer.ReadsOnly(FilledByOuterParse);
      const size_t words = m->definer.key_words();  // the burst's keys lie end to end
      // The frames whose keys need no parse: those read from plain frames, or every frame for an empty key
      // (a catch-all's, as a root table's jump often is), which has nothing to read.
      uint64_t plain_frames = ~uint64_t{0};
      if (words != 0) {
        PlainIpv4KeyReader& reader = worker.burst_->plain_ipv4;
        plain_frames = reader.Prepare(m->definer) ? reader.ReadBurst(in, n, source, keys) : 0;
      }
      const uint64_t all = (uint64_t{1} << n) - 1;
      if (!trace) unstarted = plain_frames & all;
      // (By their bits: behind a catch-all root, every frame is unstarted and this loop has nothing to do.)
      for (uint64_t rest = ~unstarted & all; rest != 0; rest &= rest - 1) {
        const size_t j = static_cast<size_t>(__builtin_ctzll(rest));
        start(j);
        if (plain_frames >> j & 1) continue;
        uint32_t* key = keys + j * words;
        if (outer_key) {
          burst[j].ParseOuter();
        } else {
          burst[j].Parse();
        }
        m->definer.Extract(burst[j].hv.bytes, key);
      }
      m->table.FindBurst(keys, n, b.first_hits);
      b.num_jumping = 0;
      for (size_t j = 0; j < n; ++j) {
        // AddIfOnlyJumps reads the record's shapes, in cache since the key compare; the programs only for a
        // jump.
        if (!trace && b.first_hits[j] != nullptr) b.AddIfOnlyJumps(j, *b.first_hits[j], first.pipe);
      }
      if (b.num_jumping > 0) {
        named = LookUpJumpsInIndexes(b, in, source);
        worker.CountAnsweredByIndex(static_cast<uint64_t>(__builtin_popcountll(named)));
      }
      followed = b.num_jumping > 0;
      if (followed) {  // FollowJumps and WalkTogether go through every frame but the named ones
        for (size_t j = 0; j < n; ++j) {
          if ((unstarted & ~named) >> j & 1) start(j);
        }
        unstarted &= named;
      }
      for (uint64_t rest = ~(unstarted | named) & all; rest != 0; rest &= rest - 1) {
        const size_t j = static_cast<size_t>(__builtin_ctzll(rest));
        burst[j].by_burst.matcher = m;
        burst[j].by_burst.hit = b.first_hits[j];
      }
      if (followed) {
        // (Every frame's: WalkTogether reads them all, and a named frame's may be left from an earlier
        // burst.)
        for (size_t j = 0; j < n; ++j) burst[j].by_burst.after_jumps = {};
        FollowJumps(b, first);
        WalkTogether(b, n);
      }
    } else {
      for (size_t j = 0; j < n; ++j) start(j);
    }
    // The frames in order (their queues take them in the order they came).
    for (size_t j = 0; j < n; ++j) {
      InFlight& p = burst[j];
      if (named >> j & 1) {
        // (A named miss goes on from the table's miss, as LookUpIndexedTogether leaves a frame it missed.)
        const hw::RuleRecord* hit = b.named_hit[j];
        if (hit != nullptr && FinishFromHit(worker, *hit, first, in[j], fresh_meta, out[j])) continue;
        if (unstarted >> j & 1) start(j);
        p.by_burst.after_jumps = {b.named_table[j], 0, /*jumps=*/1};
        p.by_burst.matcher = b.named_matcher[j];
        p.by_burst.hit = hit;
        p.by_burst.walk = {b.named_table[j], b.named_matcher[j], nullptr};
        if (hit != nullptr && DispatchLookedUpHit(p, first)) continue;
        Run(p, first.stage, *first.fn, p.by_burst.after_jumps, /*trace=*/false);
        continue;
      }
      if (unstarted >> j & 1) {
        const hw::RuleRecord* hit = b.first_hits[j];
        if (hit != nullptr && FinishFromHit(worker, *hit, first, in[j], fresh_meta, out[j])) continue;
        start(j);
        p.by_burst.matcher = first.matcher;
        p.by_burst.hit = hit;
      }
      if (!trace && p.by_burst.hit != nullptr && DispatchLookedUpHit(p, first)) continue;
      if (followed && p.by_burst.after_jumps.table != nullptr) {
        // Past the jumps FollowJumps took.
        Run(p, first.stage, *first.fn, p.by_burst.after_jumps, /*trace=*/false);
      } else {
        Run(p, stage, fn, {}, trace);
      }
    }
    worker.reader_.Leave();
  }
  return absl::OkStatus();
}

}  // namespace drsim::sim
