#include "sim/nic.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "hw/match_params.h"
#include "hw/table_index.h"
#include "sim/packet_parser.h"
#include "sim/plain_ipv4.h"
#include "sim/rss.h"

namespace drsim::sim {
namespace {

// The largest key a definer can produce: every word of the layout.
constexpr size_t kMaxKeyWords = hw::kMatchParamBytes / 4;
constexpr size_t kMaxWireBacklog = 65536;

}  // namespace

const char* FateName(Fate fate) {
  switch (fate) {
    case Fate::kQueued:
      return "queued";
    case Fate::kDropped:
      return "dropped";
    case Fate::kDomainDefault:
      return "domain default (drop)";
    case Fate::kQueueFull:
      return "queue full";
    case Fate::kTableLoop:
      return "table loop";
    case Fate::kWire:
      return "wire";
    case Fate::kPort:
      return "port";
  }
  return "?";
}

// A frame being processed, with what travels with it. Copies (dest array, sampler) report into the
// original frame's verdict.
struct Nic::InFlight {
  Worker* worker = nullptr;
  PacketBuffer buffer;
  PacketMeta meta;
  hw::HeaderVector hv;
  PacketLayers layers;
  // What `hv` holds of the frame as it is now: nothing, the words ParseOuterHeaders fills
  // (FilledByOuterParse) or all of it (with `layers`).
  enum class Parsed : uint8_t { kNo, kOuter, kWhole };
  Parsed parsed = Parsed::kNo;
  Verdict* verdict = nullptr;  // the original frame's
  // A lookup done ahead for the whole burst (Process's first, FollowJumps's, WalkTogether's hit): the
  // walk's lookup in this matcher takes its result.
  const hw::CompiledMatcher* looked_up = nullptr;
  const hw::RuleRecord* looked_up_hit = nullptr;
  Entry entry;  // set by FollowJumps, for its burst only: the table its walk starts at, if any
  // Set by WalkTogether: the table (entry.table) it walked for this frame, and the matcher that hit
  // (looked_up, with looked_up_hit) or nullptr when none did; then, in a table with an index, the matcher
  // the walk stopped before (nullptr: the chain's end), for the index to take over from. The frame's walk
  // takes it from there.
  const hw::FlowTable* walked = nullptr;
  const hw::CompiledMatcher* walked_to = nullptr;
  const hw::CompiledMatcher* walked_until = nullptr;
  bool copy = false;  // a copy: its outcome goes to verdict->copies

  // Parses the frame as it is now, with its metadata, for the lookups that follow.
  void Parse() {
    // Built in place (guaranteed elision): assigning the returned struct would reload with wide loads the
    // narrow fields the parser has just stored, and stall on them.
    new (&layers) PacketLayers(ParsePacket(buffer.data(), buffer.size(), meta.source_port, &hv));
    LoadMetadata(meta, &hv);
    parsed = Parsed::kWhole;
    looked_up = nullptr;
  }
  // Fills only the words of `hv` that ParseOuterHeaders fills (FilledByOuterParse: the outer headers and
  // the source port), for lookups that read nothing else; metadata and registers are not among them, so a
  // read of those parses the frame whole.
  void ParseOuter() {
    ParseOuterHeaders(buffer.data(), buffer.size(), meta.source_port, &hv);
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
        *hit = m == looked_up                 ? looked_up_hit
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
    looked_up = nullptr;
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
  InFlight frames[kBurst];
  Verdict scratch[kBurst];  // the verdicts when the caller takes none
  uint32_t keys[kBurst * kMaxKeyWords];
  uint64_t hashes[kBurst];
  hw::MatchTable::Candidate candidates[kBurst];
  const hw::RuleRecord* hits[kBurst];  // the first lookup's

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
  PlainIpv4KeyReader plain;  // the first lookup's key from plain IPv4 frames
  static_assert(kBurst <= 64, "PlainIpv4KeyReader::ReadBurst reads up to 64 frames");
  // The frames whose looked-up hit only jumps (no ops, to a table with a matcher), for FollowJumps: their
  // index in the burst, the table each jumps to and that table's first matcher (read once).
  size_t jumping = 0;
  size_t follower[kBurst];
  const hw::FlowTable* into[kBurst];
  const hw::CompiledMatcher* next[kBurst];
  // LookUpIndexedTogether: no lookup ahead (no candidate, too many, or the index named the hit).
  bool refused[kBurst];
  // WalkTogether: the frames the index takes over for, and their queries and candidates.
  size_t handed[kBurst];
  hw::TableIndex::Query queries[kBurst];
  hw::TableIndex::Candidate index_candidates[kBurst][hw::TableIndex::kMaxCandidates];
  // WalkTogether's judgement, per index, of whether walking the first matchers of its table's chain before
  // asking the index pays: it does when most frames hit there (a few hot matchers before a long tail, each
  // refusing most frames on its summary for a few cycles), not when they hit all over the table (then it
  // costs each frame a summary test per matcher walked, in vain).
  struct ChainJudge {
    static constexpr uint32_t kFrames = 256;  // frames a verdict is drawn from
    // A burst in this many walks the chain anyway, to learn afresh where its walked part ends (matchers come
    // and go). The verdict needs no walk: frames the index hits below `past` count as early too.
    static constexpr uint32_t kProbeEvery = 1024;
    uint64_t past = 0;  // the rank of the first matcher past the walked part of the chain (the last walk's)
    uint32_t frames = 0;
    uint32_t early = 0;  // frames that hit a matcher of a rank below `past`
    uint32_t bursts = 0;
    bool walk = true;
    bool WalkNow() { return walk || ++bursts % kProbeEvery == 0; }
    void Count(uint32_t n, uint32_t hit_early) {
      frames += n;
      early += hit_early;
      if (frames < kFrames) return;
      walk = 2 * early >= frames;
      frames = early = 0;
    }
  };
  absl::flat_hash_map<const hw::TableIndex*, ChainJudge> chain_judges;  // (stale ones only mislead a while)

  // Adds frame `j` to the jumping ones when its looked-up `hit` only jumps.
  void NoteJump(size_t j, const hw::RuleRecord& hit, hw::Pipe pipe) {
    if (hit.shapes[pipe] != hw::ProgramShape::kOnlyJumps) return;
    const hw::ActionProgram& program = hit.program(pipe);
    const hw::CompiledMatcher* m = program.table->first_matcher();
    if (m == nullptr) return;
    follower[jumping] = j;
    into[jumping] = program.table;
    next[jumping++] = m;
  }
};

// ---- Function ------------------------------------------------------------------------------------

uint32_t Function::CreateQueue(size_t capacity) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  uint32_t qp_num = nic_->next_qp_num_++;
  queues_[qp_num].queue = std::make_unique<RxQueue>(qp_num, capacity);
  PublishQueues();
  return qp_num;
}

absl::Status Function::DestroyQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = queues_.find(qp_num);
  if (it == queues_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("no receive queue with QP number %d on vport %d", qp_num, vport_));
  }
  if (it->second.retains > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "queue %d is the destination of %d dest_ibv_qp action(s)", qp_num, it->second.retains));
  }
  RxQueue* queue = it->second.queue.release();
  queues_.erase(it);
  PublishQueues();
  hw::Retire(&nic_->reclaimer_, [queue] { delete queue; });  // a worker may be delivering to it
  return absl::OkStatus();
}

