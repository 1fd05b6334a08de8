// ALLOC_FLOW_COUNTER (0x939) and QUERY_FLOW_COUNTER (0x93b): bulks of the NIC's flow counters as DEVX
// objects (the C API's kFlowCounter objects, as drsim_counter_alloc makes them). ALLOC_Q_COUNTER (0x771)
// and QUERY_Q_COUNTER (0x773): queue counters, of which the NIC models out_of_buffer.
#include <cstdint>

#include "absl/strings/str_format.h"
#include "capi/objects.h"
#include "sim/nic.h"
#include "soft_mlx5/devx_handlers.h"

namespace drsim::soft_mlx5 {
namespace {

// alloc_flow_counter_in / _out. A bulk has 2^flow_counter_bulk_log_size counters when that is set, else
// 128 * flow_counter_bulk (one bit of the general page's flow_counter_bulk_alloc), else one counter.
constexpr PrmField kBulkLogSize{0x73, 5};
constexpr PrmField kBulk{0x78, 8};
constexpr PrmField kAllocatedId{0x40, 32};
constexpr uint64_t kMaxBulkLog = 23;  // the general page's log_max_flow_counter_bulk

// query_flow_counter_in / _out: num_of_counters counters from flow_counter_id (0 counts as 1), each as
// 64-bit packets and octets after the 16-byte header.
constexpr PrmField kClear{0xc0, 1};
constexpr PrmField kDumpToMemory{0xc1, 1};
constexpr PrmField kNumOfCounters{0xc2, 30};
constexpr PrmField kFlowCounterId{0xe0, 32};
constexpr PrmField kPackets{0x80, 64};  // of counter i: At(0x80 * i)
constexpr PrmField kOctets{0xc0, 64};
constexpr size_t kStatisticsBytes = 16;

}  // namespace

Outcome AllocFlowCounter(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created) {
  if (Outcome o = RequireInput(m, kBulk, "flow_counter_bulk"); !o.ok()) return o;
  const uint64_t log_size = PrmGet(m.in, kBulkLogSize);
  const uint64_t bulk = PrmGet(m.in, kBulk);
  uint32_t count = 1;
  if (log_size != 0) {
    if (log_size > kMaxBulkLog) {
      return FirmwareError(PrmStatus::kExceedsLimit, kBulkLogSize,
                           absl::StrFormat("flow_counter_bulk_log_size %d: at most %d "
                                           "(log_max_flow_counter_bulk)",
                                           log_size, kMaxBulkLog));
    }
    count = 1u << log_size;
  } else if (bulk != 0) {
    if ((bulk & (bulk - 1)) != 0) {
      return FirmwareError(PrmStatus::kBadParam, kBulk,
                           absl::StrFormat("flow_counter_bulk 0x%x: one bit of flow_counter_bulk_alloc "
                                           "(0xff), for a bulk of 128 << i counters",
                                           bulk));
    }
    count = 128 * static_cast<uint32_t>(bulk);
  }
  capi::Context& ctx = *fn.owner;
  absl::StatusOr<uint32_t> base = ctx.nic->AllocateCounters(count);
  if (!base.ok()) {
    return FirmwareError(PrmStatus::kNoResources, log_size != 0 ? kBulkLogSize : kBulk,
                         std::string(base.status().message()));
  }
  PrmSet(m.out, kAllocatedId, *base);
  *created = capi::NewDevxObject(ctx, capi::DevxKind::kFlowCounter, fn.vport, *base, count);
  return Done();
}

Outcome QueryFlowCounter(mlx5dv_devx_obj& counters, Mailbox m) {
  if (Outcome o = RequireInput(m, kFlowCounterId, "flow_counter_id"); !o.ok()) return o;
  const uint64_t id = PrmGet(m.in, kFlowCounterId);
  if (counters.kind != capi::DevxKind::kFlowCounter) {
    return Refused(PrmStatus::kBadParam, kFlowCounterId,
                   absl::StrFormat("flow_counter_id %d: the object is a %s, not a flow counter bulk", id,
                                   DescribeDevxKind(counters.kind)));
  }
  const uint64_t first = counters.id, end = first + counters.count;
  if (id < first || id >= end) {
    return Refused(PrmStatus::kBadResource, kFlowCounterId,
                   absl::StrFormat("flow_counter_id %d is not a counter of this bulk (ids %d to %d)", id,
                                   first, end - 1));
  }
  if (PrmGet(m.in, kDumpToMemory) != 0) {
    return Unsupported(PrmStatus::kBadParam, kDumpToMemory,
                       "dump_to_memory: writing counters through an mkey is not modelled; read them from "
                       "the output");
  }
  const uint64_t asked = PrmGet(m.in, kNumOfCounters);
  const uint64_t n = asked == 0 ? 1 : asked;
  if (id + n > end) {
    return FirmwareError(
        PrmStatus::kBadParam, kNumOfCounters,
        absl::StrFormat("num_of_counters %d from flow_counter_id %d: the bulk's last id is %d", asked, id,
                        end - 1));
  }
  const size_t needed = prm::kOutHeaderBytes + kStatisticsBytes * n;
  if (Outcome o = RequireOutput(m, needed, "flow_statistics of num_of_counters counter(s)"); !o.ok())
    return o;
  const bool clear = PrmGet(m.in, kClear) != 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t packets = 0, octets = 0;
    absl::Status s = counters.ctx->nic->QueryCounter(static_cast<uint32_t>(id + i), &packets, &octets, clear);
    if (!s.ok()) {
      return FirmwareError(PrmStatus::kBadResource, kFlowCounterId, std::string(s.message()));
    }
    const uint32_t at = static_cast<uint32_t>(8 * kStatisticsBytes * i);
    PrmSet(m.out, kPackets.At(at), packets);
    PrmSet(m.out, kOctets.At(at), octets);
  }
  return Done();
}

