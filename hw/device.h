// The device interface: everything the driver (dr/) asks of one PCI function of a NIC (the PF or a VF:
// what rdma-core calls an ibv_context). The software NIC's functions (sim::Function) implement it; a
// recording fake can too, so the driver is testable without a device.
//
// Publication contract: the device processes packets while the driver changes rules, reading without
// locks. The driver therefore never changes in place what a lookup may be reading: match tables publish
// each change atomically (hw/match_table.h), a matcher is linked into or out of its table's chain with
// one store (FlowTable::LinkMatcher, UnlinkMatcher) before TableChanged() tells the device, and
// everything a lookup can reach — matchers, rule records, action data, tables — is freed through the
// device's reclaimer(), never directly.
#ifndef DRSIM_HW_DEVICE_H_
#define DRSIM_HW_DEVICE_H_

#include <infiniband/mlx5dv.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hw/flow_table.h"
#include "hw/parsed_fields.h"
#include "hw/reclaimer.h"

namespace drsim::hw {

// The kinds of ASO objects aso actions use, and one context of one.
enum class AsoKind : uint8_t { kFlowMeter, kFirstHit, kConnTrack };
struct AsoContext {
  AsoKind kind;
  uint32_t id;  // the device's id of the context (object and offset)
};

// What a flow counter's hits say about time, on the device's clock (ns of simulated time): when it began
// counting (its bulk's allocation), its last hit, and the longest stretch it went without one — from
// `since_ns` to the first hit, between two hits, or from the last hit (or `since_ns`) to `now_ns`. Flow
// aging reads it: a counter idle for longer than a timeout at any moment has aged, even if hit since. An
// ASO flow-hit (first-hit) context reports its sets the same way, from when it was last cleared.
struct CounterActivity {
  uint64_t now_ns = 0;
  uint64_t since_ns = 0;
  bool hit = false;          // whether it counted any packet
  uint64_t last_hit_ns = 0;  // when `hit`
  uint64_t longest_idle_ns = 0;
  // How long it has been idle now: since the last hit, or since it began counting.
  uint64_t idle_ns() const { return now_ns - (hit ? last_hit_ns : since_ns); }

  // The history seen at `now_ns` of a record that began at `since_ns`, was last hit (or began) at
  // `last_ns` and went at most `longest_idle_ns` between hits before that: the stretch up to now counts.
  static CounterActivity At(uint64_t now_ns, uint64_t since_ns, bool hit, uint64_t last_ns,
                            uint64_t longest_idle_ns) {
    CounterActivity a;
    a.since_ns = since_ns;
    a.hit = hit;
    if (hit) a.last_hit_ns = last_ns;
    a.now_ns = now_ns > last_ns ? now_ns : last_ns;
    a.longest_idle_ns = longest_idle_ns > a.now_ns - last_ns ? longest_idle_ns : a.now_ns - last_ns;
    return a;
  }
};

// The eSwitch's encap mode, as an administrator sets it (`devlink dev eswitch set ... encap-mode`). It
// decides which root (level-0, kernel-owned) tables take reformat actions: Linux mlx5_ib makes its NIC RX/TX
// tables with decap and reformat enabled only when the mode is none, and its FDB tables only when it is basic
// (drivers/infiniband/hw/mlx5/fs.c, _get_flow_table). Non-root tables are the driver's own and unaffected.
enum class EswitchEncap : uint8_t { kNone, kBasic };

// Whether root tables of `type` take reformat actions under `encap`.
inline bool RootTablesTakeReformat(mlx5dv_dr_domain_type type, EswitchEncap encap) {
  return (type == MLX5DV_DR_DOMAIN_TYPE_FDB) == (encap == EswitchEncap::kBasic);
}

// What a device says about itself (ibv_query_device and its HCA capabilities); dumps report it.
struct DeviceInfo {
  std::string name = "drsim";        // the ibv device name
  std::string fw_version = "0.0.0";  // ibv_device_attr.fw_ver
  uint16_t vhca_id = 0;              // the function's GVMI
  uint8_t num_ports = 1;             // physical ports (phys_port_cnt)
};

class Device {
 public:
  virtual ~Device() = default;

  // Identity and capabilities, for dumps. The defaults describe an anonymous one-port function.
  virtual DeviceInfo Describe() const { return {}; }
  // The match-layout fields the device's parser fills; the matcher compiler refuses masks on the others.
  virtual const ParsedFields& parsed_fields() const = 0;

