// Protection domains, memory regions, completion channels and CQs (plain and extended) of the software
// mlx5 device. Calls on other devices' objects go to rdma-core.
#include <infiniband/verbs.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "absl/strings/str_format.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/real_symbol.h"
#include "soft_mlx5/verbs_objects.h"
#include "soft_mlx5/verbs_ops.h"

namespace drsim::soft_mlx5 {
namespace {

using capi::Kind;
using capi::RecordFailure;
using capi::Registry;

constexpr unsigned kAccessKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED |
                                  IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING;

ibv_mr* RegisterMr(const char* fn, ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned access) {
  if (access & ~kAccessKnown) {
    return capi::NullWithError<ibv_mr>(fn, EINVAL, absl::StrFormat("access 0x%x: unknown flags", access));
  }
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
    return capi::NullWithError<ibv_mr>(fn, EINVAL,
                                       "access: remote write or atomic needs IBV_ACCESS_LOCAL_WRITE");
  }
  if (addr == nullptr && length > 0 && !(access & IBV_ACCESS_ON_DEMAND)) {
    return capi::NullWithError<ibv_mr>(fn, EINVAL, "addr is NULL");
  }
  capi::Context& nic = NicOf(pd->context);
  Lock lock(nic.mu);
  auto* m = new SoftMr;
  std::memset(&m->mr, 0, sizeof m->mr);
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = addr;
  m->mr.length = length;
  m->access = access;
  m->iova = iova;
  m->mr.lkey = m->mr.rkey = NicState::Of(nic).AddMr(m);
  m->mr.handle = m->mr.lkey;
  Registry::Get().Add(&m->mr, Kind::kMr, &nic);
  ++nic.open_objects;
  return &m->mr;
}

SoftCq& CqOf(ibv_cq_ex* cq) { return *reinterpret_cast<SoftCq*>(cq); }

// Moves the next completion into the CQ's current one; ENOENT when there is none.
int AdvancePoll(ibv_cq_ex* cq) {
  SoftCq& c = CqOf(cq);
  if (c.done.empty()) return ENOENT;
  c.current = c.done.front();
  c.done.pop_front();
  cq->wr_id = c.current.wr_id;
  cq->status = c.current.status;
  return 0;
}

int StartPoll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  NicState::Of(nic).Pump();
  SoftCq& c = CqOf(cq);
  if (c.polling) return EINVAL;
  const int rc = AdvancePoll(cq);
  c.polling = rc == 0;
  return rc;
}

int NextPoll(ibv_cq_ex* cq) {
  capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  return AdvancePoll(cq);
}

void EndPoll(ibv_cq_ex* cq) {
  capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  CqOf(cq).polling = false;
}

ibv_wc_opcode ReadOpcode(ibv_cq_ex* cq) { return CqOf(cq).current.opcode; }
uint32_t ReadZero(ibv_cq_ex*) { return 0; }
uint32_t ReadByteLen(ibv_cq_ex* cq) { return CqOf(cq).current.byte_len; }
__be32 ReadImmData(ibv_cq_ex*) { return 0; }
uint32_t ReadQpNum(ibv_cq_ex* cq) { return CqOf(cq).current.qp_num; }
unsigned ReadWcFlags(ibv_cq_ex* cq) { return CqOf(cq).current.wc_flags; }
uint8_t ReadZero8(ibv_cq_ex*) { return 0; }
uint64_t ReadTimestamp(ibv_cq_ex* cq) { return CqOf(cq).current.timestamp_ns; }
uint16_t ReadCvlan(ibv_cq_ex*) { return 0; }
uint32_t ReadFlowTag(ibv_cq_ex* cq) { return CqOf(cq).current.flow_tag; }
void ReadTmInfo(ibv_cq_ex*, ibv_wc_tm_info* info) { std::memset(info, 0, sizeof *info); }

constexpr uint64_t kWcFlagsKnown = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |
                                   IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |
                                   IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
                                   IBV_WC_EX_WITH_CVLAN | IBV_WC_EX_WITH_FLOW_TAG |
                                   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;

}  // namespace

