// sim::Nic: the software NIC.
//
// What
//   An eSwitch with an uplink (the wire), the PF (vport 0, the eSwitch manager) and N VFs (vports
//   1..N). Each PCI function (sim::Function) implements hw::Device, so dr:: objects program it exactly
//   as they would program a ConnectX function, and the NIC executes what they compiled on real frames.
//   Every frame gets a Verdict saying what happened and, when asked for, the path it took.
//
// How
//   Frames follow the mlx5 Direct Rule model (ConnectX-6 Dx steering):
//     from the wire   -> FDB, RX pipe (source_port 0xffff)      -> a vport's NIC_RX, by dest_vport;
//                        FDB default: the eSwitch manager (PF); dest_vport to the uplink is a drop here
//     vport's NIC_RX  -> a receive queue of that function (dest QP), or drop (the NIC_RX default); a
//                        function with no NIC_RX steering at all takes every frame on its own interface
//                        (Function::PollPort: what its netdev, the kernel, would receive)
//     a function sends-> its NIC_TX (default: on to the eSwitch) -> FDB, TX pipe (source_port = its
//                        vport) -> a vport's NIC_RX, or the wire by dest_vport 0xffff; FDB default: the
//                        eSwitch manager's NIC_RX (frames the PF itself sent go to the wire instead, as
//                        its own traffic does not loop back to it)
//   With no FDB rules at all the eSwitch passes wire traffic to the PF and vport traffic to the wire.
//
//   In each domain a frame enters the merged level-0 tables (ordered by hw::RootRank: the kernel's
//   namespaces, then priority, then newest matcher first). In a table the matchers are tried in lookup
//   order (only those its index names, in a table of many: hw/table_index.h); the first hit runs its
//   rule's program for the pipe (operations in the hardware's order, then a destination), and a miss
//   takes the domain default. Headers a program changes are parsed again before the next lookup;
//   steering registers, the flow tag and reg_b travel with the frame across tables and domains. A jump
//   chain longer than kMaxTableJumps is dropped (rdma-core allows loops).
//
//   The code is in four files: nic_function.cc (what a function offers the driver as hw::Device),
//   nic_pipeline.cc (a frame's walk through the domains and where it ends), nic_burst.cc (the fast path
//   that looks up a burst of frames together before their walks) and nic.cc (the rest). nic_internal.h
//   holds the types they share.
//
// Thread-safety
//   Frames are processed by Workers, one per thread (Nic::ReceiveFromWire and Function::Send use the
//   NIC's built-in worker, so one thread at a time calls those), while any other thread changes rules,
//   queues, TIRs and counters. Workers read the compiled state without locks; the driver publishes every
//   change atomically and frees what it replaced through the NIC's reclaimer (hw/reclaimer.h) once no
//   worker can still see it, so a frame sees each rule completely or not at all. Counters are atomic, so
//   no hit is lost; receive queues, the wire and the ports take frames from any number of workers. The
//   control side (the hw::Device calls dr:: makes, queues, counters) is serialised by a lock.
#ifndef DRSIM_SIM_NIC_H_
#define DRSIM_SIM_NIC_H_

#include <infiniband/mlx5dv.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/action_program.h"
#include "hw/device.h"
#include "hw/flow_table.h"
#include "hw/reclaimer.h"
#include "sim/conntrack.h"
#include "sim/geneve_option.h"
#include "sim/packet_parser.h"
#include "sim/toeplitz.h"

namespace drsim::hw {
class TableIndex;
}  // namespace drsim::hw

