// A receive queue of the software NIC: what a raw-packet QP's receive side would see. Each completion
// carries the frame, its length and the flow tag of the rule that steered it, as an mlx5 CQE does.
// Bounded: a full queue drops the frame (counted), as a NIC with no posted receive buffers does.
//
// Thread-safe: any number of workers enqueue while the application polls (a lock per queue). Front()
// points into the queue: use it only while nothing else touches the queue.
#ifndef DRSIM_SIM_RX_QUEUE_H_
#define DRSIM_SIM_RX_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
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

class RxQueue {
 public:
  RxQueue(uint32_t qp_num, size_t capacity) : qp_num_(qp_num), capacity_(capacity) {}

  uint32_t qp_num() const { return qp_num_; }
  size_t size() const;
  size_t capacity() const { return capacity_; }
  uint64_t received() const;
  uint64_t dropped_full() const;

  // Enqueues a copy of the frame; false (and counted) when the queue is full.
  bool Push(const uint8_t* frame, size_t len, bool has_tag, uint32_t tag, uint32_t flow_table_metadata = 0);
  // The oldest completion, or nullopt when empty.
  std::optional<RxCompletion> Poll();
  // The oldest completion, left in the queue; nullptr when empty.
  const RxCompletion* Front() const { return ring_.empty() ? nullptr : &ring_.front(); }

 private:
  uint32_t qp_num_;
  size_t capacity_;
  mutable std::mutex mu_;
  std::deque<RxCompletion> ring_;
  uint64_t received_ = 0;
  uint64_t dropped_full_ = 0;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_RX_QUEUE_H_
