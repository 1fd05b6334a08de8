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

  // Copies `len` bytes from `data` into the buffer.
  void Assign(const uint8_t* data, size_t len) {
    borrowed_ = false;
    storage_.resize(kHeadroom + len);
    if (len) std::memcpy(storage_.data() + kHeadroom, data, len);
    begin_ = kHeadroom;
  }
  // Refers to `len` bytes at `data` without copying them; the caller keeps them alive and unchanged while
  // the buffer refers to them. The first change (mutable_data, Insert, Erase) copies them in. Frames
  // that no action rewrites are never copied.
  void Borrow(const uint8_t* data, size_t len) {
    borrowed_ = true;
    borrowed_data_ = data;  // null for an empty frame
    borrowed_len_ = len;
  }
  const uint8_t* data() const { return borrowed_ ? borrowed_data_ : storage_.data() + begin_; }
  size_t size() const { return borrowed_ ? borrowed_len_ : storage_.size() - begin_; }
  // The bytes, to change in place (copied in first when borrowed).
  uint8_t* mutable_data() {
    Own();
    return storage_.data() + begin_;
  }

  // Inserts `n` bytes at `offset` (0 = in front), copied from `bytes`. `offset` <= size().
  void Insert(size_t offset, const uint8_t* bytes, size_t n);
  // Removes `n` bytes at `offset`. offset + n <= size().
  void Erase(size_t offset, size_t n);

 private:
  void Own() {
    if (borrowed_) Assign(borrowed_data_, borrowed_len_);
  }

  std::vector<uint8_t> storage_;
  size_t begin_ = kHeadroom;
  bool borrowed_ = false;  // the frame is the borrowed_len_ bytes at borrowed_data_, not in storage_
  const uint8_t* borrowed_data_ = nullptr;
  size_t borrowed_len_ = 0;
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

// Writes the metadata fields of the match layout (source_sqn, the registers) into `hv`, which
// ParsePacket(..., meta.source_port, hv) has just filled: source_port is written, and the fields not
// written here, for zero values, are zero already.
void LoadMetadata(const PacketMeta& meta, hw::HeaderVector* hv);
// Writes the same fields over what `hv` held of them (zeros too): for metadata that changed after a parse.
void StoreMetadata(const PacketMeta& meta, hw::HeaderVector* hv);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_PACKET_H_
