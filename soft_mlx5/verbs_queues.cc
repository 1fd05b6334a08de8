// Raw-packet QPs, WQs, RWQ indirection tables and RSS QPs of the software mlx5 device, and the data
// path: ibv_post_send puts frames into the NIC from the QP's function; received frames fill posted
// receives (NicState::Pump).
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "capi/errors.h"
#include "capi/objects.h"
#include "capi/real_symbol.h"
#include "sim/nic.h"
#include "soft_mlx5/device.h"
#include "soft_mlx5/verbs_objects.h"
#include "soft_mlx5/verbs_ops.h"

namespace drsim::soft_mlx5 {
namespace {

using capi::Kind;
using capi::RecordFailure;
using capi::Registry;

SoftQp& QpOf(ibv_qp* qp) { return *reinterpret_cast<SoftQp*>(qp); }

// Records why `sge` failed SgeBytes' checks. Out of line: the data path only ever takes good SGEs.
[[gnu::cold, gnu::noinline]] void RecordSgeFailure(const char* fn, const SoftMr* mr, const ibv_sge& sge,
                                                   int wr_index, int sge_index) {
  if (mr == nullptr) {
    RecordFailure(fn, EINVAL,
                  absl::StrFormat("wr[%d].sg_list[%d]: lkey 0x%x is not a memory region of the device",
                                  wr_index, sge_index, sge.lkey));
  } else if (sge.addr < mr->iova || sge.addr - mr->iova > mr->mr.length ||
             sge.length > mr->mr.length - (sge.addr - mr->iova)) {
    RecordFailure(
        fn, EINVAL,
        absl::StrFormat("wr[%d].sg_list[%d]: [0x%x, +%d) leaves the memory region [0x%x, +%d) of lkey 0x%x",
                        wr_index, sge_index, sge.addr, sge.length, mr->iova, mr->mr.length, sge.lkey));
  } else {
    RecordFailure(
        fn, EINVAL,
        absl::StrFormat("wr[%d].sg_list[%d]: the memory region of lkey 0x%x lacks IBV_ACCESS_LOCAL_WRITE",
                        wr_index, sge_index, sge.lkey));
  }
}

// The bytes an SGE names, checked against its memory region: nullptr (after recording why) when the
// lkey is unknown or the range leaves the region.
const uint8_t* SgeBytes(const char* fn, capi::Context& nic, const ibv_sge& sge, unsigned needed_access,
                        int wr_index, int sge_index) {
  const SoftMr* mr = NicState::Of(nic).FindMr(sge.lkey);
  if (mr == nullptr || sge.addr < mr->iova || sge.addr - mr->iova > mr->mr.length ||
      sge.length > mr->mr.length - (sge.addr - mr->iova) || (mr->access & needed_access) != needed_access) {
    RecordSgeFailure(fn, mr, sge, wr_index, sge_index);
    return nullptr;
  }
  return static_cast<const uint8_t*>(mr->mr.addr) + (sge.addr - mr->iova);
}

void InitReceiveQueue(ReceiveQueue& rq, capi::Context& nic, uint16_t vport, SoftCq* cq, ibv_pd* pd,
                      uint32_t max_wr, uint32_t max_sge) {
  rq.vport = vport;
  auto sink = std::make_unique<PostedReceiveSink>(&nic, &rq);
  rq.sink = sink.get();
  rq.number = nic.function(vport).CreateQueue(kMaxQueueDepth, std::move(sink));
  rq.cq = cq;
  rq.pd = pd;
  rq.max_wr = max_wr;
  rq.max_sge = max_sge;
  if (cq != nullptr) ++cq->attached;
}

absl::Status ReleaseReceiveQueue(ReceiveQueue& rq, capi::Context& nic) {
  // Detached first: the sim queue and its sink may be freed as soon as DestroyQueue retires them.
  rq.sink->Detach();
  if (absl::Status s = nic.function(rq.vport).DestroyQueue(rq.number); !s.ok()) {
    rq.sink->Attach(&rq);
    return s;
  }
  rq.sink = nullptr;
  if (rq.cq != nullptr) --rq.cq->attached;
  return absl::OkStatus();
}

// Queues receive work requests on `rq`; the first bad one stops the list (`*bad_wr`).
int PostReceives(const char* fn, capi::Context& nic, ReceiveQueue& rq, ibv_recv_wr* wr,
                 ibv_recv_wr** bad_wr) {
  int index = 0;
  for (; wr != nullptr; wr = wr->next, ++index) {
    int err = 0;
    if (rq.posted.size() >= rq.max_wr) {
      err = RecordFailure(
          fn, ENOMEM, absl::StrFormat("wr[%d]: the receive queue holds %d, all posted", index, rq.max_wr));
    } else if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > rq.max_sge) {
      err = RecordFailure(fn, EINVAL,
                          absl::StrFormat("wr[%d]: num_sge %d: at most %d", index, wr->num_sge, rq.max_sge));
    }
    if (err == 0) {
      // Written in place; taken back if an SGE is bad.
      PostedReceive& posted = rq.posted.emplace_back();
      posted.wr_id = wr->wr_id;
      for (int i = 0; i < wr->num_sge; ++i) {
        const ibv_sge& sge = wr->sg_list[i];
        const uint8_t* bytes = SgeBytes(fn, nic, sge, IBV_ACCESS_LOCAL_WRITE, index, i);
        if (bytes == nullptr) {
          err = EINVAL;
          rq.posted.pop_back();
          break;
        }
        // The host address: delivery writes through it.
        posted.sges.push_back({reinterpret_cast<uintptr_t>(bytes), sge.length, sge.lkey});
      }
    }
    if (err != 0) {
      if (bad_wr != nullptr) *bad_wr = wr;
      errno = err;
      return err;
    }
  }
  NicState::Of(nic).Pump();
  return 0;
}

}  // namespace