ibv_cq_ex* CreateCqEx(ibv_context* ctx, ibv_cq_init_attr_ex* attr) {
  if (attr->cqe < 1 || attr->cqe > kMaxQueueDepth) {
    return capi::NullWithError<ibv_cq_ex>("ibv_create_cq_ex", EINVAL,
                                          absl::StrFormat("cqe %d: 1 to %d", attr->cqe, kMaxQueueDepth));
  }
  if (attr->comp_vector >= static_cast<uint32_t>(ctx->num_comp_vectors)) {
    return capi::NullWithError<ibv_cq_ex>(
        "ibv_create_cq_ex", EINVAL,
        absl::StrFormat("comp_vector %d: the device has %d", attr->comp_vector, ctx->num_comp_vectors));
  }
  if (attr->channel != nullptr && !drsim::capi::IsSoftwareNicObject(attr->channel, Kind::kCompChannel)) {
    return capi::NullWithError<ibv_cq_ex>("ibv_create_cq_ex", EINVAL, "channel: not one of this device");
  }
  if (attr->wc_flags & ~kWcFlagsKnown) {
    return capi::NullWithError<ibv_cq_ex>(
        "ibv_create_cq_ex", EOPNOTSUPP,
        absl::StrFormat("wc_flags 0x%x: the device reads 0x%x", attr->wc_flags, kWcFlagsKnown));
  }
  if (attr->comp_mask & ~uint32_t{IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD}) {
    return capi::NullWithError<ibv_cq_ex>("ibv_create_cq_ex", EINVAL,
                                          absl::StrFormat("comp_mask 0x%x: unknown bits", attr->comp_mask));
  }
  capi::Context& nic = NicOf(ctx);
  Lock lock(nic.mu);
  auto* c = new SoftCq;
  std::memset(&c->cq, 0, sizeof c->cq);
  ibv_cq_ex& cq = c->cq;
  cq.context = ctx;
  cq.channel = attr->channel;
  cq.cq_context = attr->cq_context;
  cq.cqe = static_cast<int>(attr->cqe);
  pthread_mutex_init(&cq.mutex, nullptr);
  pthread_cond_init(&cq.cond, nullptr);
  cq.start_poll = StartPoll;
  cq.next_poll = NextPoll;
  cq.end_poll = EndPoll;
  cq.read_opcode = ReadOpcode;
  cq.read_vendor_err = ReadZero;
  cq.read_byte_len = ReadByteLen;
  cq.read_imm_data = ReadImmData;
  cq.read_qp_num = ReadQpNum;
  cq.read_src_qp = ReadZero;
  cq.read_wc_flags = ReadWcFlags;
  cq.read_slid = ReadZero;
  cq.read_sl = ReadZero8;
  cq.read_dlid_path_bits = ReadZero8;
  cq.read_completion_ts = ReadTimestamp;
  cq.read_cvlan = ReadCvlan;
  cq.read_flow_tag = ReadFlowTag;
  cq.read_tm_info = ReadTmInfo;
  cq.read_completion_wallclock_ns = ReadTimestamp;
  c->wc_flags = attr->wc_flags;
  if (attr->channel != nullptr) ++attr->channel->refcnt;
  Registry::Get().Add(c, Kind::kCq, &nic);
  ++nic.open_objects;
  return &c->cq;
}

int PollCq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  NicState::Of(nic).Pump();
  SoftCq& c = *reinterpret_cast<SoftCq*>(cq);
  int n = 0;
  while (n < num_entries && !c.done.empty()) {
    const Completion& d = c.done.front();
    ibv_wc& w = wc[n++];
    std::memset(&w, 0, sizeof w);
    w.wr_id = d.wr_id;
    w.status = d.status;
    w.opcode = d.opcode;
    w.byte_len = d.byte_len;
    w.qp_num = d.qp_num;
    w.wc_flags = d.wc_flags;
    c.done.pop_front();
  }
  return n;
}

int ReqNotifyCq(ibv_cq* cq, int solicited_only) {
  capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  SoftCq& c = *reinterpret_cast<SoftCq*>(cq);
  if (cq->channel == nullptr) return EINVAL;
  c.armed = true;
  (void)solicited_only;  // every completion of a raw-packet QP is "solicited" enough to notify
  return 0;
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + ts.tv_nsec;
}

}  // namespace drsim::soft_mlx5