namespace drsim::sim {

class ActionExecutor;
class RxQueue;
class RxSink;
enum class MeterColor : uint8_t;
struct MeterParams;
struct PacketMeta;

using Frame = absl::Span<const uint8_t>;

// One lookup of the walk: the domain and table searched, and what it hit (matcher_id/rule_id 0 = missed
// everywhere). A miss in the root reports table_id 0: the root is every level-0 table of the domain type
// on that function, merged.
struct Hop {
  mlx5dv_dr_domain_type domain = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  uint16_t vport = 0;  // the function whose domain it is (the eSwitch manager for FDB)
  uint8_t pipe = hw::kRxPipe;
  uint32_t table_id = 0;
  uint32_t table_level = 0;
  uint32_t matcher_id = 0;
  uint32_t rule_id = 0;
};

enum class Fate : uint8_t {
  kQueued,         // delivered to queue `qp_num` of function `vport`
  kDropped,        // by a drop action
  kDomainDefault,  // missed every matcher, or hit a rule without a destination / with default_miss: NIC_RX
                   // drops
  kQueueFull,      // the destination queue had no room
  kTableLoop,      // more than kMaxTableJumps jumps
  kWire,           // sent out of the uplink
  kPort,           // to function `vport`'s own interface (its netdev), as it has no NIC_RX steering
  kNoTunnel,       // a decap action met a frame without the inner header it keeps (docs/semantics.md)
};

const char* FateName(Fate fate);

// Where one copy of a frame ended up.
struct Delivery {
  Fate fate = Fate::kDomainDefault;
  uint16_t vport = 0;         // kQueued, kQueueFull: the function owning the queue; kPort: the function
  uint32_t qp_num = 0;        // kQueued, kQueueFull
  bool has_flow_tag = false;  // a tag action ran
  uint32_t flow_tag = 0;
};

struct Verdict : Delivery {
  absl::InlinedVector<Hop, 4> path;  // the frame's own path, filled when tracing
  // Copies made by dest_array and flow_sampler actions, each with its outcome. Of a dest array, the first
  // entry with a destination is the frame itself (above); the others are copies.
  std::vector<Delivery> copies;
};

struct NicStats {
  uint64_t frames = 0;  // frames received from the wire or sent by functions
  uint64_t queued = 0;
  uint64_t dropped = 0;         // drop actions
  uint64_t domain_default = 0;  // NIC_RX default (drop)
  uint64_t queue_full = 0;
  uint64_t table_loops = 0;
  uint64_t to_wire = 0;
  uint64_t to_port = 0;    // to a function's own interface (no NIC_RX steering)
  uint64_t no_tunnel = 0;  // dropped by a decap action that found no tunnel to remove
  // Frames whose hit in a table their first hit jumped into came from that table's index, asked for the
  // whole burst, with no walk of the table (the burst fast path).
  uint64_t answered_by_index = 0;
};

class Nic;

// One PCI function: the PF (vport 0) or a VF. Domains are created on it; it owns receive queues.
class Function : public hw::Device {
 public:
  Function(Nic* nic, uint16_t vport) : nic_(nic), vport_(vport) {}
  ~Function() override;

  uint16_t vport() const { return vport_; }

  // A receive queue holding up to `capacity` completions; returns its QP number (unique per NIC).
  uint32_t CreateQueue(size_t capacity = 4096);
  // A queue that keeps nothing and hands each frame to `sink`, which it owns (sim/rx_queue.h).
  uint32_t CreateQueue(size_t capacity, std::unique_ptr<RxSink> sink);
  // FailedPrecondition (EBUSY) while dest_ibv_qp actions target it; NotFound for a number it does not own.
  absl::Status DestroyQueue(uint32_t qp_num);
  // This function's queue with `qp_num`, or nullptr. Valid until the queue is destroyed. Inline: a
  // worker looks its destination queue up for every frame it delivers.
  RxQueue* queue(uint32_t qp_num) const {
    const QueueIndex& index = queue_index_.Read();
    auto it = index.find(qp_num);
    return it == index.end() ? nullptr : it->second;
  }

  // A TIR spreading frames over `queues` (of this function; a power-of-two count, as an RQ indirection
  // table) by the Toeplitz hash of the outer header fields `hash_fields` (IBV_RX_HASH_* bits; 0 = always
  // the first queue) under `key`. Frames lacking a selected field hash to 0. Returns its number.
  absl::StatusOr<uint32_t> CreateTir(std::vector<uint32_t> queues, uint64_t hash_fields,
                                     absl::Span<const uint8_t> key = kMicrosoftRssKey,
                                     RssSymmetry symmetry = RssSymmetry::kNone);
  // FailedPrecondition (EBUSY) while dest_devx_tir actions target it.
  absl::Status DestroyTir(uint32_t tir);

  // Transmits frames from this function (send queue `sqn`): its NIC_TX, then the eSwitch. `verdicts`
  // (same size as `frames`, or empty) receives each frame's verdict; `trace` also records the path.
  // InvalidArgument, with nothing processed, when `verdicts` is neither empty nor as long as `frames`.
  absl::Status Send(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts = {}, bool trace = false,
                    uint32_t sqn = 0);
  // One frame, traced.
  Verdict Send(Frame frame);