namespace {

// Frames a post send hands the NIC in one burst before the device pumps them on: each pump empties the
// NIC's uplink, so the wire and the receive queues never hold more than this from one list.
constexpr size_t kSendBurst = 256;

// Sends the frames gathered in `scratch` from `qp` as one burst, completes the signaled ones on its send
// CQ, and pumps: what each frame led to is done before the call returns, as for one frame at a time.
void SendGathered(capi::Context& nic, SoftQp& qp, NicState::SendScratch& scratch) {
  if (scratch.ends.empty()) return;
  scratch.frames.clear();
  size_t begin = 0;
  for (size_t end : scratch.ends) {
    scratch.frames.emplace_back(scratch.bytes.data() + begin, end - begin);
    begin = end;
  }
  nic.nic->set_time_ns(MonotonicNs());  // meters colour the frames at the rate the program sends them
  (void)nic.function(qp.base.vport).Send(scratch.frames, {}, false, qp.base.qp.qp_num);
  if (qp.send_cq != nullptr && !scratch.signaled.empty()) {
    const uint64_t now = MonotonicNs();
    for (uint64_t wr_id : scratch.signaled) {
      Completion done;
      done.wr_id = wr_id;
      done.opcode = IBV_WC_SEND;
      done.qp_num = qp.base.qp.qp_num;
      done.timestamp_ns = now;
      Complete(*qp.send_cq, done);
    }
  }
  scratch.bytes.clear();
  scratch.ends.clear();
  scratch.signaled.clear();
  NicState::Of(nic).Pump();
}

}  // namespace