using drsim::capi::Kind;
using drsim::capi::RecordFailure;
using drsim::capi::Registry;
using drsim::soft_mlx5::Lock;
using drsim::soft_mlx5::NicOf;
using drsim::soft_mlx5::SoftCompChannel;
using drsim::soft_mlx5::SoftCq;
using drsim::soft_mlx5::SoftMr;
using drsim::soft_mlx5::SoftPd;

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* ctx) {
  if (drsim::capi::FunctionOf(ctx) == nullptr) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_alloc_pd, "IBVERBS_1.1");
    return fn != nullptr ? fn(ctx) : nullptr;
  }
  drsim::capi::Context& nic = NicOf(ctx);
  Lock lock(nic.mu);
  auto* p = new SoftPd;
  std::memset(&p->pd, 0, sizeof p->pd);
  p->pd.context = ctx;
  Registry::Get().Add(p, Kind::kPd, &nic);
  ++nic.open_objects;
  return &p->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  if (!drsim::capi::IsSoftwareNicObject(pd, Kind::kPd)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_dealloc_pd, "IBVERBS_1.1");
    return fn != nullptr ? fn(pd) : EOPNOTSUPP;
  }
  drsim::capi::Context& nic = NicOf(pd->context);
  Lock lock(nic.mu);
  Registry::Get().Remove(pd);
  --nic.open_objects;
  delete reinterpret_cast<SoftPd*>(pd);
  return 0;
}

ibv_mr*(ibv_reg_mr)(ibv_pd* pd, void* addr, size_t length, int access) {
  if (!drsim::capi::IsSoftwareNicObject(pd, Kind::kPd)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_reg_mr, "IBVERBS_1.1");
    return fn != nullptr ? fn(pd, addr, length, access) : nullptr;
  }
  return drsim::soft_mlx5::RegisterMr(__func__, pd, addr, length, reinterpret_cast<uintptr_t>(addr),
                                      static_cast<unsigned>(access));
}

ibv_mr*(ibv_reg_mr_iova)(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  if (!drsim::capi::IsSoftwareNicObject(pd, Kind::kPd)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_reg_mr_iova, "IBVERBS_1.7");
    return fn != nullptr ? fn(pd, addr, length, iova, access) : nullptr;
  }
  return drsim::soft_mlx5::RegisterMr(__func__, pd, addr, length, iova, static_cast<unsigned>(access));
}

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  if (!drsim::capi::IsSoftwareNicObject(pd, Kind::kPd)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_reg_mr_iova2, "IBVERBS_1.8");
    return fn != nullptr ? fn(pd, addr, length, iova, access) : nullptr;
  }
  return drsim::soft_mlx5::RegisterMr(__func__, pd, addr, length, iova, access);
}

int ibv_dereg_mr(ibv_mr* mr) {
  if (!drsim::capi::IsSoftwareNicObject(mr, Kind::kMr)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_dereg_mr, "IBVERBS_1.1");
    return fn != nullptr ? fn(mr) : EOPNOTSUPP;
  }
  drsim::capi::Context& nic = NicOf(mr->context);
  Lock lock(nic.mu);
  drsim::soft_mlx5::NicState::Of(nic).RemoveMr(mr->lkey);
  Registry::Get().Remove(mr);
  --nic.open_objects;
  delete reinterpret_cast<SoftMr*>(mr);
  return 0;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* ctx) {
  if (drsim::capi::FunctionOf(ctx) == nullptr) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_create_comp_channel, "IBVERBS_1.0");
    return fn != nullptr ? fn(ctx) : nullptr;
  }
  const int fd = eventfd(0, EFD_CLOEXEC);
  if (fd < 0) return drsim::capi::NullWithError<ibv_comp_channel>(__func__, errno, "eventfd failed");
  drsim::capi::Context& nic = NicOf(ctx);
  Lock lock(nic.mu);
  auto* ch = new SoftCompChannel;
  ch->channel.context = ctx;
  ch->channel.fd = fd;
  ch->channel.refcnt = 0;
  Registry::Get().Add(ch, Kind::kCompChannel, &nic);
  ++nic.open_objects;
  return &ch->channel;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  if (!drsim::capi::IsSoftwareNicObject(channel, Kind::kCompChannel)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_destroy_comp_channel, "IBVERBS_1.0");
    return fn != nullptr ? fn(channel) : EOPNOTSUPP;
  }
  drsim::capi::Context& nic = NicOf(channel->context);
  Lock lock(nic.mu);
  if (channel->refcnt > 0) {
    return RecordFailure(__func__, EBUSY, absl::StrFormat("%d CQ(s) use the channel", channel->refcnt));
  }
  close(channel->fd);
  Registry::Get().Remove(channel);
  --nic.open_objects;
  delete reinterpret_cast<SoftCompChannel*>(channel);
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* ctx, int cqe, void* cq_context, ibv_comp_channel* channel,
                      int comp_vector) {
  if (drsim::capi::FunctionOf(ctx) == nullptr) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_create_cq, "IBVERBS_1.1");
    return fn != nullptr ? fn(ctx, cqe, cq_context, channel, comp_vector) : nullptr;
  }
  if (channel != nullptr && !drsim::capi::IsSoftwareNicObject(channel, Kind::kCompChannel)) {
    return drsim::capi::NullWithError<ibv_cq>(__func__, EINVAL, "channel: not one of this device");
  }
  if (comp_vector != 0) {
    return drsim::capi::NullWithError<ibv_cq>(
        __func__, EINVAL, absl::StrFormat("comp_vector %d: the device has vector 0", comp_vector));
  }
  ibv_cq_init_attr_ex attr{};
  attr.cqe = cqe < 1 ? 0 : static_cast<uint32_t>(cqe);
  attr.cq_context = cq_context;
  attr.channel = channel;
  attr.wc_flags = IBV_WC_STANDARD_FLAGS;
  attr.comp_vector = comp_vector < 0 ? ~0u : static_cast<uint32_t>(comp_vector);
  ibv_cq_ex* cq = drsim::soft_mlx5::CreateCqEx(ctx, &attr);
  return cq != nullptr ? ibv_cq_ex_to_cq(cq) : nullptr;
}

