// TEMPORARY loopback-only stand-in until the wire branch lands.
#include "soft_mlx5/wire.h"

#include <deque>

namespace drsim::soft_mlx5 {
namespace {
class LoopbackWire : public Wire {
 public:
  void Transmit(absl::Span<const uint8_t> frame) override { q_.emplace_back(frame.begin(), frame.end()); }
  std::vector<std::vector<uint8_t>> Poll(size_t max) override {
    std::vector<std::vector<uint8_t>> out;
    while (!q_.empty() && out.size() < max) {
      out.push_back(std::move(q_.front()));
      q_.pop_front();
    }
    return out;
  }

 private:
  std::deque<std::vector<uint8_t>> q_;
};
}  // namespace
absl::StatusOr<std::unique_ptr<Wire>> OpenWire(absl::string_view spec) {
  return std::unique_ptr<Wire>(new LoopbackWire);
}
}  // namespace drsim::soft_mlx5