  // Level-0 tables are where packets of their domain type enter. The device merges the chains of all
  // attached root tables of one type into one lookup order (priority, then newest matcher first).
  virtual void AttachRootTable(const FlowTable* table) = 0;
  virtual void DetachRootTable(const FlowTable* table) = 0;
  // The chain of `table` changed (a matcher was added or removed).
  virtual void TableChanged(const FlowTable* table) = 0;

  // Where the driver retires what the data path may still be reading; nullptr for a device that never
  // reads concurrently with the driver (then the driver frees at once).
  virtual Reclaimer* reclaimer() { return nullptr; }

  // A new number for ordering matchers by creation across the whole device.
  virtual uint64_t NextMatcherSequence() = 0;

  // Receive queues that dest-QP actions may target. Retain fails with NotFound for an unknown QP number;
  // a retained queue cannot be destroyed until every retain is released.
  virtual absl::Status RetainQueue(uint32_t qp_num) = 0;
  virtual void ReleaseQueue(uint32_t qp_num) = 0;

  // Flow counters (DEVX flow-counter objects) that flow_counter actions count into. Retain fails with
  // NotFound for an id outside every allocated bulk; a bulk cannot be freed while retained.
  virtual absl::Status RetainCounter(uint32_t counter_id) = 0;
  virtual void ReleaseCounter(uint32_t counter_id) = 0;
  // A counter's hit history (NotFound for an id outside every bulk). Devices without a clock say
  // Unimplemented.
  virtual absl::StatusOr<CounterActivity> QueryCounterActivity(uint32_t /*counter_id*/) {
    return absl::UnimplementedError("this device keeps no hit history of its flow counters");
  }
  // The sets of ASO first-hit context `aso_context` (the id RetainAso returned) as a hit history, from
  // when the context was made or last cleared. Devices without a clock say Unimplemented.
  virtual absl::StatusOr<CounterActivity> QueryFirstHitActivity(uint32_t /*aso_context*/) {
    return absl::UnimplementedError("this device keeps no hit history of its ASO first-hit contexts");
  }

  // eSwitch: only the eSwitch manager (the PF) may create FDB domains; dest_vport actions name an
  // existing vport (0 = the PF, 1..N the VFs, 0xffff the uplink).
  virtual bool IsEswitchManager() const = 0;
  // The eSwitch's encap mode (which root tables take reformat actions).
  virtual EswitchEncap eswitch_encap() const { return EswitchEncap::kNone; }
  virtual bool HasVport(uint32_t vport) const = 0;

  // TIRs (RSS over receive queues) that dest_devx_tir actions target; as queues.
  virtual absl::Status RetainTir(uint32_t tir) = 0;
  virtual void ReleaseTir(uint32_t tir) = 0;

  // The flow meter object behind a flow_meter action, from PRM flow_meter_parameters (InvalidArgument
  // for bad parameters); modified with modify_field_select bits; destroyed with the action.
  virtual absl::StatusOr<uint32_t> CreateMeter(absl::Span<const uint8_t> params, bool active) = 0;
  virtual absl::Status ModifyMeter(uint32_t meter, absl::Span<const uint8_t> params, bool active,
                                   uint64_t select) = 0;
  virtual void DestroyMeter(uint32_t meter) = 0;

  // The flow sampler object behind a flow_sampler action: it keeps the 1-in-`ratio` count.
  virtual uint32_t CreateSampler(uint32_t ratio) = 0;
  virtual void DestroySampler(uint32_t sampler) = 0;

  // ASO objects (created by the application): the context `offset` of `object`, retained for an aso
  // action (NotFound for an unknown object, InvalidArgument for an offset outside it).
  virtual absl::StatusOr<AsoContext> RetainAso(uint32_t object, uint32_t offset) = 0;
  virtual void ReleaseAso(uint32_t object) = 0;
  // The space ASO object ids and context ids live in: devices that return the same one (the functions of
  // one NIC) reach each other's ASO contexts, as a domain linked to another's CT object does
  // (mlx5dv_dr_aso_other_domain_link). By default, the device's own.
  virtual const void* aso_space() const { return this; }

  // A matcher reading the GENEVE option 0 fields (misc.geneve_tlv_option_0_exist,
  // misc3.geneve_tlv_option_0_data) was created or destroyed: the device's GENEVE TLV option parser
  // object cannot be destroyed while any exists. A device without such objects ignores them.
  virtual void RetainGeneveOptionMatch() {}
  virtual void ReleaseGeneveOptionMatch() {}
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_DEVICE_H_