int PostSend(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  capi::Context& nic = NicOf(ibqp->context);
  Lock lock(nic.mu);
  SoftQp& qp = QpOf(ibqp);
  const char* fn = "ibv_post_send";
  NicState::SendScratch& scratch = NicState::Of(nic).send_scratch();
  int index = 0;
  int err = 0;
  for (; wr != nullptr; wr = wr->next, ++index) {
    if (ibqp->state != IBV_QPS_RTS) {
      err = RecordFailure(fn, EINVAL,
                          absl::StrFormat("wr[%d]: the QP is not in RTS (state %d)", index, ibqp->state));
    } else if (qp.rss) {
      err = RecordFailure(fn, EINVAL, "an RSS QP has no send queue");
    } else if (wr->opcode != IBV_WR_SEND) {
      err = RecordFailure(
          fn, EINVAL,
          absl::StrFormat("wr[%d]: opcode %d: a raw-packet QP sends IBV_WR_SEND", index, wr->opcode));
    } else if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp.max_send_sge) {
      err = RecordFailure(
          fn, EINVAL, absl::StrFormat("wr[%d]: num_sge %d: at most %d", index, wr->num_sge, qp.max_send_sge));
    }
    const size_t begin = scratch.bytes.size();
    for (int i = 0; err == 0 && i < wr->num_sge; ++i) {
      const ibv_sge& sge = wr->sg_list[i];
      const uint8_t* bytes = (wr->send_flags & IBV_SEND_INLINE)
                                 ? reinterpret_cast<const uint8_t*>(static_cast<uintptr_t>(sge.addr))
                                 : SgeBytes(fn, nic, sge, 0, index, i);
      if (bytes == nullptr) {
        err = EINVAL;
        break;
      }
      scratch.bytes.insert(scratch.bytes.end(), bytes, bytes + sge.length);
    }
    const size_t size = scratch.bytes.size() - begin;
    if (err == 0 && (wr->send_flags & IBV_SEND_INLINE) && size > qp.max_inline_data) {
      err = RecordFailure(
          fn, EINVAL,
          absl::StrFormat("wr[%d]: %d inline bytes: the QP takes %d", index, size, qp.max_inline_data));
    }
    if (err == 0 && (size < 14 || size > 65535)) {
      err = RecordFailure(
          fn, EINVAL,
          absl::StrFormat("wr[%d]: a %d-byte frame: an Ethernet frame has 14 to 65535", index, size));
    }
    if (err != 0) {
      scratch.bytes.resize(begin);  // the bad request sends nothing; those before it go below
      break;
    }
    scratch.ends.push_back(scratch.bytes.size());
    if (qp.sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED)) scratch.signaled.push_back(wr->wr_id);
    if (scratch.ends.size() == kSendBurst) SendGathered(nic, qp, scratch);
  }
  SendGathered(nic, qp, scratch);
  if (err != 0) {
    if (bad_wr != nullptr) *bad_wr = wr;
    errno = err;
    return err;
  }
  return 0;
}

int PostRecv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  capi::Context& nic = NicOf(ibqp->context);
  Lock lock(nic.mu);
  SoftQp& qp = QpOf(ibqp);
  if (qp.rss || ibqp->state == IBV_QPS_RESET || ibqp->state == IBV_QPS_ERR) {
    if (bad_wr != nullptr) *bad_wr = wr;
    errno = EINVAL;
    return RecordFailure("ibv_post_recv", EINVAL,
                         qp.rss ? "an RSS QP has no receive queue (post to its WQs)"
                                : absl::StrFormat("the QP is in state %d", ibqp->state));
  }
  return PostReceives("ibv_post_recv", nic, qp.rq, wr, bad_wr);
}

namespace {

int PostWqRecv(ibv_wq* wq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  capi::Context& nic = NicOf(wq->context);
  Lock lock(nic.mu);
  return PostReceives("ibv_post_wq_recv", nic, reinterpret_cast<SoftWq*>(wq)->rq, wr, bad_wr);
}

constexpr uint32_t kQpInitMaskKnown = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
                                      IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;

ibv_qp* CreateRssQp(const char* fn, capi::Context& nic, ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
      !drsim::capi::IsSoftwareNicObject(attr->rwq_ind_tbl, Kind::kRwqIndTable)) {
    return capi::NullWithError<ibv_qp>(fn, EINVAL,
                                       "an RSS QP needs rwq_ind_tbl of this device and rx_hash_conf");
  }
  const ibv_rx_hash_conf& hash = attr->rx_hash_conf;
  if (hash.rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ) {
    return capi::NullWithError<ibv_qp>(
        fn, EOPNOTSUPP, absl::StrFormat("rx_hash_function %d: only Toeplitz", hash.rx_hash_function));
  }
  if (hash.rx_hash_fields_mask != 0 && (hash.rx_hash_key == nullptr || hash.rx_hash_key_len == 0)) {
    return capi::NullWithError<ibv_qp>(fn, EINVAL, "rx_hash_conf: hash fields without a key");
  }
  auto* table = reinterpret_cast<SoftRwqIndTable*>(attr->rwq_ind_tbl);
  std::vector<uint32_t> queues;
  for (SoftWq* wq : table->wqs) queues.push_back(wq->rq.number);
  const uint16_t vport = capi::FunctionOf(ctx)->vport;
  absl::StatusOr<uint32_t> tir =
      hash.rx_hash_key_len > 0
          ? nic.function(vport).CreateTir(queues, hash.rx_hash_fields_mask,
                                          absl::MakeConstSpan(hash.rx_hash_key, hash.rx_hash_key_len))
          : nic.function(vport).CreateTir(queues, hash.rx_hash_fields_mask);
  if (!tir.ok()) return capi::NullWithError<ibv_qp>(fn, tir.status());
  auto* q = new SoftQp;
  std::memset(&q->base.qp, 0, sizeof q->base.qp);
  q->base.qp.context = ctx;
  q->base.qp.qp_context = attr->qp_context;
  q->base.qp.pd = attr->pd;
  q->base.qp.qp_num = *tir | 0x800000;  // a number of its own, in the QP number space
  q->base.qp.qp_type = IBV_QPT_RAW_PACKET;
  q->base.qp.state = IBV_QPS_RESET;
  q->base.vport = vport;
  q->base.made_by_verbs = true;
  q->base.rss_tir = *tir;
  q->rss = true;
  q->tir = *tir;
  q->ind_table = table;
  ++table->qps;
  Registry::Get().Add(&q->base.qp, Kind::kQp, &nic);
  ++nic.open_objects;
  return &q->base.qp;
}

}  // namespace

