// A frame in flight through the software NIC: its bytes (with headroom, so encapsulation and VLAN
// pushes do not move the data), and the metadata the hardware carries with it between tables and
// domains — steering registers reg_a, reg_b, reg_c_0..7, the flow tag, and where it came from.
//
// Not thread-safe; one packet is processed by one thread.
#ifndef DRSIM_SIM_PACKET_H_
#define DRSIM_SIM_PACKET_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hw/match_layout.h"

namespace drsim::sim {

class PacketBuffer {
 public:
  static constexpr size_t kHeadroom = 256;

  void Assign(const uint8_t* data, size_t len) {
    storage_.resize(kHeadroom + len);
    if (len) std::memcpy(storage_.data() + kHeadroom, data, len);
    begin_ = kHeadroom;
  }
  uint8_t* data() { return storage_.data() + begin_; }
  const uint8_t* data() const { return storage_.data() + begin_; }
  size_t size() const { return storage_.size() - begin_; }

  // Inserts `n` bytes at `offset` (0 = in front), copied from `bytes`. `offset` <= size().
  void Insert(size_t offset, const uint8_t* bytes, size_t n);
  // Removes `n` bytes at `offset`. offset + n <= size().
  void Erase(size_t offset, size_t n);

 private:
  std::vector<uint8_t> storage_;
  size_t begin_ = kHeadroom;
};

struct PacketMeta {
  uint16_t source_port = 0xffff;  // the vport the frame came from; 0xffff = the wire
  uint32_t source_sqn = 0;        // the send queue of a frame a function transmitted
  uint32_t reg_a = 0;             // metadata from the sender's WQE (matchable as misc2.metadata_reg_a)
  uint32_t reg_b = 0;             // reported in the receive completion's flow-table metadata
  uint32_t reg_c[8] = {};         // steering registers, carried across tables and domains
  bool has_flow_tag = false;
  uint32_t flow_tag = 0;
};

// Writes the metadata fields of the match layout (source_port, source_sqn, the registers) into `hv`.
void LoadMetadata(const PacketMeta& meta, hw::HeaderVector* hv);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PACKET_H_
