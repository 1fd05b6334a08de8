#include "sim/checksum.h"

namespace drsim::sim {
namespace {

uint16_t Fold(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

}  // namespace

uint32_t ChecksumAdd(const uint8_t* data, size_t len, uint32_t sum) {
  for (; len >= 2; data += 2, len -= 2) sum += static_cast<uint32_t>(data[0]) << 8 | data[1];
  if (len) sum += static_cast<uint32_t>(data[0]) << 8;
  return Fold(sum);
}

uint16_t ChecksumFinish(uint32_t sum) { return static_cast<uint16_t>(~Fold(sum)); }

uint16_t ChecksumUpdate(uint16_t checksum, uint32_t old_sum, uint32_t new_sum) {
  uint32_t sum = static_cast<uint16_t>(~checksum);
  sum += static_cast<uint16_t>(~Fold(old_sum));
  sum += Fold(new_sum);
  return static_cast<uint16_t>(~Fold(sum));
}

}  // namespace drsim::sim
