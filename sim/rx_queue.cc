#include "sim/rx_queue.h"

namespace drsim::sim {

bool RxQueue::Push(const uint8_t* frame, size_t len, bool has_tag, uint32_t tag,
                   uint32_t flow_table_metadata) {
  if (sink_ != nullptr) return sink_->Take(frame, len, has_tag, tag, flow_table_metadata);
  std::lock_guard<std::mutex> lock(mu_);
  if (ring_.size() >= capacity_) {
    ++dropped_full_;
    return false;
  }
  RxCompletion& c = ring_.emplace_back();
  c.frame.assign(frame, frame + len);
  c.byte_len = static_cast<uint32_t>(len);
  c.has_flow_tag = has_tag;
  c.flow_tag = has_tag ? tag : 0;
  c.flow_table_metadata = flow_table_metadata;
  ++received_;
  return true;
}

size_t RxQueue::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.size();
}

uint64_t RxQueue::received() const {
  std::lock_guard<std::mutex> lock(mu_);
  return received_;
}

uint64_t RxQueue::dropped_full() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_full_;
}

std::optional<RxCompletion> RxQueue::Poll() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ring_.empty()) return std::nullopt;
  RxCompletion c = std::move(ring_.front());
  ring_.pop_front();
  return c;
}

}  // namespace drsim::sim
