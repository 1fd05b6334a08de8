// ASO (advanced steering operation) objects of the software NIC, which aso actions use:
//  - flow meter objects: 2 meters per object line (2^log_range lines), each a TokenMeter whose parameters
//    the application sets (on hardware, with an ASO WQE; here with ConfigureFlowMeter);
//  - first-hit objects: 512 one-bit contexts per line, recording whether a flow was seen. Beside the bit,
//    each keeps when it was last set and the longest stretch between sets since it was last cleared
//    (hw::CounterActivity), which flow aging reads instead of polling the bit every second as mlx5 does;
//  - connection-tracking objects: one CtContext per line (sim/conntrack.h), which software programs for
//    an offloaded TCP connection and the aso action tracks segments of one direction with.
// An aso action reads or updates one context and writes the result to a steering register.
//
// Thread-safety: every call may come from any thread (a lock serialises them: the data path reaches it
// only for packets that hit aso actions).
#ifndef DRSIM_SIM_ASO_H_
#define DRSIM_SIM_ASO_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/device.h"
#include "sim/conntrack.h"
#include "sim/meter.h"

namespace drsim::sim {

class AsoBank {
 public:
  static constexpr uint32_t kMetersPerLine = 2;
  static constexpr uint32_t kFirstHitsPerLine = 512;
  static constexpr uint32_t kConnTracksPerLine = 1;
  // The contexts one line of an object of `kind` holds.
  static uint32_t ContextsPerLine(hw::AsoKind kind);

  // A new object of `kind` with 2^log_range lines (log_range <= 16), made at `now_ns`; returns its id.
  absl::StatusOr<uint32_t> Create(hw::AsoKind kind, uint32_t log_range, uint64_t now_ns = 0);
  // Frees an object: FailedPrecondition (EBUSY) while aso actions use it.
  absl::Status Destroy(uint32_t object);
  // Sets meter `offset` of a flow-meter object (its buckets start full).
  absl::Status ConfigureFlowMeter(uint32_t object, uint32_t offset, const MeterParams& params);
  // What a query of the object reads back: meter `offset`'s parameters (nullopt until configured), or
  // whether first-hit context `offset` was hit. NotFound for an unknown object or one of the other
  // kind, InvalidArgument for an offset outside it.
  absl::StatusOr<std::optional<MeterParams>> FlowMeterParams(uint32_t object, uint32_t offset);
  absl::StatusOr<bool> FirstHitFlag(uint32_t object, uint32_t offset);
  // First-hit context `offset`'s sets as a hit history up to `now_ns`, and clearing it: the bit goes to 0
  // and the history starts again at `now_ns` (what mlx5's poller does with an ASO WQE, and what a context
  // handed to a new age needs). Errors as FirstHitFlag.
  absl::StatusOr<hw::CounterActivity> FirstHitActivity(uint32_t object, uint32_t offset, uint64_t now_ns);
  // The same for the context id an aso action retained (Retain); InvalidArgument for an id that is not a
  // first-hit context's.
  absl::StatusOr<hw::CounterActivity> FirstHitActivity(uint32_t context, uint64_t now_ns);
  absl::Status ClearFirstHit(uint32_t object, uint32_t offset, uint64_t now_ns);
  // Programs CT context `offset` of a connection-tracking object (InvalidArgument for a field out of
  // range: CheckCtContext), and reads one back. A context never programmed reads back with valid unset.
  absl::Status ConfigureConnTrack(uint32_t object, uint32_t offset, const CtContext& context);
  absl::StatusOr<CtContext> ConnTrack(uint32_t object, uint32_t offset);

  // For aso actions: the object's kind, after checking `offset` is inside it (InvalidArgument) — and a
  // reference that keeps the object. Returns the context id the data path uses.
  absl::StatusOr<hw::AsoContext> Retain(uint32_t object, uint32_t offset);
  void Release(uint32_t object);

  // Data path. Colours a packet with meter context `context`, pre-coloured `initial` (green: colour
  // blind); an unconfigured meter passes green.
  MeterColor MarkFlowMeter(uint32_t context, MeterColor initial, uint64_t now_ns, uint32_t l2_bytes,
                           uint32_t ip_bytes);
  // Returns whether first-hit context `context` had been hit; `set` marks it hit at `now_ns`.
  bool FirstHit(uint32_t context, bool set, uint64_t now_ns = 0);
  // Tracks the TCP segment of `frame` (TrackCtFrame: outer L3 at `l3`, L4 at `l4`, as the parser found
  // them) of the original or reply direction through CT context `context`; returns the kCtPkt* packet state.
  uint32_t TrackConnTrack(uint32_t context, bool original, absl::Span<const uint8_t> frame, size_t l3,
                          size_t l4, uint8_t ip_protocol);

 private:
  struct Object {
    hw::AsoKind kind;
    uint32_t base;   // first context id
    uint32_t count;  // contexts
    int references = 0;
  };
  // First-hit context `context`'s history seen at `now_ns`.
  hw::CounterActivity FirstHitHistory(uint32_t context, uint64_t now_ns) const;
  // The object `object` of `kind` with `offset` inside it: the index of that context, or the error.
  absl::StatusOr<uint32_t> ContextOf(uint32_t object, hw::AsoKind kind, uint32_t offset) const;

  std::mutex mu_;
  std::map<uint32_t, Object> objects_;  // by id
  uint32_t next_id_ = 1;
  std::vector<TokenMeter> meters_;  // flow-meter contexts
  std::vector<bool> meter_configured_;
  struct FirstHitContext {
    bool hit = false;
    uint64_t since_ns = 0;         // when it was made or last cleared
    uint64_t last_ns = 0;          // its last set, or since_ns before one
    uint64_t longest_idle_ns = 0;  // between sets (and from since_ns to the first)
  };
  std::vector<FirstHitContext> hits_;
  std::vector<CtContext> conn_tracks_;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_ASO_H_