int ibv_destroy_cq(ibv_cq* cq) {
  if (!drsim::capi::IsSoftwareNicObject(cq, Kind::kCq)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_destroy_cq, "IBVERBS_1.1");
    return fn != nullptr ? fn(cq) : EOPNOTSUPP;
  }
  drsim::capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  auto* c = reinterpret_cast<SoftCq*>(cq);
  if (c->attached > 0) {
    return RecordFailure(__func__, EBUSY, absl::StrFormat("%d QP(s) or WQ(s) use the CQ", c->attached));
  }
  if (cq->channel != nullptr) {
    --cq->channel->refcnt;
    auto& notified = reinterpret_cast<SoftCompChannel*>(cq->channel)->notified;
    notified.erase(std::remove(notified.begin(), notified.end(), c), notified.end());
  }
  pthread_mutex_destroy(&c->cq.mutex);
  pthread_cond_destroy(&c->cq.cond);
  Registry::Get().Remove(cq);
  --nic.open_objects;
  delete c;
  return 0;
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (!drsim::capi::IsSoftwareNicObject(cq, Kind::kCq)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_resize_cq, "IBVERBS_1.1");
    return fn != nullptr ? fn(cq, cqe) : EOPNOTSUPP;
  }
  drsim::capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  auto* c = reinterpret_cast<SoftCq*>(cq);
  if (cqe < 1 || static_cast<uint32_t>(cqe) > drsim::soft_mlx5::kMaxQueueDepth ||
      static_cast<size_t>(cqe) < c->done.size()) {
    return RecordFailure(__func__, EINVAL,
                         absl::StrFormat("cqe %d: 1 to %d, and at least the %d completions held", cqe,
                                         drsim::soft_mlx5::kMaxQueueDepth, c->done.size()));
  }
  cq->cqe = cqe;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  if (!drsim::capi::IsSoftwareNicObject(channel, Kind::kCompChannel)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_get_cq_event, "IBVERBS_1.1");
    return fn != nullptr ? fn(channel, cq, cq_context) : -1;
  }
  uint64_t count;
  if (read(channel->fd, &count, sizeof count) != sizeof count) return -1;  // errno from read (EAGAIN)
  drsim::capi::Context& nic = NicOf(channel->context);
  Lock lock(nic.mu);
  auto* ch = reinterpret_cast<SoftCompChannel*>(channel);
  if (ch->notified.empty()) {
    errno = EAGAIN;
    return -1;
  }
  SoftCq* c = ch->notified.front();
  ch->notified.pop_front();
  if (!ch->notified.empty()) {
    const uint64_t rest = ch->notified.size();
    (void)!write(channel->fd, &rest, sizeof rest);  // the others' events stay readable
  }
  *cq = ibv_cq_ex_to_cq(&c->cq);
  *cq_context = c->cq.cq_context;
  return 0;
}

void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (!drsim::capi::IsSoftwareNicObject(cq, Kind::kCq)) {
    if (auto* fn = DRSIM_REAL_FUNCTION(ibv_ack_cq_events, "IBVERBS_1.1")) fn(cq, nevents);
    return;
  }
  drsim::capi::Context& nic = NicOf(cq->context);
  Lock lock(nic.mu);
  cq->comp_events_completed += nevents;
}

}  // extern "C"