void Function::PublishQueues() {
  QueueIndex index;
  for (const auto& [qp_num, slot] : queues_) index[qp_num] = slot.queue.get();
  queue_index_.Publish(std::move(index), &nic_->reclaimer_);
}

RxQueue* Function::queue(uint32_t qp_num) const {
  const QueueIndex& index = queue_index_.Read();
  auto it = index.find(qp_num);
  return it == index.end() ? nullptr : it->second;
}

absl::Status Function::RetainQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = queues_.find(qp_num);
  if (it == queues_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("no receive queue with QP number %d on vport %d", qp_num, vport_));
  }
  ++it->second.retains;
  return absl::OkStatus();
}

void Function::ReleaseQueue(uint32_t qp_num) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = queues_.find(qp_num);
  if (it != queues_.end()) --it->second.retains;
}

absl::Status Function::RetainCounter(uint32_t counter_id) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  return nic_->counters_.Retain(counter_id);
}

void Function::ReleaseCounter(uint32_t counter_id) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->counters_.Release(counter_id);
}

uint64_t Function::NextMatcherSequence() { return ++nic_->matcher_sequence_; }

absl::StatusOr<uint32_t> Function::CreateTir(std::vector<uint32_t> queues, uint64_t hash_fields,
                                             absl::Span<const uint8_t> key, RssSymmetry symmetry) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  if (queues.empty() || (queues.size() & (queues.size() - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TIR: %d queues; an RQ indirection table holds a power of two (1, 2, 4, ...)", queues.size()));
  }
  for (uint32_t q : queues) {
    if (!queues_.contains(q)) {
      return absl::InvalidArgumentError(absl::StrFormat("TIR: no receive queue %d on vport %d", q, vport_));
    }
  }
  // Check the selection and key once, on an all-zero packet of every kind the fields could apply to.
  RssHeaderFields probe;
  probe.ip_version = (hash_fields & (IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6)) ? 6 : 4;
  probe.ip_protocol = (hash_fields & (IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)) ? 17 : 6;
  if (hash_fields != 0) {
    if (absl::StatusOr<uint32_t> h = RssHash(probe, hash_fields, key, symmetry); !h.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("TIR: %s", h.status().message()));
    }
  }
  for (uint32_t q : queues) ++queues_[q].retains;  // the TIR keeps its queues
  const uint32_t tir = nic_->next_object_++;
  TirIndex tirs = tirs_.Read();
  tirs[tir] = {std::move(queues), hash_fields, std::vector<uint8_t>(key.begin(), key.end()), symmetry};
  tirs_.Publish(std::move(tirs), &nic_->reclaimer_);
  tir_retains_[tir] = 0;
  return tir;
}

absl::Status Function::DestroyTir(uint32_t tir) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = tir_retains_.find(tir);
  if (it == tir_retains_.end()) {
    return absl::NotFoundError(absl::StrFormat("no TIR %d on vport %d", tir, vport_));
  }
  if (it->second > 0) {
    return absl::FailedPreconditionError(
        absl::StrFormat("TIR %d is the destination of %d dest_devx_tir action(s)", tir, it->second));
  }
  tir_retains_.erase(it);
  TirIndex tirs = tirs_.Read();
  for (uint32_t q : tirs.at(tir).queues) --queues_[q].retains;
  tirs.erase(tir);
  tirs_.Publish(std::move(tirs), &nic_->reclaimer_);
  return absl::OkStatus();
}

absl::Status Function::RetainTir(uint32_t tir) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = tir_retains_.find(tir);
  if (it == tir_retains_.end()) {
    return absl::NotFoundError(absl::StrFormat("no TIR %d on vport %d", tir, vport_));
  }
  ++it->second;
  return absl::OkStatus();
}

void Function::ReleaseTir(uint32_t tir) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = tir_retains_.find(tir);
  if (it != tir_retains_.end()) --it->second;
}

absl::StatusOr<uint32_t> Function::CreateMeter(absl::Span<const uint8_t> params, bool active) {
  absl::StatusOr<MeterParams> p = MeterParams::Parse(params);
  if (!p.ok()) return p.status();
  if (!p->valid) return absl::InvalidArgumentError("flow meter parameters: the valid bit is 0");
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  const uint32_t meter = nic_->next_object_++;
  nic_->meters_.emplace(meter, TokenMeter(*p, active));
  return meter;
}

