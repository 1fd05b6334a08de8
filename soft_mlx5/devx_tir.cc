// CREATE_RQT (0x916) and CREATE_TIR (0x900): receive queue tables and TIRs over a function's receive
// queues. A direct TIR delivers to its one queue (inline_rqn); an indirect one spreads frames over an RQ
// table by the Toeplitz hash of the header fields its selector names, as sim::Function::CreateTir does
// with the IBV_RX_HASH_* bits. The QP numbers of raw-packet QPs and WQs are the queues' numbers.
#include <infiniband/verbs.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "capi/objects.h"
#include "sim/nic.h"
#include "sim/toeplitz.h"
#include "soft_mlx5/devx_handlers.h"

namespace drsim::soft_mlx5 {
namespace {

// create_rqt_in: the rqtc context from bit 0x100, its rq_num[] entries from bit 0x880, one a dword (the
// RQ number in the low 24 bits).
constexpr PrmField kListQType{0x1a5, 3};
constexpr PrmField kRqtMaxSize{0x1b0, 16};
constexpr PrmField kRqtActualSize{0x1d0, 16};
constexpr PrmField RqNum(uint32_t i) { return {0x888 + 32 * i, 24}; }
constexpr PrmField kRqtn{0x48, 24};        // create_rqt_out
constexpr uint64_t kMaxRqtSize = 1 << 16;  // the general page's log_max_rqt_size

// create_tir_in: the tirc context from bit 0x100.
constexpr PrmField kDispType{0x120, 4};
constexpr PrmField kInlineQType{0x1e5, 3};
constexpr PrmField kInlineRqn{0x1e8, 24};
constexpr PrmField kRxHashSymmetric{0x200, 1};
constexpr PrmField kIndirectTable{0x208, 24};
constexpr PrmField kRxHashFn{0x220, 4};
constexpr PrmField kToeplitzKey{0x240, 320};  // 40 bytes: bytes 72 to 111
constexpr PrmField kSelectorOuter{0x380, 32};
constexpr PrmField kSelectorInner{0x3a0, 32};
constexpr PrmField kTirn{0x48, 24};  // create_tir_out

constexpr uint64_t kDispDirect = 0, kDispIndirect = 1;
constexpr uint64_t kHashNone = 0, kHashXor8 = 1, kHashToeplitz = 2;

// rx_hash_field_select: l3_prot_type (0 IPv4, 1 IPv6), l4_prot_type (0 TCP, 1 UDP), selected_fields.
constexpr uint32_t kSelL3Ipv6 = 1u << 31;
constexpr uint32_t kSelL4Udp = 1u << 30;
constexpr uint32_t kSelSrcIp = 1u << 0, kSelDstIp = 1u << 1, kSelL4Sport = 1u << 2, kSelL4Dport = 1u << 3,
                   kSelIpsecSpi = 1u << 4;

// The IBV_RX_HASH_* bits of the selector `sel` (read from `field`), or why not.
Outcome HashFields(uint32_t sel, PrmField field, const char* name, uint64_t* bits) {
  const uint32_t selected = sel & ~(kSelL3Ipv6 | kSelL4Udp);
  const bool v6 = sel & kSelL3Ipv6, udp = sel & kSelL4Udp;
  if (selected & kSelIpsecSpi) {
    return Unsupported(PrmStatus::kBadParam, field,
                       absl::StrFormat("%s 0x%x: hashing the IPsec SPI is not modelled", name, sel));
  }
  if (selected & ~(kSelSrcIp | kSelDstIp | kSelL4Sport | kSelL4Dport)) {
    return FirmwareError(PrmStatus::kBadParam, field,
                         absl::StrFormat("%s 0x%x: selected_fields 0x%x has bits beyond SRC_IP, DST_IP, "
                                         "L4_SPORT, L4_DPORT and IPSEC_SPI",
                                         name, sel, selected));
  }
  *bits = 0;
  if (selected & kSelSrcIp) *bits |= v6 ? IBV_RX_HASH_SRC_IPV6 : IBV_RX_HASH_SRC_IPV4;
  if (selected & kSelDstIp) *bits |= v6 ? IBV_RX_HASH_DST_IPV6 : IBV_RX_HASH_DST_IPV4;
  if (selected & kSelL4Sport) *bits |= udp ? IBV_RX_HASH_SRC_PORT_UDP : IBV_RX_HASH_SRC_PORT_TCP;
  if (selected & kSelL4Dport) *bits |= udp ? IBV_RX_HASH_DST_PORT_UDP : IBV_RX_HASH_DST_PORT_TCP;
  return Done();
}

// The hash of an indirect TIR: IBV_RX_HASH_* bits (IBV_RX_HASH_INNER for the inner selector), or why not.
Outcome IndirectHash(const Mailbox& m, uint64_t* fields) {
  *fields = 0;
  const uint64_t fn = PrmGet(m.in, kRxHashFn);
  if (fn == kHashNone) return Done();  // every frame to the table's first queue
  if (fn == kHashXor8) {
    return Unsupported(PrmStatus::kBadParam, kRxHashFn,
                       "rx_hash_fn 1 (INVERTED_XOR8): only Toeplitz (2) and none (0) are modelled");
  }
  if (fn != kHashToeplitz) {
    return FirmwareError(PrmStatus::kBadParam, kRxHashFn,
                         absl::StrFormat("rx_hash_fn %d: 0 (none), 1 (INVERTED_XOR8) or 2 (Toeplitz)", fn));
  }
  const uint32_t outer = static_cast<uint32_t>(PrmGet(m.in, kSelectorOuter));
  const uint32_t inner = static_cast<uint32_t>(PrmGet(m.in, kSelectorInner));
  const bool outer_used = (outer & ~(kSelL3Ipv6 | kSelL4Udp)) != 0;
  const bool inner_used = (inner & ~(kSelL3Ipv6 | kSelL4Udp)) != 0;
  if (outer_used && inner_used) {
    return Unsupported(PrmStatus::kBadParam, kSelectorInner,
                       "rx_hash_field_selector_outer and _inner both select fields: a TIR hashing outer and "
                       "inner headers together is not modelled");
  }
  if (inner_used) {
    if (Outcome o = HashFields(inner, kSelectorInner, "rx_hash_field_selector_inner", fields); !o.ok())
      return o;
    *fields |= IBV_RX_HASH_INNER;
    return Done();
  }
  return HashFields(outer, kSelectorOuter, "rx_hash_field_selector_outer", fields);
}

}  // namespace

Outcome CreateRqt(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created) {
  if (Outcome o = RequireInput(m, kRqtActualSize, "rqt_actual_size"); !o.ok()) return o;
  if (uint64_t type = PrmGet(m.in, kListQType); type != 0) {
    return Unsupported(PrmStatus::kBadParam, kListQType,
                       absl::StrFormat("list_q_type %d: only tables of RQs (0) are modelled", type));
  }
  const uint64_t max = PrmGet(m.in, kRqtMaxSize), size = PrmGet(m.in, kRqtActualSize);
  if (max > kMaxRqtSize) {
    return FirmwareError(PrmStatus::kExceedsLimit, kRqtMaxSize,
                         absl::StrFormat("rqt_max_size %d: at most %d (log_max_rqt_size)", max, kMaxRqtSize));
  }
  if (size == 0 || size > max) {
    return FirmwareError(PrmStatus::kBadParam, kRqtActualSize,
                         absl::StrFormat("rqt_actual_size %d: 1 to rqt_max_size (%d)", size, max));
  }
  if ((size & (size - 1)) != 0) {
    return Unsupported(PrmStatus::kBadParam, kRqtActualSize,
                       absl::StrFormat("rqt_actual_size %d: the NIC's tables hold a power of two RQs", size));
  }
  const uint32_t n = static_cast<uint32_t>(size);
  if (Outcome o = RequireInput(m, RqNum(n - 1), "the last rq_num entry (rqt_actual_size)"); !o.ok()) return o;
  capi::Context& ctx = *fn.owner;
  std::vector<uint32_t> rqs(n);
  for (uint32_t i = 0; i < n; ++i) {
    rqs[i] = static_cast<uint32_t>(PrmGet(m.in, RqNum(i)));
    if (ctx.function(fn.vport).queue(rqs[i]) == nullptr) {
      return FirmwareError(
          PrmStatus::kBadResource, RqNum(i),
          absl::StrFormat("rq_num[%d] 0x%x: no receive queue of vport %d", i, rqs[i], fn.vport));
    }
  }
  const uint32_t rqtn = ctx.next_rqt++;
  mlx5dv_devx_obj* rqt = capi::NewDevxObject(ctx, capi::DevxKind::kRqt, fn.vport, rqtn, n);
  rqt->rq_list = std::move(rqs);
  ctx.rqts[rqtn] = rqt;
  PrmSet(m.out, kRqtn, rqtn);
  *created = rqt;
  return Done();
}

Outcome CreateTir(const drsim_function_context& fn, Mailbox m, mlx5dv_devx_obj** created) {
  if (Outcome o = RequireInput(m, kSelectorInner, "rx_hash_field_selector_inner"); !o.ok()) return o;
  capi::Context& ctx = *fn.owner;
  sim::Function& function = ctx.function(fn.vport);
  std::vector<uint32_t> queues;
  uint64_t fields = 0;
  mlx5dv_devx_obj* rqt = nullptr;
  const uint64_t disp = PrmGet(m.in, kDispType);
  if (disp == kDispDirect) {
    if (uint64_t type = PrmGet(m.in, kInlineQType); type != 0) {
      return Unsupported(PrmStatus::kBadParam, kInlineQType,
                         absl::StrFormat("inline_q_type %d: only an RQ (0) is modelled", type));
    }
    const uint32_t rqn = static_cast<uint32_t>(PrmGet(m.in, kInlineRqn));
    if (function.queue(rqn) == nullptr) {
      return FirmwareError(PrmStatus::kBadResource, kInlineRqn,
                           absl::StrFormat("inline_rqn 0x%x: no receive queue of vport %d", rqn, fn.vport));
    }
    queues.push_back(rqn);
  } else if (disp == kDispIndirect) {
    const uint32_t table = static_cast<uint32_t>(PrmGet(m.in, kIndirectTable));
    auto it = ctx.rqts.find(table);
    if (it == ctx.rqts.end() || it->second->vport != fn.vport) {
      return FirmwareError(
          PrmStatus::kBadResource, kIndirectTable,
          absl::StrFormat("indirect_table %d: no RQ table of vport %d (CREATE_RQT)", table, fn.vport));
    }
    rqt = it->second;
    queues = rqt->rq_list;
    if (Outcome o = IndirectHash(m, &fields); !o.ok()) return o;
  } else {
    return FirmwareError(PrmStatus::kBadParam, kDispType,
                         absl::StrFormat("disp_type %d: 0 (direct) or 1 (indirect)", disp));
  }
  uint8_t key[40];
  for (uint32_t i = 0; i < sizeof key; ++i)
    key[i] = static_cast<uint8_t>(PrmGet(m.in, {kToeplitzKey.bit + 8 * i, 8}));
  const sim::RssSymmetry symmetry =
      PrmGet(m.in, kRxHashSymmetric) != 0 ? sim::RssSymmetry::kOrXor : sim::RssSymmetry::kNone;
  absl::StatusOr<uint32_t> tir = function.CreateTir(std::move(queues), fields, key, symmetry);
  if (!tir.ok()) {
    return FirmwareError(PrmStatus::kBadParam, disp == kDispDirect ? kInlineRqn : kSelectorOuter,
                         std::string(tir.status().message()));
  }
  mlx5dv_devx_obj* obj = capi::NewDevxObject(ctx, capi::DevxKind::kTir, fn.vport, *tir, 0);
  obj->rqt = rqt;
  if (rqt != nullptr) ++rqt->tirs;
  PrmSet(m.out, kTirn, *tir);
  *created = obj;
  return Done();
}

}  // namespace drsim::soft_mlx5