  // The oldest frame that reached this function's own interface (its netdev: what the kernel would
  // receive) because the function has no NIC_RX steering — no level-0 matcher in any NIC_RX domain on it.
  // The last kMaxPortBacklog frames are kept; older ones are discarded.
  std::optional<std::vector<uint8_t>> PollPort();
  // The frame PollPort would return, left in place; nullptr when none. Not while workers run.
  const std::vector<uint8_t>* PeekPort() const { return port_in_.empty() ? nullptr : &port_in_.front(); }
  static constexpr size_t kMaxPortBacklog = 4096;

  // hw::Device
  // "drsim_pf" or "drsim_vf<N>", firmware "0.0.0" (there is none), vhca id = vport, one port.
  hw::DeviceInfo Describe() const override;
  // The software NIC parser's fields (sim/parser_coverage.h).
  const hw::ParsedFields& parsed_fields() const override;
  hw::Reclaimer* reclaimer() override;
  void AttachRootTable(const hw::FlowTable* table) override;
  void DetachRootTable(const hw::FlowTable* table) override;
  void TableChanged(const hw::FlowTable* table) override;
  uint64_t NextMatcherSequence() override;
  absl::Status RetainQueue(uint32_t qp_num) override;
  void ReleaseQueue(uint32_t qp_num) override;
  absl::Status RetainCounter(uint32_t counter_id) override;
  void ReleaseCounter(uint32_t counter_id) override;
  absl::StatusOr<hw::CounterActivity> QueryCounterActivity(uint32_t counter_id) override;
  absl::StatusOr<hw::CounterActivity> QueryFirstHitActivity(uint32_t aso_context) override;
  bool IsEswitchManager() const override { return vport_ == 0; }
  hw::EswitchEncap eswitch_encap() const override;
  bool HasVport(uint32_t vport) const override;
  absl::Status RetainTir(uint32_t tir) override;
  void ReleaseTir(uint32_t tir) override;
  absl::StatusOr<uint32_t> CreateMeter(absl::Span<const uint8_t> params, bool active) override;
  absl::Status ModifyMeter(uint32_t meter, absl::Span<const uint8_t> params, bool active,
                           uint64_t select) override;
  void DestroyMeter(uint32_t meter) override;
  uint32_t CreateSampler(uint32_t ratio) override;
  void DestroySampler(uint32_t sampler) override;
  absl::StatusOr<hw::AsoContext> RetainAso(uint32_t object, uint32_t offset) override;
  void ReleaseAso(uint32_t object) override;
  // The NIC's: its functions share one bank of ASO objects (sim/aso.h).
  const void* aso_space() const override { return nic_; }
  void RetainGeneveOptionMatch() override;
  void ReleaseGeneveOptionMatch() override;

 private:
  friend class Nic;
  struct RootEntry {
    const hw::CompiledMatcher* matcher;
    const hw::FlowTable* table;
    uint32_t rank;  // hw::RootRank of the matcher in its table's namespace
  };
  // The merged root of one domain type, as workers read it.
  struct Root {
    std::vector<RootEntry> entries;  // lookup order
    // A root matcher outside the sniffer namespace exists (sniffers copy, they do not steer: a function
    // whose NIC_RX root holds only sniffers still takes misses on its interface).
    bool steered = false;
  };
  // A root table and the copy of its chain taken when its domain last reported a change: other domains'
  // chains may change under their own locks while this function merges them.
  struct RootTable {
    const hw::FlowTable* table;
    hw::MatcherChain chain;
  };
  // Deletes a queue where RxQueue is a complete type (nic_function.cc), so this header need not include
  // sim/rx_queue.h.
  struct DeleteQueue {
    void operator()(RxQueue* queue) const;
  };
  struct QueueSlot {
    std::unique_ptr<RxQueue, DeleteQueue> queue;
    int retains = 0;
  };
  struct Tir {
    std::vector<uint32_t> queues;
    uint64_t hash_fields;
    std::vector<uint8_t> key;
    RssSymmetry symmetry;
  };
  using QueueIndex = absl::flat_hash_map<uint32_t, RxQueue*>;
  using TirIndex = absl::flat_hash_map<uint32_t, Tir>;

  void RebuildRoot(mlx5dv_dr_domain_type type);
  // Publishes the queues as workers see them (control lock held).
  void PublishQueues();

