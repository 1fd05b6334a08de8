// The verbs objects of the software mlx5 device: the structs behind the ibv_pd, ibv_mr, ibv_cq, ibv_qp,
// ibv_wq and ibv_rwq_ind_table pointers it hands out, and the per-NIC state that moves frames between
// the NIC's receive queues and the buffers a program posted.
//
// What
//   Each struct starts with the verbs struct users see, so a user's pointer is the object's. Every one
//   is registered with capi::Registry under its kind until it is destroyed: a call checks that it got
//   an object of the software device (the generated pass-through wrappers forward anything else to
//   rdma-core).
//
// How
//   A raw-packet QP or a WQ owns a sim receive queue (sim::Function::CreateQueue; its number is the
//   qp_num or wq_num) with a PostedReceiveSink: NicState::DeliverToPosted copies each frame the NIC
//   delivers straight into the oldest posted receive and completes it on the receive CQ, as the
//   hardware DMAs into a posted buffer. A frame that finds none is dropped and counted in
//   capi::Context::rx_out_of_buffer, as mlx5's out_of_buffer queue counter counts it.
//
// Thread-safety
//   Everything here is touched with the NIC's context lock (capi::Context::mu) held.
//   PostedReceiveSink::Take, called by whichever thread runs the NIC, takes that lock itself (the
//   device's own pumping thread already holds it).
#ifndef DRSIM_SOFT_MLX5_VERBS_OBJECTS_H_
#define DRSIM_SOFT_MLX5_VERBS_OBJECTS_H_

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "capi/objects.h"
#include "sim/rx_queue.h"
#include "soft_mlx5/wire.h"

namespace drsim::soft_mlx5 {

struct SoftPd {
  ibv_pd pd;
};

struct SoftMr {
  ibv_mr mr;
  unsigned access = 0;
  uint64_t iova = 0;  // the address SGEs use for mr.addr (ibv_reg_mr_iova2); mr.addr otherwise
};

// A completion channel: an eventfd that a CQ armed with ibv_req_notify_cq writes when it completes.
struct SoftCompChannel {
  ibv_comp_channel channel;
  std::deque<struct SoftCq*> notified;  // CQs whose events ibv_get_cq_event has not yet returned
};

// One work completion, as a CQE carries it.
struct Completion {
  uint64_t wr_id = 0;
  ibv_wc_status status = IBV_WC_SUCCESS;
  ibv_wc_opcode opcode = IBV_WC_SEND;
  uint32_t byte_len = 0;
  uint32_t qp_num = 0;
  uint32_t flow_tag = 0;
  unsigned wc_flags = 0;
  uint64_t timestamp_ns = 0;
};

// A CQ, plain or extended: ibv_create_cq returns &cq as an ibv_cq (its leading members are the same).
struct SoftCq {
  ibv_cq_ex cq;
  std::deque<Completion> done;
  uint64_t wc_flags = 0;  // what the extended CQ may be read for (IBV_WC_EX_WITH_*)
  bool polling = false;   // between start_poll and end_poll
  Completion current;     // the completion start_poll/next_poll moved to
  uint64_t overruns = 0;  // completions lost because the CQ was full
  int attached = 0;       // QPs and WQs using it: ibv_destroy_cq is EBUSY until 0
  bool armed = false;     // ibv_req_notify_cq: the next completion signals the channel
};

struct PostedReceive {
  uint64_t wr_id = 0;
  absl::InlinedVector<ibv_sge, 1> sges;  // addr: the host address (most receives have one SGE)
};

struct ReceiveQueue;
class NicState;

// The sink of a QP's or WQ's sim receive queue. The sim queue owns it, so it lives as long as a worker of
// any thread may deliver to it; it hands frames on only while its ReceiveQueue exists (Detach).
class PostedReceiveSink : public sim::RxSink {
 public:
  PostedReceiveSink(capi::Context* ctx, ReceiveQueue* rq) : ctx_(ctx), rq_(rq) {}
  // Takes the context lock (the device's pumping thread already holds it).
  bool Take(const uint8_t* frame, size_t len, bool has_tag, uint32_t tag,
            uint32_t flow_table_metadata) override;
  // From now on frames are refused; with the context lock held.
  void Detach() { rq_ = nullptr; }
  void Attach(ReceiveQueue* rq) { rq_ = rq; }