ibv_qp* CreateQpEx(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
  const char* fn = "ibv_create_qp_ex";
  if (attr->comp_mask & ~kQpInitMaskKnown) {
    return capi::NullWithError<ibv_qp>(fn, EOPNOTSUPP,
                                       absl::StrFormat("comp_mask 0x%x: the device takes PD, CREATE_FLAGS, "
                                                       "IND_TABLE and RX_HASH",
                                                       attr->comp_mask));
  }
  if (attr->qp_type != IBV_QPT_RAW_PACKET) {
    return capi::NullWithError<ibv_qp>(
        fn, EOPNOTSUPP,
        absl::StrFormat("qp_type %d: the software mlx5 device has raw-packet QPs (IBV_QPT_RAW_PACKET) only",
                        attr->qp_type));
  }
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !drsim::capi::IsSoftwareNicObject(attr->pd, Kind::kPd)) {
    return capi::NullWithError<ibv_qp>(fn, EINVAL, "pd: not a protection domain of this device");
  }
  capi::Context& nic = NicOf(ctx);
  Lock lock(nic.mu);
  if (attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) return CreateRssQp(fn, nic, ctx, attr);
  if (attr->srq != nullptr) return capi::NullWithError<ibv_qp>(fn, EOPNOTSUPP, "srq: the device has no SRQs");
  if (!drsim::capi::IsSoftwareNicObject(attr->send_cq, Kind::kCq) ||
      !drsim::capi::IsSoftwareNicObject(attr->recv_cq, Kind::kCq)) {
    return capi::NullWithError<ibv_qp>(fn, EINVAL, "send_cq and recv_cq must be CQs of this device");
  }
  const ibv_qp_cap& cap = attr->cap;
  if (cap.max_send_wr > kMaxQueueDepth || cap.max_recv_wr > kMaxQueueDepth || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInlineData) {
    return capi::NullWithError<ibv_qp>(
        fn, EINVAL,
        absl::StrFormat(
            "cap: at most %d work requests, %d SGEs and %d inline bytes (asked %d/%d WRs, %d/%d SGEs, %d)",
            kMaxQueueDepth, kMaxSge, kMaxInlineData, cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge,
            cap.max_recv_sge, cap.max_inline_data));
  }
  const uint16_t vport = capi::FunctionOf(ctx)->vport;
  auto* q = new SoftQp;
  std::memset(&q->base.qp, 0, sizeof q->base.qp);
  ibv_qp& qp = q->base.qp;
  qp.context = ctx;
  qp.qp_context = attr->qp_context;
  qp.pd = attr->pd;
  qp.send_cq = attr->send_cq;
  qp.recv_cq = attr->recv_cq;
  qp.qp_type = IBV_QPT_RAW_PACKET;
  qp.state = IBV_QPS_RESET;
  pthread_mutex_init(&qp.mutex, nullptr);
  pthread_cond_init(&qp.cond, nullptr);
  q->base.vport = vport;
  q->base.made_by_verbs = true;
  q->send_cq = reinterpret_cast<SoftCq*>(attr->send_cq);
  ++q->send_cq->attached;
  // Raw-packet QPs round their capacities up as mlx5 does; at least one of each.
  q->max_send_wr = std::max<uint32_t>(cap.max_send_wr, 1);
  q->max_send_sge = std::max<uint32_t>(cap.max_send_sge, 1);
  q->max_inline_data = cap.max_inline_data;
  q->sq_sig_all = attr->sq_sig_all != 0;
  InitReceiveQueue(q->rq, nic, vport, reinterpret_cast<SoftCq*>(attr->recv_cq), attr->pd,
                   std::max<uint32_t>(cap.max_recv_wr, 1), std::max<uint32_t>(cap.max_recv_sge, 1));
  qp.qp_num = q->rq.number;
  qp.handle = qp.qp_num;
  Registry::Get().Add(&qp, Kind::kQp, &nic);
  ++nic.open_objects;
  return &qp;
}