  Nic* nic_;
  uint16_t vport_;
  // Control side, under the NIC's control lock.
  std::vector<RootTable> root_tables_[3];  // per domain type, attach order
  absl::flat_hash_map<uint32_t, QueueSlot> queues_;
  absl::flat_hash_map<uint32_t, int> tir_retains_;
  // What workers read.
  hw::Published<Root> root_[3];  // per domain type
  hw::Published<QueueIndex> queue_index_;
  hw::Published<TirIndex> tirs_;
  std::mutex port_mu_;  // port_in_
  std::deque<std::vector<uint8_t>> port_in_;
  uint64_t port_in_discarded_ = 0;
};

class Worker;

class Nic {
 public:
  static constexpr int kMaxTableJumps = 32;
  static constexpr size_t kBurst = 32;
  static constexpr uint16_t kWirePort = hw::kWireVport;

  // A NIC with the PF and `num_vfs` VFs (vports 1..num_vfs; at most 4094).
  explicit Nic(int num_vfs = 0);
  // Every Worker must be gone first.
  ~Nic();

  Function& pf() { return *functions_[0]; }
  // The function of `vport` (0 = PF, 1..num_vfs() = VFs), or nullptr.
  Function* function(uint32_t vport);
  int num_vfs() const { return static_cast<int>(functions_.size()) - 1; }

  // Processes frames arriving from the wire on the NIC's built-in worker (one thread at a time; see
  // Worker for more). `verdicts` (same size as `frames`, or empty) receives each frame's verdict; `trace`
  // also records the path. InvalidArgument, with nothing processed, when `verdicts` is neither empty nor
  // as long as `frames`.
  absl::Status ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts = {},
                               bool trace = false);
  // One frame, traced.
  Verdict ReceiveFromWire(Frame frame);

  // The oldest frame sent out of the uplink, if any (up to 65536 are kept; older ones are counted and
  // discarded).
  std::optional<std::vector<uint8_t>> PollWire();
  // Moves every frame waiting to leave by the uplink to the end of `out`, oldest first, under one lock;
  // returns how many.
  size_t TakeWireFrames(std::vector<std::vector<uint8_t>>& out);
  // Gives frames' buffers back once the caller is done with them (what TakeWireFrames or PollWire
  // returned, or any others): later frames to the wire are copied into them instead of new allocations.
  // Empties `buffers`; keeps at most kMaxSpareWireBuffers.
  void RecycleWireBuffers(std::vector<std::vector<uint8_t>>& buffers);
  static constexpr size_t kMaxSpareWireBuffers = 1024;
  // The frame PollWire would return, left in place; nullptr when none. Not while workers run.
  const std::vector<uint8_t>* PeekWire() const { return wire_out_.empty() ? nullptr : &wire_out_.front(); }

  // Flow counters: a bulk of `bulk` counters (its base id), their values (with `clear`, read and zeroed in
  // one step), and freeing a bulk (FailedPrecondition while flow_counter actions use it).
  absl::StatusOr<uint32_t> AllocateCounters(uint32_t bulk);
  absl::Status QueryCounter(uint32_t counter_id, uint64_t* packets, uint64_t* bytes, bool clear = false);
  absl::Status FreeCounters(uint32_t base);
  // A counter's hit history on the NIC's clock (hw::CounterActivity): its bulk counts from the time it was
  // allocated. NotFound for an unknown counter.
  absl::StatusOr<hw::CounterActivity> QueryCounterActivity(uint32_t counter_id);

  // ASO objects (aso actions' flow meters, first-hit and connection-tracking contexts): see sim/aso.h.
  // MeterParams is in sim/meter.h, CtContext in sim/conntrack.h (which says how a front end such as
  // testpmd programs, uses and queries a CT context).
  absl::StatusOr<uint32_t> CreateAsoObject(hw::AsoKind kind, uint32_t log_range);
  absl::Status ConfigureAsoFlowMeter(uint32_t object, uint32_t offset, const MeterParams& params);
  absl::StatusOr<std::optional<MeterParams>> QueryAsoFlowMeter(uint32_t object, uint32_t offset);
  absl::StatusOr<bool> QueryAsoFirstHit(uint32_t object, uint32_t offset);
  // A first-hit context's sets as a hit history on the NIC's clock (from its object's creation or its last
  // clear), and clearing it (its flag to 0, its history starting now): what flow aging reads and resets.
  absl::StatusOr<hw::CounterActivity> QueryAsoFirstHitActivity(uint32_t object, uint32_t offset);
  absl::Status ClearAsoFirstHit(uint32_t object, uint32_t offset);
  absl::Status ConfigureAsoConnTrack(uint32_t object, uint32_t offset, const CtContext& context);
  absl::StatusOr<CtContext> QueryAsoConnTrack(uint32_t object, uint32_t offset);
  absl::Status DestroyAsoObject(uint32_t object);