absl::Status Function::ModifyMeter(uint32_t meter, absl::Span<const uint8_t> params, bool active,
                                   uint64_t select) {
  absl::StatusOr<MeterParams> p = MeterParams::Parse(params);
  if (!p.ok()) return p.status();
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto it = nic_->meters_.find(meter);
  if (it == nic_->meters_.end()) return absl::NotFoundError(absl::StrFormat("no flow meter %d", meter));
  it->second.Modify(*p, active, select);
  return absl::OkStatus();
}

void Function::DestroyMeter(uint32_t meter) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->meters_.erase(meter);
}

uint32_t Function::CreateSampler(uint32_t ratio) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  const uint32_t sampler = nic_->next_object_++;
  nic_->samplers_[sampler] = {ratio};
  return sampler;
}

void Function::DestroySampler(uint32_t sampler) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->samplers_.erase(sampler);
}

absl::StatusOr<hw::AsoContext> Function::RetainAso(uint32_t object, uint32_t offset) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  return nic_->aso_.Retain(object, offset);
}

void Function::ReleaseAso(uint32_t object) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  nic_->aso_.Release(object);
}

hw::Reclaimer* Function::reclaimer() { return &nic_->reclaimer_; }

hw::DeviceInfo Function::Describe() const {
  hw::DeviceInfo info;
  info.name = vport_ == 0 ? "drsim_pf" : absl::StrFormat("drsim_vf%d", vport_);
  info.vhca_id = vport_;
  return info;
}

bool Function::HasVport(uint32_t vport) const {
  return vport == hw::kWireVport || vport <= static_cast<uint32_t>(nic_->num_vfs());
}

void Function::AttachRootTable(const hw::FlowTable* table) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  root_tables_[table->domain].push_back({table, table->chain});
  RebuildRoot(table->domain);
}

void Function::DetachRootTable(const hw::FlowTable* table) {
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  auto& roots = root_tables_[table->domain];
  roots.erase(
      std::remove_if(roots.begin(), roots.end(), [&](const RootTable& r) { return r.table == table; }),
      roots.end());
  RebuildRoot(table->domain);
}

void Function::TableChanged(const hw::FlowTable* table) {
  // Non-root tables are read in place; a root table's chain is copied (its domain holds its lock while
  // it calls) and the merged root rebuilt.
  if (table->level != 0) return;
  std::lock_guard<std::mutex> lock(nic_->control_mu_);
  for (RootTable& r : root_tables_[table->domain]) {
    if (r.table == table) r.chain = table->chain;
  }
  RebuildRoot(table->domain);
}

void Function::RebuildRoot(mlx5dv_dr_domain_type type) {
  Root root;
  for (const RootTable& r : root_tables_[type]) {
    for (const hw::CompiledMatcher* m : r.chain) {
      root.entries.push_back({m, r.table, hw::RootRank(r.table->root_ns, m->priority)});
      root.steered |= r.table->root_ns != hw::RootNamespace::kSniffer;
    }
  }
  std::stable_sort(root.entries.begin(), root.entries.end(), [](const RootEntry& a, const RootEntry& b) {
    if (a.rank != b.rank) return a.rank < b.rank;
    return a.matcher->sequence > b.matcher->sequence;
  });
  root_[type].Publish(std::move(root), &nic_->reclaimer_);
}

absl::Status Function::Send(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace,
                            uint32_t sqn) {
  return nic_->own_worker_->Send(*this, frames, verdicts, trace, sqn);
}

Verdict Function::Send(Frame frame) {
  Verdict v;
  Send(absl::MakeConstSpan(&frame, 1), absl::MakeSpan(&v, 1), /*trace=*/true).IgnoreError();  // sizes match
  return v;
}

// ---- Nic -----------------------------------------------------------------------------------------

Nic::Nic(int num_vfs) {
  const int vfs = std::clamp(num_vfs, 0, 4094);
  for (int v = 0; v <= vfs; ++v)
    functions_.push_back(std::make_unique<Function>(this, static_cast<uint16_t>(v)));
  own_worker_.reset(new Worker(*this));  // the first reader slot is always free
}

Nic::~Nic() = default;

void Nic::set_time_ns(uint64_t ns) {
  uint64_t now = now_ns_.load(std::memory_order_relaxed);
  while (now < ns && !now_ns_.compare_exchange_weak(now, ns, std::memory_order_relaxed)) {
  }
}

namespace {

void AddStats(const NicStats& s, NicStats* total) {
  total->frames += s.frames;
  total->queued += s.queued;
  total->dropped += s.dropped;
  total->domain_default += s.domain_default;
  total->queue_full += s.queue_full;
  total->table_loops += s.table_loops;
  total->to_wire += s.to_wire;
  total->to_port += s.to_port;
}

}  // namespace

NicStats Nic::stats() const {
  std::lock_guard<std::mutex> lock(workers_mu_);
  NicStats total = retired_stats_;
  for (const Worker* w : workers_) AddStats(w->stats(), &total);
  return total;
}

// ---- Worker --------------------------------------------------------------------------------------

Worker::Worker(Nic& nic)
    : nic_(nic),
      reader_(&nic.reclaimer_),
      executor_(&nic.counters_, &nic.aso_),
      burst_(std::make_unique<Nic::Burst>()) {
  std::lock_guard<std::mutex> lock(nic.workers_mu_);
  nic.workers_.push_back(this);
}

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(Nic& nic) {
  std::unique_ptr<Worker> w(new Worker(nic));
  if (!w->reader_.valid()) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("a NIC runs at most %d workers", hw::Reclaimer::kMaxReaders));
  }
  return w;
}

Worker::~Worker() {
  std::lock_guard<std::mutex> lock(nic_.workers_mu_);
  AddStats(stats(), &nic_.retired_stats_);
  nic_.workers_.erase(std::find(nic_.workers_.begin(), nic_.workers_.end(), this));
}