ibv_wq* CreateWq(ibv_context* ctx, ibv_wq_init_attr* attr) {
  const char* fn = "ibv_create_wq";
  if (attr->wq_type != IBV_WQT_RQ)
    return capi::NullWithError<ibv_wq>(fn, EOPNOTSUPP, "wq_type: only IBV_WQT_RQ");
  if (!drsim::capi::IsSoftwareNicObject(attr->pd, Kind::kPd) ||
      !drsim::capi::IsSoftwareNicObject(attr->cq, Kind::kCq)) {
    return capi::NullWithError<ibv_wq>(fn, EINVAL, "pd and cq must be of this device");
  }
  if (attr->max_wr > kMaxQueueDepth || attr->max_sge > kMaxSge) {
    return capi::NullWithError<ibv_wq>(fn, EINVAL,
                                       absl::StrFormat("max_wr %d, max_sge %d: at most %d and %d",
                                                       attr->max_wr, attr->max_sge, kMaxQueueDepth, kMaxSge));
  }
  capi::Context& nic = NicOf(ctx);
  Lock lock(nic.mu);
  auto* w = new SoftWq;
  std::memset(&w->wq, 0, sizeof w->wq);
  w->wq.context = ctx;
  w->wq.wq_context = attr->wq_context;
  w->wq.pd = attr->pd;
  w->wq.cq = attr->cq;
  w->wq.state = IBV_WQS_RESET;
  w->wq.wq_type = IBV_WQT_RQ;
  w->wq.post_recv = PostWqRecv;
  pthread_mutex_init(&w->wq.mutex, nullptr);
  pthread_cond_init(&w->wq.cond, nullptr);
  InitReceiveQueue(w->rq, nic, capi::FunctionOf(ctx)->vport, reinterpret_cast<SoftCq*>(attr->cq), attr->pd,
                   std::max<uint32_t>(attr->max_wr, 1), std::max<uint32_t>(attr->max_sge, 1));
  w->wq.wq_num = w->rq.number;
  w->wq.handle = w->wq.wq_num;
  Registry::Get().Add(&w->wq, Kind::kWq, &nic);
  ++nic.open_objects;
  return &w->wq;
}

int ModifyWq(ibv_wq* wq, ibv_wq_attr* attr) {
  capi::Context& nic = NicOf(wq->context);
  Lock lock(nic.mu);
  if (attr->attr_mask & ~uint32_t{IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE | IBV_WQ_ATTR_FLAGS}) {
    return RecordFailure("ibv_modify_wq", EINVAL,
                         absl::StrFormat("attr_mask 0x%x: unknown bits", attr->attr_mask));
  }
  if ((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) && attr->curr_wq_state != wq->state) {
    return RecordFailure("ibv_modify_wq", EINVAL, "curr_wq_state differs from the WQ's state");
  }
  if (attr->attr_mask & IBV_WQ_ATTR_STATE) {
    if (attr->wq_state > IBV_WQS_ERR) return RecordFailure("ibv_modify_wq", EINVAL, "wq_state: unknown");
    wq->state = attr->wq_state;
    auto& rq = reinterpret_cast<SoftWq*>(wq)->rq;
    rq.ready = wq->state == IBV_WQS_RDY;
    if (wq->state == IBV_WQS_RESET) rq.posted.clear();
  }
  return 0;
}

int DestroyWq(ibv_wq* wq) {
  capi::Context& nic = NicOf(wq->context);
  Lock lock(nic.mu);
  auto* w = reinterpret_cast<SoftWq*>(wq);
  if (w->tables > 0) {
    return RecordFailure("ibv_destroy_wq", EBUSY,
                         absl::StrFormat("%d indirection table(s) use the WQ", w->tables));
  }
  if (absl::Status s = ReleaseReceiveQueue(w->rq, nic); !s.ok()) return RecordFailure("ibv_destroy_wq", s);
  Registry::Get().Remove(wq);
  --nic.open_objects;
  delete w;
  return 0;
}