  // GENEVE TLV option parser objects (sim/geneve_option.h): which option every function's frames report
  // as GENEVE option 0. One for the whole NIC, as the parser is the device's.
  absl::StatusOr<uint32_t> CreateGeneveTlvOption(const GeneveTlvOption& option);
  absl::StatusOr<GeneveTlvOption> QueryGeneveTlvOption(uint32_t object);
  absl::Status DestroyGeneveTlvOption(uint32_t object);
  // The option the parser samples now; workers read it for each parse.
  GeneveOptionSelector geneve_option() const {
    return GeneveOptionSelector::FromPacked(geneve_option_.load(std::memory_order_acquire));
  }

  // The eSwitch's encap mode (hw::EswitchEncap; default none, as drsim-run's): set it before rules are
  // made, as an administrator sets it before programs run; rules made earlier keep what they were checked
  // against.
  void set_eswitch_encap(hw::EswitchEncap encap) { eswitch_encap_.store(encap, std::memory_order_relaxed); }
  hw::EswitchEncap eswitch_encap() const { return eswitch_encap_.load(std::memory_order_relaxed); }

  // The NIC's clock, which meters and the counters' hit history run on: frames processed now arrive at
  // `ns`. It only moves forward.
  void set_time_ns(uint64_t ns);
  uint64_t time_ns() const { return now_ns_.load(std::memory_order_relaxed); }

  // Frame counts of every worker, summed (exact once workers are idle).
  NicStats stats() const;

 private:
  friend class Function;
  friend class Worker;
  // These three are defined in nic_internal.h.
  struct Objects;  // counters, ASO objects, meters and samplers
  struct InFlight;
  struct Burst;  // a worker's scratch for one burst
  // The domain walks a frame goes through.
  enum class Stage : uint8_t { kFdbRx, kFdbTx, kNicRx, kNicTx };
  // Where a walk starts: the merged root (from its matchers of hw::RootRank >= root_rank), or a table
  // reached after `jumps` table jumps in this domain (they count towards kMaxTableJumps).
  struct Entry {
    const hw::FlowTable* table = nullptr;
    uint32_t root_rank = 0;
    int jumps = 0;
  };
  enum class Exit : uint8_t { kDefault, kDrop, kQueue, kTir, kVport, kLoop, kNoTunnel, kDone };
  struct DomainExit {
    Exit exit = Exit::kDefault;
    uint32_t arg = 0;  // kQueue: the QP number; kTir: the TIR; kVport: the vport
  };