NicStats Worker::stats() const {
  auto get = [&](Fate f) { return fates_[static_cast<int>(f)].load(std::memory_order_relaxed); };
  NicStats s;
  s.frames = frames_.load(std::memory_order_relaxed);
  s.queued = get(Fate::kQueued);
  s.dropped = get(Fate::kDropped);
  s.domain_default = get(Fate::kDomainDefault);
  s.queue_full = get(Fate::kQueueFull);
  s.table_loops = get(Fate::kTableLoop);
  s.to_wire = get(Fate::kWire);
  s.to_port = get(Fate::kPort);
  return s;
}

void Worker::Count(Fate fate) {
  // Only this worker's thread writes: a load and a store, no read-modify-write.
  std::atomic<uint64_t>& c = fates_[static_cast<int>(fate)];
  c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

absl::Status Worker::ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts,
                                     bool trace) {
  return nic_.Process(*this, frames, verdicts, trace, Nic::kWirePort, 0, Nic::Stage::kFdbRx, nic_.pf());
}

absl::Status Worker::Send(Function& from, absl::Span<const Frame> frames, absl::Span<Verdict> verdicts,
                          bool trace, uint32_t sqn) {
  return nic_.Process(*this, frames, verdicts, trace, from.vport(), sqn, Nic::Stage::kNicTx, from);
}

Function* Nic::function(uint32_t vport) {
  return vport < functions_.size() ? functions_[vport].get() : nullptr;
}

absl::StatusOr<uint32_t> Nic::AllocateCounters(uint32_t bulk) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return counters_.Allocate(bulk);
}

absl::Status Nic::QueryCounter(uint32_t counter_id, uint64_t* packets, uint64_t* bytes) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return counters_.Query(counter_id, packets, bytes);
}

absl::Status Nic::FreeCounters(uint32_t base) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return counters_.Free(base);
}

absl::StatusOr<uint32_t> Nic::CreateAsoObject(hw::AsoKind kind, uint32_t log_range) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return aso_.Create(kind, log_range);
}

absl::Status Nic::ConfigureAsoFlowMeter(uint32_t object, uint32_t offset, const MeterParams& params) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return aso_.ConfigureFlowMeter(object, offset, params);
}

absl::Status Nic::DestroyAsoObject(uint32_t object) {
  std::lock_guard<std::mutex> lock(control_mu_);
  return aso_.Destroy(object);
}

std::optional<std::vector<uint8_t>> Function::PollPort() {
  std::lock_guard<std::mutex> lock(port_mu_);
  if (port_in_.empty()) return std::nullopt;
  std::vector<uint8_t> f = std::move(port_in_.front());
  port_in_.pop_front();
  return f;
}

std::optional<std::vector<uint8_t>> Nic::PollWire() {
  std::lock_guard<std::mutex> lock(wire_mu_);
  if (wire_out_.empty()) return std::nullopt;
  std::vector<uint8_t> f = std::move(wire_out_.front());
  wire_out_.pop_front();
  return f;
}

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

// Inlined into Process's burst loop: a call there costs a third of what it does.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool Nic::DispatchLookedUpHit(InFlight& p, const FirstLookup& first) {
  if (p.looked_up_hit->shapes[first.pipe] != hw::ProgramShape::kSendsOn) return false;
  DomainExit e;
  // hw::ShapeOf and TerminalExit each list the terminal destinations: should they ever disagree, walk.
  if (!TerminalExit(p.looked_up_hit->program(first.pipe), &e)) return false;
  Dispatch(p, first.stage, *first.fn, e, /*trace=*/false);
  return true;
}