ibv_rwq_ind_table* CreateRwqIndTable(ibv_context* ctx, ibv_rwq_ind_table_init_attr* attr) {
  const char* fn = "ibv_create_rwq_ind_table";
  if (attr->comp_mask != 0)
    return capi::NullWithError<ibv_rwq_ind_table>(fn, EINVAL, "comp_mask: none defined");
  if (attr->log_ind_tbl_size > 8) {
    return capi::NullWithError<ibv_rwq_ind_table>(
        fn, EINVAL,
        absl::StrFormat("log_ind_tbl_size %d: at most 8 (%d entries)", attr->log_ind_tbl_size,
                        kMaxIndirectionTable));
  }
  capi::Context& nic = NicOf(ctx);
  Lock lock(nic.mu);
  std::vector<SoftWq*> wqs;
  for (uint32_t i = 0; i < (1u << attr->log_ind_tbl_size); ++i) {
    if (!drsim::capi::IsSoftwareNicObject(attr->ind_tbl[i], Kind::kWq)) {
      return capi::NullWithError<ibv_rwq_ind_table>(
          fn, EINVAL, absl::StrFormat("ind_tbl[%d]: not a WQ of this device", i));
    }
    wqs.push_back(reinterpret_cast<SoftWq*>(attr->ind_tbl[i]));
  }
  static uint32_t next_number = 1;
  auto* t = new SoftRwqIndTable;
  std::memset(&t->table, 0, sizeof t->table);
  t->table.context = ctx;
  t->table.ind_tbl_num = static_cast<int>(next_number);
  t->table.ind_tbl_handle = static_cast<int>(next_number++);
  t->wqs = std::move(wqs);
  for (SoftWq* w : t->wqs) ++w->tables;
  Registry::Get().Add(&t->table, Kind::kRwqIndTable, &nic);
  ++nic.open_objects;
  return &t->table;
}

int DestroyRwqIndTable(ibv_rwq_ind_table* table) {
  capi::Context& nic = NicOf(table->context);
  Lock lock(nic.mu);
  auto* t = reinterpret_cast<SoftRwqIndTable*>(table);
  if (t->qps > 0) {
    return RecordFailure("ibv_destroy_rwq_ind_table", EBUSY,
                         absl::StrFormat("%d RSS QP(s) use the table", t->qps));
  }
  for (SoftWq* w : t->wqs) --w->tables;
  Registry::Get().Remove(table);
  --nic.open_objects;
  delete t;
  return 0;
}

void InstallVerbsOps(drsim_function_context& f) {
  verbs_context& v = f.vctx;
  v.context.ops.poll_cq = PollCq;
  v.context.ops.req_notify_cq = ReqNotifyCq;
  v.context.ops.post_send = PostSend;
  v.context.ops.post_recv = PostRecv;
  v.query_port = QueryPort;
  v.query_device_ex = QueryDeviceEx;
  v.create_cq_ex = CreateCqEx;
  v.create_qp_ex = CreateQpEx;
  v.create_wq = CreateWq;
  v.modify_wq = ModifyWq;
  v.destroy_wq = DestroyWq;
  v.create_rwq_ind_table = CreateRwqIndTable;
  v.destroy_rwq_ind_table = DestroyRwqIndTable;
}

namespace {
// drsim_open's contexts get the same operations when this library is linked in.
const bool kInstalled = [] {
  capi::SetFunctionContextSetUp(InstallVerbsOps);
  return true;
}();
}  // namespace

}  // namespace drsim::soft_mlx5

using drsim::capi::Kind;
using drsim::capi::RecordFailure;
using drsim::capi::Registry;
using drsim::soft_mlx5::Lock;
using drsim::soft_mlx5::NicOf;
using drsim::soft_mlx5::SoftQp;

namespace {

bool IsSoftQp(const ibv_qp* qp) { return drsim::capi::IsSoftwareNicObject(qp, Kind::kQp); }

// Whether a QP state move is one verbs allows for a raw-packet QP (RESET→INIT→RTR→RTS, to RESET or ERR
// from anywhere, and staying put).
bool AllowedMove(ibv_qp_state from, ibv_qp_state to) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR || to == from) return true;
  switch (to) {
    case IBV_QPS_INIT:
      return from == IBV_QPS_RESET || from == IBV_QPS_INIT;
    case IBV_QPS_RTR:
      return from == IBV_QPS_INIT;
    case IBV_QPS_RTS:
      return from == IBV_QPS_RTR || from == IBV_QPS_SQD;
    default:
      return false;
  }
}

}  // namespace