namespace {

// alloc_q_counter_out, query_q_counter_in / _out.
constexpr PrmField kCounterSetIdOut{0x58, 8};
constexpr PrmField kQueueCounterClear{0xc0, 1};
constexpr PrmField kCounterSetIdIn{0xf8, 8};
constexpr PrmField kOutOfBuffer{0x180, 32};
constexpr size_t kQueryQueueCounterOutBytes = 0x100;  // the output up to and past out_of_buffer
constexpr uint32_t kMaxQueueCounters = 255;           // counter_set_id is 8 bits; 0 is the default set

}  // namespace

// A queue counter of function `fn`. On a ConnectX, an RQ counts into the set it was attached to; the
// software device has one set per function, so every counter of a function reads out_of_buffer of all
// its receive queues, counted from the counter's allocation (or last clear).
Outcome AllocQueueCounter(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created) {
  if (Outcome o = RequireOutput(m, prm::kOutHeaderBytes, "counter_set_id"); !o.ok()) return o;
  capi::Context& ctx = *fn.owner;
  if (ctx.queue_counters.size() >= kMaxQueueCounters) {
    return FirmwareError(PrmStatus::kNoResources, kCounterSetIdOut,
                         absl::StrFormat("all %d queue counters are allocated", kMaxQueueCounters));
  }
  uint32_t id = ctx.next_queue_counter;
  while (ctx.queue_counters.contains(id) || id == 0 || id > kMaxQueueCounters) {
    id = id >= kMaxQueueCounters ? 1 : id + 1;
  }
  ctx.next_queue_counter = id + 1;
  mlx5dv_devx_obj* obj = capi::NewDevxObject(ctx, capi::DevxKind::kQueueCounter, fn.vport, id, 1);
  obj->baseline = ctx.rx_out_of_buffer[fn.vport];
  ctx.queue_counters[id] = obj;
  PrmSet(m.out, kCounterSetIdOut, id);
  *created = obj;
  return Done();
}

Outcome QueryQueueCounter(capi::Context& ctx, uint16_t vport, mlx5dv_devx_obj* counter, Mailbox m) {
  if (Outcome o = RequireInput(m, kCounterSetIdIn, "counter_set_id"); !o.ok()) return o;
  if (Outcome o = RequireOutput(m, kQueryQueueCounterOutBytes, "query_q_counter_out"); !o.ok()) return o;
  const uint32_t id = static_cast<uint32_t>(PrmGet(m.in, kCounterSetIdIn));
  if (counter == nullptr) {
    auto it = ctx.queue_counters.find(id);
    if (it == ctx.queue_counters.end() || it->second->vport != vport) {
      return FirmwareError(PrmStatus::kBadResource, kCounterSetIdIn,
                           absl::StrFormat("counter_set_id %d: no queue counter of this function", id));
    }
    counter = it->second;
  } else if (counter->kind != capi::DevxKind::kQueueCounter || counter->id != id) {
    return Refused(
        PrmStatus::kBadParam, kCounterSetIdIn,
        absl::StrFormat("counter_set_id %d: the object is a %s%s", id, DescribeDevxKind(counter->kind),
                        counter->kind == capi::DevxKind::kQueueCounter
                            ? absl::StrFormat(" with counter_set_id %d", counter->id)
                            : ""));
  }
  const uint64_t now = ctx.rx_out_of_buffer[counter->vport];
  PrmSet(m.out, kOutOfBuffer, static_cast<uint32_t>(now - counter->baseline));
  if (PrmGet(m.in, kQueueCounterClear) != 0) counter->baseline = now;
  return Done();
}

}  // namespace drsim::soft_mlx5