ABSL_ATTRIBUTE_ALWAYS_INLINE inline bool Nic::FinishFromHit(Worker& worker, const hw::RuleRecord& hit,
                                                            const FirstLookup& first, Frame frame,
                                                            const PacketMeta& meta, Verdict& verdict) {
  if (hit.shapes[first.pipe] != hw::ProgramShape::kSendsOn) return false;
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

void Nic::FollowJumps(Burst& b, size_t n, const FirstLookup& first) {
  InFlight* burst = b.frames;
  for (size_t j = 0; j < n; ++j) burst[j].entry = {};
  // A level's jumps, taken aside: NoteJump refills the burst's list with the next level's.
  size_t follower[kBurst];
  const hw::FlowTable* into[kBurst];
  const hw::CompiledMatcher* next[kBurst];
  for (int jumps = 1; b.jumping > 0 && jumps <= kMaxTableJumps; ++jumps) {
    const size_t k = b.jumping;
    std::copy_n(b.follower, k, follower);
    std::copy_n(b.into, k, into);
    std::copy_n(b.next, k, next);
    b.jumping = 0;
    // A matcher at a time (mostly one for the whole level): the frames into it that its summary lets through
    // are looked up together, their keys end to end (the first lookup's are done with).
    bool taken[kBurst] = {};
    for (size_t s = 0; s < k; ++s) {
      if (taken[s]) continue;
      const hw::CompiledMatcher* m = next[s];
      const bool outer_key = m->definer.ReadsOnly(FilledByOuterParse);
      const size_t words = m->definer.key_words();
      size_t looking[kBurst];
      size_t count = 0;
      for (size_t i = s; i < k; ++i) {
        if (taken[i] || next[i] != m) continue;
        taken[i] = true;
        InFlight& p = burst[follower[i]];
        p.entry = {into[i], 0, jumps};
        p.looked_up = m;
        p.looked_up_hit = nullptr;
        p.EnsureParsedFor(outer_key);
        // A table that refuses the frame on its summary (an ACL's first matcher, mostly) is not looked into.
        if (!m->MayMatch(p.hv.bytes)) continue;
        m->definer.Extract(p.hv.bytes, b.keys + count * words);
        looking[count++] = follower[i];
      }
      const hw::RuleRecord* found[kBurst];
      m->table.FindBurst(b.keys, count, found);
      for (size_t c = 0; c < count; ++c) {
        burst[looking[c]].looked_up_hit = found[c];
        if (found[c] != nullptr) b.NoteJump(looking[c], *found[c], first.pipe);
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
    if (p.entry.table != nullptr && p.looked_up_hit == nullptr) {
      walking[left++] = {j, p.hv.bytes, p.parsed, 0};
    }
  }
  uint32_t key[kMaxKeyWords];
  while (left > 0) {
    const hw::FlowTable* table = burst[walking[0].frame].entry.table;
    size_t live = 0;  // walking[0, live): the frames into `table` not hit yet
    for (size_t i = 0; i < left; ++i) {
      if (burst[walking[i].frame].entry.table == table) std::swap(walking[i], walking[live++]);
    }
    const size_t into_table = live;
    // A table with an index is walked for its first matchers only, and by a frame only while their
    // summaries do not let it through to a lookup in vain more than kChainLookups times (early matchers
    // that are broad), and only while that pays (ChainJudge); the index takes over from there for the
    // frames together (LookUpIndexedTogether).
    const hw::TableIndex* index = table->index.load(std::memory_order_acquire);
    Burst::ChainJudge* judge = nullptr;
    int chain_left = std::numeric_limits<int>::max();
    if (index != nullptr) {
      if (b.chain_judges.size() > kMaxChainJudges) b.chain_judges.clear();
      judge = &b.chain_judges[index];
      chain_left = judge->WalkNow() ? index->chain_first() : 0;
    }
    const bool walk_chain = chain_left > 0;
    uint32_t chain_hits = 0;
    size_t handed = 0;  // b.handed[0, handed): the frames the index takes over for
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
        const hw::RuleRecord* hit = m == p.looked_up ? nullptr
                                    : readable       ? p.LookUpPastSummary(*m, key)
                                                     : p.LookUp(*m, key);
        w.parsed = p.parsed;
        if (hit == nullptr && (index == nullptr || ++w.lookups <= hw::TableIndex::kChainLookups)) {
          ++i;
          continue;
        }
        if (hit == nullptr) {  // the index takes over after `m`
          p.walked = table;
          p.walked_to = nullptr;
          p.walked_until = m->next_matcher();
          p.looked_up = nullptr;
          if (p.walked_until != nullptr) b.handed[handed++] = w.frame;
          std::swap(w, walking[--live]);
          continue;
        }
        p.walked = table;
        p.walked_to = m;
        p.looked_up = m;
        p.looked_up_hit = hit;
        ++chain_hits;
        std::swap(w, walking[--live]);
      }
    }
    for (size_t i = 0; i < live; ++i) {  // missed every matcher walked
      InFlight& p = burst[walking[i].frame];
      p.walked = table;
      p.walked_to = nullptr;
      p.walked_until = m;
      p.looked_up = nullptr;  // consumed, as a walk consumes it
      if (index != nullptr && m != nullptr) b.handed[handed++] = walking[i].frame;
    }
    if (judge != nullptr) {
      if (walk_chain) judge->past = m == nullptr ? ~uint64_t{0} : hw::LookupRank(*m);
      const uint32_t index_hits_early =
          handed > 0 ? LookUpIndexedTogether(b, *index, handed, judge->past) : 0;
      judge->Count(static_cast<uint32_t>(into_table), chain_hits + index_hits_early);
    }
    // The frames into other tables are next.
    for (size_t i = into_table; i < left; ++i) walking[i - into_table] = walking[i];
    left -= into_table;
  }
}

uint32_t Nic::LookUpIndexedTogether(Burst& b, const hw::TableIndex& index, size_t k, uint64_t below) {
  const bool outer_words = index.ReadsOnly(FilledByOuterParse);
  for (size_t i = 0; i < k; ++i) {
    InFlight& p = b.frames[b.handed[i]];
    p.EnsureParsedFor(outer_words);
    b.queries[i] = {p.hv.bytes, hw::LookupRank(*p.walked_until), b.index_candidates[i], 0};
  }
  index.CandidatesOf(b.queries, k);
  // Each frame's first candidate (its hit, mostly: an exact candidate ends them) looked up the overlapped
  // way, as FollowJumps does (its scratch arrays are free again), unless the index named its hit.
  for (size_t i = 0; i < k; ++i) {
    const hw::TableIndex::Query& q = b.queries[i];
    b.refused[i] = q.count == 0 || q.count > hw::TableIndex::kMaxCandidates || q.out[0].hit != nullptr;
    if (b.refused[i]) continue;
    InFlight& p = b.frames[b.handed[i]];
    const hw::CompiledMatcher& m = *q.out[0].matcher;
    if (p.parsed != InFlight::Parsed::kWhole) p.EnsureParsedFor(m.definer.ReadsOnly(FilledByOuterParse));
    b.RequestBucket(i, m, p.hv.bytes);
  }
  for (size_t i = 0; i < k; ++i) {
    if (!b.refused[i]) b.RequestRecord(i, *b.queries[i].out[0].matcher);
  }
  for (size_t i = 0; i < k; ++i) {
    if (b.refused[i]) continue;
    InFlight& p = b.frames[b.handed[i]];
    const hw::CompiledMatcher* m = b.queries[i].out[0].matcher;
    p.looked_up = m;  // (LookUpCandidates takes it)
    p.looked_up_hit = b.Find(i, *m);
  }
  uint32_t key[kMaxKeyWords];
  uint32_t hits_below = 0;
  for (size_t i = 0; i < k; ++i) {
    const hw::TableIndex::Query& q = b.queries[i];
    InFlight& p = b.frames[b.handed[i]];
    const hw::RuleRecord* hit = nullptr;
    const hw::CompiledMatcher* hit_matcher = nullptr;
    if (q.count > hw::TableIndex::kMaxCandidates ||
        !p.LookUpCandidates(index, q.out, q.count, key, &hit, &hit_matcher)) {
      p.looked_up = nullptr;
      continue;  // (walked_until stays: the frame's walk asks the index again, then walks the chain)
    }
    p.walked_to = hit == nullptr ? nullptr : hit_matcher;
    p.walked_until = nullptr;  // (a miss: no matcher from there on holds a hit)
    p.looked_up = p.walked_to;
    p.looked_up_hit = hit;
    if (hit != nullptr &&
        (hit_matcher == q.out[0].matcher ? q.out[0].rank : hw::LookupRank(*hit_matcher)) < below) {
      ++hits_below;
    }
  }
  return hits_below;
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
    Verdict* out = verdicts.empty() ? worker.burst_->scratch : verdicts.data() + at;
    // One read section per burst: what the driver retires meanwhile waits at most a burst.
    worker.reader_.Enter();
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
      p.looked_up = nullptr;
      p.looked_up_hit = nullptr;
      p.walked = nullptr;
    };
    // The first lookup of every frame, overlapped: read and hash all their keys, load their buckets, then
    // their records, so what follows finds them in cache instead of waiting on each miss in turn. A key that
    // lies in the outer headers is read straight from a plain IPv4 frame (sim/plain_ipv4.h), and needs a
    // parse of those headers only from any other frame (sim/packet_parser.h); the frame is parsed further
    // when something later needs it.
    const FirstLookup first = FirstLookupOf(stage, fn);
    Burst& b = *worker.burst_;
    bool followed = false;  // FollowJumps set the frames' entries
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
        PlainIpv4KeyReader& reader = worker.burst_->plain;
        plain_frames = reader.Prepare(m->definer) ? reader.ReadBurst(in, n, source, keys) : 0;
      }
      if (!trace) unstarted = plain_frames & ((uint64_t{1} << n) - 1);
      for (size_t j = 0; j < n; ++j) {
        if ((unstarted >> j & 1) == 0) start(j);
        if (plain_frames >> j & 1) continue;
        uint32_t* key = keys + j * words;
        if (outer_key) {
          burst[j].ParseOuter();
        } else {
          burst[j].Parse();
        }
        m->definer.Extract(burst[j].hv.bytes, key);
      }
      m->table.FindBurst(keys, n, b.hits);
      b.jumping = 0;
      for (size_t j = 0; j < n; ++j) {
        // NoteJump reads the record's shapes, in cache since the key compare; the programs only for a jump.
        if (!trace && b.hits[j] != nullptr) b.NoteJump(j, *b.hits[j], first.pipe);
      }
      followed = b.jumping > 0;
      if (followed) {  // FollowJumps and WalkTogether go through every frame of the burst
        for (size_t j = 0; j < n; ++j) {
          if (unstarted >> j & 1) start(j);
        }
        unstarted = 0;
      }
      for (size_t j = 0; j < n; ++j) {
        if (unstarted >> j & 1) continue;
        burst[j].looked_up = m;
        burst[j].looked_up_hit = b.hits[j];
      }
      if (followed) {
        FollowJumps(b, n, first);
        WalkTogether(b, n);
      }
    } else {
      for (size_t j = 0; j < n; ++j) start(j);
    }
    for (size_t j = 0; j < n; ++j) {
      InFlight& p = burst[j];
      if (unstarted >> j & 1) {
        const hw::RuleRecord* hit = b.hits[j];
        if (hit != nullptr && FinishFromHit(worker, *hit, first, in[j], fresh_meta, out[j])) continue;
        start(j);
        p.looked_up = first.matcher;
        p.looked_up_hit = hit;
      }
      if (!trace && p.looked_up_hit != nullptr && DispatchLookedUpHit(p, first)) continue;
      if (followed && p.entry.table != nullptr) {
        Run(p, first.stage, *first.fn, p.entry, /*trace=*/false);  // past the jumps FollowJumps took
      } else {
        Run(p, stage, fn, {}, trace);
      }
    }
    worker.reader_.Leave();
  }
  return absl::OkStatus();
}