extern "C" {

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (!drsim::capi::IsSoftwareNicObject(pd, Kind::kPd)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_create_qp, "IBVERBS_1.1");
    return fn != nullptr ? fn(pd, attr) : nullptr;
  }
  ibv_qp_init_attr_ex ex{};
  ex.qp_context = attr->qp_context;
  ex.send_cq = attr->send_cq;
  ex.recv_cq = attr->recv_cq;
  ex.srq = attr->srq;
  ex.cap = attr->cap;
  ex.qp_type = attr->qp_type;
  ex.sq_sig_all = attr->sq_sig_all;
  ex.comp_mask = IBV_QP_INIT_ATTR_PD;
  ex.pd = pd;
  ibv_qp* qp = drsim::soft_mlx5::CreateQpEx(pd->context, &ex);
  if (qp != nullptr) attr->cap = ex.cap;
  return qp;
}

ibv_qp* mlx5dv_create_qp(ibv_context* ctx, ibv_qp_init_attr_ex* attr, mlx5dv_qp_init_attr* mlx5_attr) {
  if (drsim::capi::FunctionOf(ctx) == nullptr) {
    auto* fn = DRSIM_REAL_FUNCTION(mlx5dv_create_qp, "MLX5_1.3");
    return fn != nullptr ? fn(ctx, attr, mlx5_attr) : nullptr;
  }
  if (mlx5_attr != nullptr && mlx5_attr->comp_mask != 0) {
    return drsim::capi::NullWithError<ibv_qp>(
        __func__, EOPNOTSUPP,
        absl::StrFormat("mlx5_qp_attr->comp_mask 0x%x: the software device takes no mlx5-specific QP options",
                        mlx5_attr->comp_mask));
  }
  return drsim::soft_mlx5::CreateQpEx(ctx, attr);
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  if (!IsSoftQp(qp) || !reinterpret_cast<drsim_qp*>(qp)->made_by_verbs) {
    if (IsSoftQp(qp)) return 0;  // drsim_create_qp's QPs are always in RTS
    auto* fn = DRSIM_REAL_FUNCTION(ibv_modify_qp, "IBVERBS_1.1");
    return fn != nullptr ? fn(qp, attr, attr_mask) : EOPNOTSUPP;
  }
  drsim::capi::Context& nic = NicOf(qp->context);
  Lock lock(nic.mu);
  SoftQp& q = *reinterpret_cast<SoftQp*>(qp);
  if (attr_mask & IBV_QP_CUR_STATE && attr->cur_qp_state != qp->state) {
    return RecordFailure(__func__, EINVAL, "cur_qp_state differs from the QP's state");
  }
  if ((attr_mask & IBV_QP_PORT) && attr->port_num != 1) {
    return RecordFailure(__func__, EINVAL,
                         absl::StrFormat("port_num %d: the device has port 1", attr->port_num));
  }
  if (attr_mask & IBV_QP_STATE) {
    if (!AllowedMove(qp->state, attr->qp_state)) {
      return RecordFailure(__func__, EINVAL,
                           absl::StrFormat("qp_state %d from %d: a raw-packet QP moves RESET, INIT, RTR, RTS",
                                           attr->qp_state, qp->state));
    }
    if (q.rss && attr->qp_state != IBV_QPS_RESET && attr->qp_state != IBV_QPS_INIT &&
        attr->qp_state != IBV_QPS_RTR) {
      return RecordFailure(__func__, EINVAL, "an RSS QP goes no further than RTR");
    }
    qp->state = attr->qp_state;
    q.rq.ready = qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS;
    if (qp->state == IBV_QPS_RESET) q.rq.posted.clear();
    if (qp->state == IBV_QPS_ERR) {
      // Flush what is posted, as a QP in error does.
      for (const auto& wqe : q.rq.posted) {
        drsim::soft_mlx5::Completion c;
        c.wr_id = wqe.wr_id;
        c.status = IBV_WC_WR_FLUSH_ERR;
        c.opcode = IBV_WC_RECV;
        c.qp_num = qp->qp_num;
        if (q.rq.cq != nullptr) drsim::soft_mlx5::Complete(*q.rq.cq, c);
      }
      q.rq.posted.clear();
    }
  }
  return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
  if (!IsSoftQp(qp)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_query_qp, "IBVERBS_1.1");
    return fn != nullptr ? fn(qp, attr, attr_mask, init_attr) : EOPNOTSUPP;
  }
  drsim::capi::Context& nic = NicOf(qp->context);
  Lock lock(nic.mu);
  std::memset(attr, 0, sizeof *attr);
  std::memset(init_attr, 0, sizeof *init_attr);
  attr->qp_state = attr->cur_qp_state = qp->state;
  attr->port_num = 1;
  attr->path_mtu = IBV_MTU_1024;
  init_attr->qp_context = qp->qp_context;
  init_attr->send_cq = qp->send_cq;
  init_attr->recv_cq = qp->recv_cq;
  init_attr->qp_type = qp->qp_type;
  auto* q = reinterpret_cast<drsim_qp*>(qp);
  if (q->made_by_verbs) {
    SoftQp& s = *reinterpret_cast<SoftQp*>(qp);
    ibv_qp_cap cap{};
    cap.max_send_wr = s.max_send_wr;
    cap.max_recv_wr = s.rq.max_wr;
    cap.max_send_sge = s.max_send_sge;
    cap.max_recv_sge = s.rq.max_sge;
    cap.max_inline_data = s.max_inline_data;
    attr->cap = init_attr->cap = cap;
    init_attr->sq_sig_all = s.sq_sig_all;
  }
  return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
  if (!IsSoftQp(qp)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_destroy_qp, "IBVERBS_1.1");
    return fn != nullptr ? fn(qp) : EOPNOTSUPP;
  }
  auto* base = reinterpret_cast<drsim_qp*>(qp);
  if (!base->made_by_verbs)
    return RecordFailure(__func__, EINVAL, "a drsim_create_qp QP: use drsim_destroy_qp");
  drsim::capi::Context& nic = NicOf(qp->context);
  Lock lock(nic.mu);
  SoftQp* q = reinterpret_cast<SoftQp*>(qp);
  if (base->flows > 0) {
    return RecordFailure(__func__, EBUSY, absl::StrFormat("%d flow(s) are attached to the QP", base->flows));
  }
  if (q->rss) {
    if (absl::Status s = nic.function(base->vport).DestroyTir(q->tir); !s.ok())
      return RecordFailure(__func__, s);
    --q->ind_table->qps;
  } else {
    if (absl::Status s = drsim::soft_mlx5::ReleaseReceiveQueue(q->rq, nic); !s.ok()) {
      return RecordFailure(__func__, s);
    }
    --q->send_cq->attached;
    pthread_mutex_destroy(&qp->mutex);
    pthread_cond_destroy(&qp->cond);
  }
  Registry::Get().Remove(qp);
  --nic.open_objects;
  delete q;
  return 0;
}

ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp* qp) {
  if (!IsSoftQp(qp)) {
    auto* fn = DRSIM_REAL_FUNCTION(ibv_qp_to_qp_ex, "IBVERBS_1.6");
    return fn != nullptr ? fn(qp) : nullptr;
  }
  // Raw-packet QPs here are posted to with ibv_post_send; the new post API (send_ops_flags) is not offered.
  errno = EOPNOTSUPP;
  return nullptr;
}

