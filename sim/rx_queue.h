// A receive queue of the software NIC: what a raw-packet QP's receive side would see.
//
// What
//   Each completion carries the frame, its length and the flow tag of the rule that steered it, as an
//   mlx5 CQE does. Bounded: a full queue drops the frame (counted), as a NIC with no posted receive
//   buffers does.
//   A queue made with an RxSink keeps nothing: each frame goes straight to the sink, which writes it into
//   the buffers a program posted, as the hardware DMAs a frame into the next posted receive.
//
// Thread-safety
//   Any number of workers enqueue while the application polls (a lock per queue). Front() points into
//   the queue: use it only while nothing else touches the queue. A sink is called on the delivering
//   worker's thread without the queue's lock, so it may take locks of its own.
#ifndef DRSIM_SIM_RX_QUEUE_H_
#define DRSIM_SIM_RX_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace drsim::sim {

struct RxCompletion {
  std::vector<uint8_t> frame;
  uint32_t byte_len = 0;
  uint32_t flow_tag = 0;  // 0 when no tag action ran, as the hardware reports it
  bool has_flow_tag = false;
  uint32_t flow_table_metadata = 0;  // reg_b, as set by modify-header (the CQE's flow-table metadata)
};

// Takes a queue's frames as they are delivered, instead of the queue's ring.
class RxSink {
 public:
  virtual ~RxSink() = default;
  // One frame, readable only during the call; false when it has nowhere to go (the NIC records a full
  // queue's drop).
  virtual bool Take(const uint8_t* frame, size_t len, bool has_tag, uint32_t tag,
                    uint32_t flow_table_metadata) = 0;
};

class RxQueue {
 public:
  // With a `sink`, the queue owns it and hands it every frame: it lives until the NIC retires the queue,
  // once no worker can still deliver to it. Such a queue keeps and counts nothing itself (received() and
  // dropped_full() stay 0; the NIC's stats count queued and full as always).
  RxQueue(uint32_t qp_num, size_t capacity, std::unique_ptr<RxSink> sink = nullptr)
      : qp_num_(qp_num), capacity_(capacity), sink_(std::move(sink)) {}

  uint32_t qp_num() const { return qp_num_; }
  size_t size() const;
  size_t capacity() const { return capacity_; }
  uint64_t received() const;
  uint64_t dropped_full() const;

  // Enqueues a copy of the frame, or hands it to the sink; false (and counted) when the queue is full or
  // the sink refuses it.
  bool Push(const uint8_t* frame, size_t len, bool has_tag, uint32_t tag, uint32_t flow_table_metadata = 0);
  // The oldest completion, or nullopt when empty.
  std::optional<RxCompletion> Poll();
  // The oldest completion, left in the queue; nullptr when empty.
  const RxCompletion* Front() const { return ring_.empty() ? nullptr : &ring_.front(); }

 private:
  uint32_t qp_num_;
  size_t capacity_;
  const std::unique_ptr<RxSink> sink_;
  mutable std::mutex mu_;
  std::deque<RxCompletion> ring_;
  uint64_t received_ = 0;
  uint64_t dropped_full_ = 0;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_RX_QUEUE_H_