absl::Status Nic::ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts, bool trace) {
  return own_worker_->ReceiveFromWire(frames, verdicts, trace);
}

Verdict Nic::ReceiveFromWire(Frame frame) {
  Verdict v;
  ReceiveFromWire(absl::MakeConstSpan(&frame, 1), absl::MakeSpan(&v, 1), /*trace=*/true).IgnoreError();
  return v;
}

void Nic::Finish(Fate fate, InFlight& p, uint16_t vport, uint32_t qp_num) {
  Record(p.copy ? p.verdict->copies.emplace_back() : *p.verdict, fate, p.meta, vport, qp_num);
  p.worker->Count(fate);
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

void Nic::ToWire(InFlight& p) {
  {
    std::lock_guard<std::mutex> lock(wire_mu_);
    if (wire_out_.size() >= kMaxWireBacklog) {
      wire_out_.pop_front();
      ++wire_out_discarded_;
    }
    wire_out_.emplace_back(p.buffer.data(), p.buffer.data() + p.buffer.size());
  }
  Finish(Fate::kWire, p);
}

void Nic::Deliver(InFlight& p, Function& fn, uint32_t qp_num) {
  Finish(Enqueue(fn, qp_num, {p.buffer.data(), p.buffer.size()}, p.meta), p, fn.vport(), qp_num);
}

inline Fate Nic::Enqueue(Function& fn, uint32_t qp_num, Frame frame, const PacketMeta& meta) {
  RxQueue* q = fn.queue(qp_num);
  const bool ok =
      q != nullptr && q->Push(frame.data(), frame.size(), meta.has_flow_tag, meta.flow_tag, meta.reg_b);
  return ok ? Fate::kQueued : Fate::kQueueFull;
}

void Nic::ToPort(InFlight& p, Function& fn) {
  {
    std::lock_guard<std::mutex> lock(fn.port_mu_);
    if (fn.port_in_.size() >= Function::kMaxPortBacklog) {
      fn.port_in_.pop_front();
      ++fn.port_in_discarded_;
    }
    fn.port_in_.emplace_back(p.buffer.data(), p.buffer.data() + p.buffer.size());
  }
  Finish(Fate::kPort, p, fn.vport());
}

uint32_t Nic::PickTirQueue(const Function& fn, uint32_t tir, const InFlight& p) const {
  const Function::Tir& t = fn.tirs_.Read().at(tir);
  // IBV_RX_HASH_INNER: the tunnelled packet's inner headers (all zero, so no hash, on a plain packet).
  const RssHeaderFields f = RssFieldsOf(p.hv, (t.hash_fields & IBV_RX_HASH_INNER) != 0);
  uint32_t hash = 0;
  if (t.hash_fields != 0 && (f.ip_version == 4 || f.ip_version == 6)) {
    hash = RssHash(f, t.hash_fields, t.key, t.symmetry).value_or(0);  // a frame lacking a field hashes to 0
  }
  return t.queues[hash & (t.queues.size() - 1)];
}

void Nic::Run(InFlight& p, Stage stage, Function& fn, Entry entry, bool trace) {
  Dispatch(p, stage, fn, WalkDomain(p, stage, fn, entry, trace), trace);
}

inline void Nic::Dispatch(InFlight& p, Stage stage, Function& fn, DomainExit e, bool trace) {
  switch (e.exit) {
    case Exit::kDone:
      return;
    case Exit::kLoop:
      return Finish(Fate::kTableLoop, p);
    case Exit::kDrop:
      return Finish(Fate::kDropped, p);
    default:
      return Forward(p, stage, fn, e, trace);
  }
}

void Nic::Forward(InFlight& p, Stage stage, Function& fn, DomainExit e, bool trace) {
  switch (stage) {
    case Stage::kFdbRx:
      // From the wire: to a vport's NIC_RX, by default the eSwitch manager's.
      if (e.exit == Exit::kVport) return Run(p, Stage::kNicRx, *function(e.arg), {}, trace);
      if (e.exit == Exit::kDefault) return Run(p, Stage::kNicRx, pf(), {}, trace);
      return Finish(Fate::kDropped, p);  // not reachable: FDB rules take no queue
    case Stage::kFdbTx:
      if (e.exit == Exit::kVport) {
        if (e.arg == kWirePort) return ToWire(p);
        return Run(p, Stage::kNicRx, *function(e.arg), {}, trace);
      }
      if (e.exit == Exit::kDefault) {
        // The eSwitch manager; its own frames leave by the wire rather than loop back to it.
        if (p.meta.source_port == 0) return ToWire(p);
        return Run(p, Stage::kNicRx, pf(), {}, trace);
      }
      return Finish(Fate::kDropped, p);
    case Stage::kNicRx:
      if (e.exit == Exit::kQueue) return Deliver(p, fn, e.arg);
      if (e.exit == Exit::kTir) {
        p.EnsureParsed();  // RSS hashes its header fields
        return Deliver(p, fn, PickTirQueue(fn, e.arg, p));
      }
      // No NIC_RX steering at all: the function's own interface takes the frame.
      if (e.exit == Exit::kDefault && !fn.root_[MLX5DV_DR_DOMAIN_TYPE_NIC_RX].Read().steered) {
        return ToPort(p, fn);
      }
      return Finish(Fate::kDomainDefault, p);
    case Stage::kNicTx:
      if (e.exit == Exit::kDefault) {
        // NIC_TX allows: on to the eSwitch (with no FDB steering at all, straight to the wire).
        if (pf().root_[MLX5DV_DR_DOMAIN_TYPE_FDB].Read().entries.empty()) return ToWire(p);
        return Run(p, Stage::kFdbTx, pf(), {}, trace);
      }
      return Finish(Fate::kDropped, p);
  }
}

void Nic::RunReplica(InFlight& p, Stage stage, Function& fn, const hw::Replica& r, bool primary, bool trace) {
  if (p.worker->executor_.Run(r.ops, p.buffer, p.meta, time_ns())) p.Unparse();
  switch (r.destination) {
    case hw::Destination::kQueue:
      // A queue leg on NIC_TX comes only from a kernel sniffer entry: a copy of a sent frame.
      if (stage == Stage::kNicTx) return Deliver(p, fn, r.queue);
      return Dispatch(p, stage, fn, {Exit::kQueue, r.queue}, false);
    case hw::Destination::kTir:
      return Dispatch(p, stage, fn, {Exit::kTir, r.tir}, false);
    case hw::Destination::kVport:
      return Dispatch(p, stage, fn, {Exit::kVport, r.vport}, false);
    case hw::Destination::kTable:
      return Run(p, stage, fn, {r.table}, false);
    case hw::Destination::kRootTable:
      return Run(p, stage, fn, {nullptr, r.root_rank}, trace);
    case hw::Destination::kDefaultMiss:
      return Dispatch(p, stage, fn, {}, false);
    default:
      if (primary) Finish(Fate::kDropped, p);  // a counter-only entry delivers nothing
      return;
  }
}

Nic::DomainExit Nic::Replicate(InFlight& p, Stage stage, Function& fn, const hw::ActionProgram& program,
                               bool trace) {
  const std::vector<hw::Replica>& replicas = *program.replicas;
  // The frame itself takes the first entry with a destination; every other entry gets a copy.
  size_t primary = replicas.size();
  for (size_t i = 0; i < replicas.size() && primary == replicas.size(); ++i) {
    if (replicas[i].destination != hw::Destination::kNone) primary = i;
  }
  for (size_t i = 0; i < replicas.size(); ++i) {
    if (i == primary) continue;
    InFlight copy = p;
    copy.copy = true;
    RunReplica(copy, stage, fn, replicas[i], /*primary=*/false, /*trace=*/false);
  }
  if (primary == replicas.size()) {
    Finish(Fate::kDropped, p);
  } else {
    RunReplica(p, stage, fn, replicas[primary], /*primary=*/!p.copy, trace);
  }
  return {Exit::kDone};
}

MeterColor Nic::MarkMeter(uint32_t meter, uint32_t l2_bytes, uint32_t ip_bytes) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto m = meters_.find(meter);
  return m == meters_.end() ? MeterColor::kGreen : m->second.Mark(time_ns(), l2_bytes, ip_bytes);
}