int mlx5dv_init_obj(mlx5dv_obj* obj, uint64_t obj_type) {
  const bool ours = ((obj_type & MLX5DV_OBJ_QP) && IsSoftQp(obj->qp.in)) ||
                    ((obj_type & MLX5DV_OBJ_CQ) && Registry::Get().Known(obj->cq.in)) ||
                    ((obj_type & MLX5DV_OBJ_RWQ) && Registry::Get().Known(obj->rwq.in)) ||
                    ((obj_type & MLX5DV_OBJ_PD) && Registry::Get().Known(obj->pd.in)) ||
                    ((obj_type & MLX5DV_OBJ_DM) && Registry::Get().Known(obj->dm.in)) ||
                    ((obj_type & MLX5DV_OBJ_AH) && Registry::Get().Known(obj->ah.in)) ||
                    ((obj_type & MLX5DV_OBJ_SRQ) && Registry::Get().Known(obj->srq.in));
  if (ours) {
    // The device has no hardware queues to expose: programs that drive WQEs and doorbells directly need a
    // ConnectX.
    return RecordFailure(__func__, EOPNOTSUPP, "the software mlx5 device has no hardware queues to expose");
  }
  auto* fn = DRSIM_REAL_FUNCTION(mlx5dv_init_obj, "MLX5_1.2");
  return fn != nullptr ? fn(obj, obj_type) : EOPNOTSUPP;
}

}  // extern "C"