  // Runs `p` through `stage` on function `fn` from `entry`, then on through the stages that follow.
  void Run(InFlight& p, Stage stage, Function& fn, Entry entry, bool trace);
  // Walks the stage's domain; kDone when the frame was already delivered (replication).
  DomainExit WalkDomain(InFlight& p, Stage stage, Function& fn, Entry entry, bool trace);
  // Sends the copies a dest array or sampler makes on from `stage`.
  DomainExit Replicate(InFlight& p, Stage stage, Function& fn, const hw::ActionProgram& program, bool trace);
  // `trace`: record the path of the frame itself when it goes back into the merged root (kRootTable).
  void RunReplica(InFlight& p, Stage stage, Function& fn, const hw::Replica& r, bool primary, bool trace);
  // Follows a destination of a program or a replica: ends the frame here (drops, loops), or Forward.
  void Dispatch(InFlight& p, Stage stage, Function& fn, DomainExit e, bool trace);
  // Sends the frame on to where `e` leads from `stage` (a queue, a TIR, a vport, the next stage).
  void Forward(InFlight& p, Stage stage, Function& fn, DomainExit e, bool trace);
  void Deliver(InFlight& p, Function& fn, uint32_t qp_num);
  // Puts `frame`, with `meta`'s tag and reg_b, on queue `qp_num` of `fn`: kQueued, or kQueueFull (also when
  // there is no such queue).
  static Fate Enqueue(Function& fn, uint32_t qp_num, Frame frame, const PacketMeta& meta);
  void ToWire(InFlight& p);
  void ToPort(InFlight& p, Function& fn);
  // Records where the frame (or the copy) ended: `vport` and `qp_num` for kQueued/kQueueFull, `vport` for
  // kPort.
  void Finish(Fate fate, InFlight& p, uint16_t vport = 0, uint32_t qp_num = 0);
  // Writes into `d` where a frame with `meta` ended (as Finish).
  static void Record(Delivery& d, Fate fate, const PacketMeta& meta, uint16_t vport, uint32_t qp_num);
  uint32_t PickTirQueue(const Function& fn, uint32_t tir, const InFlight& p) const;
  // Stateful destinations shared by all workers (under control_mu_).
  MeterColor MarkMeter(uint32_t meter, uint32_t l2_bytes, uint32_t ip_bytes);
  bool SampleNext(uint32_t sampler);
  // The matcher every frame entering at a stage is looked up in first, and the stage, function and pipe
  // of its domain (past an empty NIC_TX or FDB domain).
  struct FirstLookup {
    const hw::CompiledMatcher* matcher = nullptr;  // none: no first lookup to make ahead
    Stage stage = Stage::kNicRx;
    Function* fn = nullptr;
    hw::Pipe pipe = hw::kRxPipe;
  };
  // The first lookup of frames entering at `stage` on `fn` (inside a read section).
  FirstLookup FirstLookupOf(Stage stage, Function& fn);
  // The exit of a program whose destination ends its domain's walk (a queue, TIR, vport, drop, or the
  // domain's default), in `e`; false for destinations the walk goes on from.
  static bool TerminalExit(const hw::ActionProgram& program, DomainExit* e);
  // Asks, before FollowJumps, the index of each table the burst's first hits only jump into
  // (Burst::jumping_frame) about the frames jumping there, all together. The index must read only outer
  // headers' words (FilledByOuterParse). A plain IPv4 frame's words are read straight from `frames`
  // (sim/plain_ipv4.h); another frame's outer headers are parsed aside. A frame whose answer starts with a
  // hit the index names leaves the jumping frames: bit j of the result, the hit in Burst::named_*. The
  // caller finishes it from that hit, in the burst's order. So does a frame the index says misses every
  // matcher of the table (no candidate from its first matcher on), its named hit and matcher nullptr: the
  // caller takes it on from the table's miss, as a walk that asked the index would. No set-up, parse of the
  // frame itself or walk comes before. Tables whose chain WalkTogether walks this burst
  // (ChainWalkPolicy) are not asked. Not when tracing.
  uint64_t LookUpJumpsInIndexes(Burst& burst, const Frame* frames, uint16_t source);
  // Follows, for every frame of the burst whose looked-up hit only jumps (no ops, a kTable destination:
  // Burst::jumping_frame), the jump: looks up the table's first matcher the same overlapped way, level
  // after level, and leaves the frame's walk to start at the last table reached
  // (InFlight::BurstLookups::after_jumps, which the caller clears for all frames of the burst first). Not
  // when tracing: the walk records the path.
  void FollowJumps(Burst& burst, const FirstLookup& first);
  // Walks, for the frames FollowJumps led into a table whose first matcher missed them, the table's
  // matchers once for them all, in lookup order: each matcher is read once a burst rather than once a
  // frame, which matters in tables of thousands of matchers (an ACL's). Leaves each frame's walk to start
  // at the matcher that hit (InFlight::BurstLookups::walk), or to find that none did. In a table with an
  // index, only its first hw::TableIndex::chain_first() matchers, and only when walking them has paid for
  // the worker lately (ChainWalkPolicy); then the index about the rest (LookUpIndexedTogether).
  void WalkTogether(Burst& burst, size_t n);
  // Looks up the `k` frames burst.to_index[0, k) that WalkTogether walked into `index`'s table up to the
  // matchers they hold (TableWalk::stopped_before) in the table from there on, with the index's walks of all
  // of them interleaved, and leaves each frame's walk to start at the matcher that hit, or to find that
  // none did (or to ask the index again, frame by frame, if it had too many candidates).
  void LookUpIndexedTogether(Burst& burst, const hw::TableIndex& index, size_t k);
  // Indexes a worker keeps a ChainWalkPolicy for at once.
  static constexpr size_t kMaxChainWalkPolicies = 64;
  // Dispatches `p` from its looked-up hit (Process made it ahead: the first lookup in `first`, the one
  // FollowJumps led to, or WalkTogether's) when that hit's program only sends the frame on — no ops, a
  // terminal destination — as the walks up to it would; false, with nothing done, otherwise. Not when
  // tracing: the walk records the path.
  bool DispatchLookedUpHit(InFlight& p, const FirstLookup& first);
  // Finishes, on `worker`, a frame whose first lookup (`first`) hit `hit` without setting up its InFlight,
  // when the hit's program only sends it on (no ops) to a drop, or in NIC_RX to a queue (`frame` as it came,
  // with the fresh `meta`): writes all of `verdict` (no path, no copies) and counts the frame. False, with
  // nothing done, for any other hit: the frame's walk takes it. Not when tracing: the walk records the path.
  bool FinishFromHit(Worker& worker, const hw::RuleRecord& hit, const FirstLookup& first, Frame frame,
                     const PacketMeta& meta, Verdict& verdict);
  // Runs `frames` on `worker` from `stage` on `fn`, in bursts of kBurst whose first lookups overlap.
  absl::Status Process(Worker& worker, absl::Span<const Frame> frames, absl::Span<Verdict> verdicts,
                       bool trace, uint16_t source, uint32_t sqn, Stage stage, Function& fn);