bool Nic::SampleNext(uint32_t sampler) {
  std::lock_guard<std::mutex> lock(control_mu_);
  auto it = samplers_.find(sampler);
  return it != samplers_.end() && ++it->second.seen % it->second.ratio == 0;
}

Nic::DomainExit Nic::WalkDomain(InFlight& p, Stage stage, Function& fn, Entry entry, bool trace) {
  mlx5dv_dr_domain_type type;
  hw::Pipe pipe;
  switch (stage) {
    case Stage::kFdbRx:
      type = MLX5DV_DR_DOMAIN_TYPE_FDB;
      pipe = hw::kRxPipe;
      break;
    case Stage::kFdbTx:
      type = MLX5DV_DR_DOMAIN_TYPE_FDB;
      pipe = hw::kTxPipe;
      break;
    case Stage::kNicRx:
      type = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
      pipe = hw::kRxPipe;
      break;
    default:
      type = MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
      pipe = hw::kTxPipe;
      break;
  }
  const std::vector<Function::RootEntry>& root = fn.root_[type].Read().entries;
  if (root.empty() && entry.table == nullptr) return {};
  uint32_t key[kMaxKeyWords];
  const hw::FlowTable* table = entry.table;  // nullptr: the merged root
  uint32_t root_rank = entry.root_rank;
  // Where the walk of the first table starts: WalkTogether may have walked it for the frame already.
  const hw::CompiledMatcher* walk_from = nullptr;
  const hw::CompiledMatcher* walked_until = nullptr;
  const bool walked = table != nullptr && p.walked == table;
  if (walked) walk_from = p.walked_to, walked_until = p.walked_until;
  p.walked = nullptr;
  for (int jumps = entry.jumps;; ++jumps) {
    if (jumps > kMaxTableJumps) return {Exit::kLoop};
    const hw::RuleRecord* hit = nullptr;
    const hw::CompiledMatcher* hit_matcher = nullptr;
    const hw::FlowTable* hit_table = table;
    auto try_matcher = [&](const hw::CompiledMatcher* m) ABSL_ATTRIBUTE_ALWAYS_INLINE {
      // The burst's first lookup (Process, FollowJumps, WalkTogether), made on these same headers, or a
      // lookup now.
      hit = m == p.looked_up ? p.looked_up_hit : p.LookUp(*m, key);
      p.looked_up = nullptr;
      hit_matcher = m;
      return hit != nullptr;
    };
    // Whether WalkTogether walked this table for the frame already (before it had an index, if it has one).
    const bool resume = jumps == entry.jumps && walked;
    if (table == nullptr) {
      for (const Function::RootEntry& e : root) {
        if (e.rank < root_rank) continue;
        if (try_matcher(e.matcher)) {
          hit_table = e.table;
          break;
        }
      }
    } else {
      // The chain, up to its end or, in a table with an index, for its first matchers only (none when
      // WalkTogether walked those); then the index from the next one on, or the chain again when the index
      // has too many candidates.
      const hw::TableIndex* index = table->index.load(std::memory_order_acquire);
      const hw::CompiledMatcher* m = table->first_matcher();
      int chain_left = index == nullptr ? std::numeric_limits<int>::max() : index->chain_first();
      if (resume) {
        m = walk_from != nullptr ? walk_from : walked_until;
        if (index != nullptr) chain_left = walk_from == nullptr ? 0 : std::numeric_limits<int>::max();
      }
      for (; m != nullptr; m = m->next_matcher()) {
        if (chain_left-- == 0 && p.LookUpIndexed(*index, hw::LookupRank(*m), key, &hit, &hit_matcher)) break;
        m->PrefetchAhead();
        if (try_matcher(m)) break;
      }
    }
    if (trace && !p.copy) {
      Hop hop;
      hop.domain = type;
      hop.vport = fn.vport();
      hop.pipe = pipe;
      if (hit_table != nullptr) {
        hop.table_id = hit_table->id;
        hop.table_level = hit_table->level;
      }
      if (hit != nullptr) {
        hop.matcher_id = hit_matcher->id;
        hop.rule_id = hit->rule_id;
      }
      p.verdict->path.push_back(hop);
    }
    if (hit == nullptr) return {};

    const hw::ActionProgram& program = hit->program(pipe);
    if (!program.ops.empty() && p.worker->executor_.Run(program.ops, p.buffer, p.meta, time_ns())) {
      p.Unparse();
    }
    if (DomainExit e; TerminalExit(program, &e)) return e;
    switch (program.destination) {
      case hw::Destination::kReplicate:
        return Replicate(p, stage, fn, program, trace);
      case hw::Destination::kTable:
        table = program.table;
        break;
      case hw::Destination::kRootTable:
        table = nullptr;
        root_rank = hw::RootRank(hw::RootNamespace::kBypass, program.root_priority);
        break;
      case hw::Destination::kMeter: {
        p.EnsureParsed();  // the IP length
        const size_t ip_bytes = p.layers.l3 ? p.buffer.size() - p.layers.l3 : p.buffer.size();
        const MeterColor c =
            MarkMeter(program.meter, static_cast<uint32_t>(p.buffer.size()), static_cast<uint32_t>(ip_bytes));
        uint32_t& reg = p.meta.reg_c[program.meter_reg];
        reg = (reg & ~0xffu) | static_cast<uint32_t>(c);
        p.Unparse();  // the next lookup sees the colour
        table = program.table;
        break;
      }
      case hw::Destination::kSampler: {
        if (SampleNext(program.sampler)) {
          InFlight copy = p;
          copy.copy = true;
          RunReplica(copy, stage, fn, *program.sample, /*primary=*/false, /*trace=*/false);
        }
        table = program.table;
        root_rank = 0;
        break;
      }
      default:
        return {};  // not reachable: TerminalExit took the other destinations
    }
  }
}

}  // namespace drsim::sim
