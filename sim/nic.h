// sim::Nic — the software NIC. It implements hw::Device, so dr:: objects program it exactly as they
// would program a ConnectX device, and it executes what they compiled on real frames.
//
// What it models (this first cut): one port whose uplink is the wire, the PF's NIC_RX pipeline and its
// receive queues. A frame from the wire is parsed into a header vector (sim/packet_parser.h), then walked
// through the NIC_RX steering tables from level 0: in each table the matchers are tried in their lookup
// order, the first hit runs its rule's action program (tag, then the destination: a queue, drop, another
// table, or the domain default), a miss in every matcher takes the domain default, which on NIC_RX is
// drop. The level-0 tables of every NIC_RX domain form one root, merged in priority order. A jump chain
// longer than kMaxTableJumps is dropped (rdma-core allows jumps to any level, so loops are possible).
//
// How it works. Frames are processed in bursts: parse the whole burst, then walk each frame; each
// lookup is one definer extraction and one hashed-table probe per matcher tried. Queues keep a copy of
// each frame with its length and flow tag, as a completion would.
//
// Every frame gets a Verdict saying what happened and, when asked for, the path it took (table, matcher,
// rule of each lookup) for debugging and tests.
//
// Thread-safety: the control side (queues, and the hw::Device calls dr:: makes) is serialised by a lock,
// so domains may be programmed from several threads. The data path does not synchronise with it yet:
// do not process frames while rules or queues change, and process on one thread at a time.
#ifndef DRSIM_SIM_NIC_H_
#define DRSIM_SIM_NIC_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/device.h"
#include "hw/flow_table.h"
#include "hw/match_layout.h"
#include "sim/rx_queue.h"

namespace drsim::sim {

using Frame = absl::Span<const uint8_t>;

// One lookup of the walk: the table searched and what it hit (matcher_id/rule_id 0 = missed everywhere).
// A miss in the root reports table_id 0: the root is every level-0 table of the domain type, merged.
struct Hop {
  uint32_t table_id = 0;
  uint32_t table_level = 0;
  uint32_t matcher_id = 0;
  uint32_t rule_id = 0;
};

enum class Fate : uint8_t {
  kQueued,         // delivered to queue `qp_num`
  kDropped,        // by a drop action
  kDomainDefault,  // missed every matcher, or hit a rule without a destination / with default_miss: NIC_RX
                   // drops
  kQueueFull,      // the destination queue had no room
  kTableLoop,      // more than kMaxTableJumps jumps
};

const char* FateName(Fate fate);

struct Verdict {
  Fate fate = Fate::kDomainDefault;
  uint32_t qp_num = 0;        // kQueued, kQueueFull
  bool has_flow_tag = false;  // a tag action ran
  uint32_t flow_tag = 0;
  absl::InlinedVector<Hop, 4> path;  // filled when tracing
};

struct NicStats {
  uint64_t frames = 0;
  uint64_t queued = 0;
  uint64_t dropped = 0;         // drop actions
  uint64_t domain_default = 0;  // NIC_RX default (drop)
  uint64_t queue_full = 0;
  uint64_t table_loops = 0;
};

class Nic : public hw::Device {
 public:
  static constexpr int kMaxTableJumps = 32;
  static constexpr size_t kBurst = 32;
  static constexpr uint16_t kWirePort = 0xffff;

  Nic();
  ~Nic() override;

  // A receive queue holding up to `capacity` completions; returns its QP number (unique per NIC).
  uint32_t CreateQueue(size_t capacity = 4096);
  // FailedPrecondition (EBUSY) while dest_ibv_qp actions target it; NotFound for an unknown number.
  absl::Status DestroyQueue(uint32_t qp_num);
  // The queue with `qp_num`, or nullptr.
  RxQueue* queue(uint32_t qp_num);

  // Processes frames arriving from the wire, in bursts. `verdicts` (same size as `frames`, or empty)
  // receives each frame's verdict; `trace` also records the path.
  void ReceiveFromWire(absl::Span<const Frame> frames, absl::Span<Verdict> verdicts = {}, bool trace = false);
  // One frame, traced.
  Verdict ReceiveFromWire(Frame frame);

  const NicStats& stats() const { return stats_; }

  // hw::Device
  void AttachRootTable(const hw::FlowTable* table) override;
  void DetachRootTable(const hw::FlowTable* table) override;
  void TableChanged(const hw::FlowTable* table) override;
  uint64_t NextMatcherSequence() override { return ++matcher_sequence_; }
  absl::Status RetainQueue(uint32_t qp_num) override;
  void ReleaseQueue(uint32_t qp_num) override;

 private:
  struct RootEntry {
    const hw::CompiledMatcher* matcher;
    const hw::FlowTable* table;
  };
  // A root table and the copy of its chain taken when its domain last reported a change: other domains'
  // chains may change under their own locks while this NIC merges them.
  struct RootTable {
    const hw::FlowTable* table;
    std::vector<const hw::CompiledMatcher*> chain;
  };
  struct QueueSlot {
    std::unique_ptr<RxQueue> queue;
    int retains = 0;
  };

  void RebuildRoot(mlx5dv_dr_domain_type type);
  void Walk(const hw::HeaderVector& hv, Frame frame, Verdict* verdict, bool trace);
  void Finish(Fate fate, Verdict* verdict);

  std::mutex control_mu_;  // serialises the control side (a std::mutex: ThreadSanitizer sees it)
  std::vector<RootTable> root_tables_[3];  // per domain type, attach order
  std::vector<RootEntry> root_chain_[3];   // merged lookup order
  absl::flat_hash_map<uint32_t, QueueSlot> queues_;
  uint32_t next_qp_num_ = 0x100;
  std::atomic<uint64_t> matcher_sequence_{0};
  NicStats stats_;
  std::unique_ptr<hw::HeaderVector[]> burst_hv_;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_NIC_H_