  // First, so it is destroyed last: its pending frees may be anything the driver retired.
  hw::Reclaimer reclaimer_;
  std::mutex control_mu_;  // serialises the control side (a std::mutex: ThreadSanitizer sees it)
  std::vector<std::unique_ptr<Function>> functions_;
  uint32_t next_qp_num_ = 0x100;
  uint32_t next_object_ = 1;  // TIRs, meters, samplers
  std::atomic<uint64_t> matcher_sequence_{0};
  std::unique_ptr<Objects> objects_;  // under control_mu_
  std::atomic<uint64_t> now_ns_{0};
  std::atomic<hw::EswitchEncap> eswitch_encap_{hw::EswitchEncap::kNone};
  std::atomic<uint32_t> geneve_option_{0};  // GeneveOptionSelector::packed() of objects_->geneve_options
  std::mutex wire_mu_;                      // wire_out_, wire_spare_
  std::deque<std::vector<uint8_t>> wire_out_;
  std::vector<std::vector<uint8_t>> wire_spare_;  // RecycleWireBuffers' buffers, reused by ToWire
  uint64_t wire_out_discarded_ = 0;
  mutable std::mutex workers_mu_;  // workers_, retired_stats_
  std::vector<const Worker*> workers_;
  NicStats retired_stats_;              // of workers already destroyed
  std::unique_ptr<Worker> own_worker_;  // ReceiveFromWire, Function::Send
};

// A thread's share of the NIC's data path. Each thread that processes frames concurrently with others
// uses its own Worker; any number may run at once, on the same or different functions, while other
// threads change the steering. A worker sees each rule completely or not at all, and the memory of a
// deleted rule stays valid while it may still be using it.
class Worker {
 public:
  // ResourceExhausted beyond hw::Reclaimer::kMaxReaders workers on one NIC.
  static absl::StatusOr<std::unique_ptr<Worker>> Create(Nic& nic);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // As Nic::ReceiveFromWire and Function::Send, on this worker.
  absl::Status ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts = {},
                               bool trace = false);
  absl::Status Send(Function& from, absl::Span<const Frame> frames, absl::Span<Verdict> verdicts = {},
                    bool trace = false, uint32_t sqn = 0);

  // What this worker processed.
  NicStats stats() const;

 private:
  friend class Nic;
  explicit Worker(Nic& nic);
  void Count(Fate fate);                       // inline, in nic_internal.h: the data path counts every frame
  void CountAnsweredByIndex(uint64_t frames);  // (NicStats::answered_by_index)

  Nic& nic_;
  hw::Reclaimer::Reader reader_;
  std::unique_ptr<ActionExecutor> executor_;  // (a pointer: this header need not include its type)
  std::unique_ptr<Nic::Burst> burst_;         // reused from one call to the next
  // Written only by the worker's thread, read by Nic::stats() from any.
  std::atomic<uint64_t> frames_{0};
  std::atomic<uint64_t> fates_[static_cast<int>(Fate::kNoTunnel) + 1] = {};  // by Fate (the last)
  std::atomic<uint64_t> answered_by_index_{0};
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_NIC_H_
