#include "sim/packet.h"

namespace drsim::sim {

void PacketBuffer::Insert(size_t offset, const uint8_t* bytes, size_t n) {
  Own();
  if (begin_ >= n) {  // room in front: move the head of the frame down
    std::memmove(storage_.data() + begin_ - n, storage_.data() + begin_, offset);
    begin_ -= n;
  } else {
    storage_.insert(storage_.begin() + begin_ + offset, n, 0);
  }
  if (n != 0) std::memcpy(storage_.data() + begin_ + offset, bytes, n);
}

void PacketBuffer::Erase(size_t offset, size_t n) {
  Own();
  // Move the head of the frame up over the removed bytes.
  std::memmove(storage_.data() + begin_ + n, storage_.data() + begin_, offset);
  begin_ += n;
}

namespace {

// Writes the metadata fields of `meta` into `hv`; with `zeros` false, only those that are not zero.
void WriteMetadata(const PacketMeta& meta, hw::HeaderVector* hv, bool zeros) {
  using hw::Field;
  if (zeros || meta.source_sqn != 0) hw::SetField(hv->bytes, Field::kSourceSqn, meta.source_sqn);
  if (zeros || meta.reg_a != 0) hw::SetField(hv->bytes, Field::kMetadataRegA, meta.reg_a);
  uint32_t any_reg_c = 0;
  for (uint32_t r : meta.reg_c) any_reg_c |= r;
  if (!zeros && any_reg_c == 0) return;
  for (int i = 0; i < 8; ++i) {
    // reg_c_7 comes first in the layout, reg_c_0 last.
    if (zeros || meta.reg_c[i] != 0) {
      hw::SetField(hv->bytes, static_cast<Field>(static_cast<int>(Field::kMetadataRegC0) - i), meta.reg_c[i]);
    }
  }
}

}  // namespace

void LoadMetadata(const PacketMeta& meta, hw::HeaderVector* hv) {
  // The parser has cleared `hv` and written source_port; zero fields need no write (most frames have no
  // metadata at all).
  WriteMetadata(meta, hv, /*zeros=*/false);
}

void StoreMetadata(const PacketMeta& meta, hw::HeaderVector* hv) { WriteMetadata(meta, hv, /*zeros=*/true); }

}  // namespace drsim::sim
