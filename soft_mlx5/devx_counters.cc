// ALLOC_FLOW_COUNTER (0x939) and QUERY_FLOW_COUNTER (0x93b): bulks of the NIC's flow counters as DEVX
// objects (the C API's kFlowCounter objects, as drsim_counter_alloc makes them).
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

}  // namespace drsim::soft_mlx5