 private:
  capi::Context* const ctx_;
  ReceiveQueue* rq_;
};

// The receive side of a raw-packet QP or of a WQ.
struct ReceiveQueue {
  uint32_t number = 0;  // the sim queue: the QP's qp_num or the WQ's wq_num
  uint16_t vport = 0;
  PostedReceiveSink* sink = nullptr;  // owned by the sim queue; detached by ReleaseReceiveQueue
  SoftCq* cq = nullptr;
  ibv_pd* pd = nullptr;
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  bool ready = false;  // receives are delivered only in RTR/RTS (QP) or RDY (WQ)
  std::deque<PostedReceive> posted;
};

// A raw-packet QP. `base` is capi's QP, so DR actions and verbs flows take it as they take drsim's QPs.
// An RSS QP (created with rx_hash_conf) has no queues of its own: its frames go to its TIR.
struct SoftQp {
  drsim_qp base;
  SoftCq* send_cq = nullptr;
  ReceiveQueue rq;
  uint32_t max_send_wr = 0;
  uint32_t max_send_sge = 0;
  uint32_t max_inline_data = 0;
  bool sq_sig_all = false;
  bool rss = false;
  uint32_t tir = 0;  // rss: the TIR spreading its frames
  struct SoftRwqIndTable* ind_table = nullptr;
};

struct SoftWq {
  ibv_wq wq;
  ReceiveQueue rq;
  int tables = 0;  // indirection tables using it: ibv_destroy_wq is EBUSY until 0
};

struct SoftRwqIndTable {
  ibv_rwq_ind_table table;
  std::vector<SoftWq*> wqs;
  int qps = 0;  // RSS QPs using it
};

// Per NIC: the receive queues of its verbs QPs and WQs, and the uplink's wire (none for a drsim_open NIC,
// whose wire frames stay for drsim_recv_port).
class NicState : public capi::ContextExtension {
 public:
  explicit NicState(capi::Context* ctx);
  // The state of `ctx`, made on first use.
  static NicState& Of(capi::Context& ctx);

  // Writes a frame the NIC delivered to `rq` into its oldest posted receive and completes it; false (and
  // counted in rx_out_of_buffer) when none is posted or the queue is not ready.
  bool DeliverToPosted(ReceiveQueue& rq, const uint8_t* frame, size_t len, bool has_tag, uint32_t tag);
  void set_wire(std::unique_ptr<Wire> wire) { wire_ = std::move(wire); }

  // Memory regions by lkey (the same number is the rkey).
  uint32_t AddMr(SoftMr* mr) {
    const uint32_t key = next_key_++;
    mrs_[key] = mr;
    return key;
  }
  void RemoveMr(uint32_t lkey) {
    mrs_.erase(lkey);
    if (lkey == last_mr_key_) last_mr_ = nullptr;
  }
  // The last region found is kept: the SGEs of a post mostly name one.
  SoftMr* FindMr(uint32_t lkey) const {
    if (last_mr_ != nullptr && lkey == last_mr_key_) return last_mr_;
    auto it = mrs_.find(lkey);
    if (it == mrs_.end()) return nullptr;
    last_mr_key_ = lkey;
    last_mr_ = it->second;
    return last_mr_;
  }

  // Moves frames until nothing moves (bounded): the NIC's uplink to the wire, the wire's arrivals into
  // the NIC, and what reached each receive queue into its posted receives.
  void Pump();

  // ibv_post_send's frames, gathered from their SGEs, kept from call to call so that a list's frames go
  // to the NIC in one burst without an allocation each.
  struct SendScratch {
    std::vector<uint8_t> bytes;      // the frames, one after another
    std::vector<size_t> ends;        // where each frame ends in `bytes`
    std::vector<uint64_t> signaled;  // wr_id of each frame that completes on the send CQ, in order
    std::vector<absl::Span<const uint8_t>> frames;
  };
  SendScratch& send_scratch() { return send_scratch_; }

 private:
  // A receive completion's timestamp: CLOCK_MONOTONIC, read once a pump (the frames a pump moves
  // complete together) and once a frame otherwise.
  uint64_t CompletionTime();
  // Puts wire_in_'s frames into the NIC as one burst and empties it; returns how many there were.
  size_t ReceiveWireFrames();

  capi::Context* const ctx_;
  const bool debug_;  // DRSIM_DEBUG: say why a frame was dropped
  bool pumping_ = false;
  uint64_t pump_time_ = 0;                      // 0 until the pump's first receive completion
  std::vector<std::vector<uint8_t>> wire_out_;  // scratch: frames leaving by the uplink
  std::unique_ptr<Wire> wire_;
  std::vector<absl::Span<const uint8_t>> wire_in_;  // Pump's views of the wire's frames, reused
  SendScratch send_scratch_;
  absl::flat_hash_map<uint32_t, SoftMr*> mrs_;
  mutable uint32_t last_mr_key_ = 0;  // FindMr's last answer (none while last_mr_ is null)
  mutable SoftMr* last_mr_ = nullptr;
  uint32_t next_key_ = 0x1000;
};

// Adds a completion to `cq`, counting an overrun when it already holds cq.cqe completions; an armed CQ
// signals its completion channel.
void Complete(SoftCq& cq, const Completion& c);

}  // namespace drsim::soft_mlx5

#endif  // DRSIM_SOFT_MLX5_VERBS_OBJECTS_H_
