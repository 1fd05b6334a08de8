// Internet checksums (RFC 1071) and their incremental update (RFC 1624), for frames the software NIC
// builds or rewrites.
#ifndef DRSIM_SIM_CHECKSUM_H_
#define DRSIM_SIM_CHECKSUM_H_

#include <cstddef>
#include <cstdint>

namespace drsim::sim {

// One's-complement sum of big-endian 16-bit words (an odd last byte is padded with zero), added to `sum`,
// not folded.
uint32_t ChecksumAdd(const uint8_t* data, size_t len, uint32_t sum = 0);

// Folds a sum to 16 bits and complements it: the value to store in a checksum field.
uint16_t ChecksumFinish(uint32_t sum);

// The checksum after the covered data changed from words summing to `old_sum` to words summing to
// `new_sum` (both ChecksumAdd results over the same positions): RFC 1624, HC' = ~(~HC + ~m + m').
uint16_t ChecksumUpdate(uint16_t checksum, uint32_t old_sum, uint32_t new_sum);

}  // namespace drsim::sim

#endif  // DRSIM_SIM_CHECKSUM_H_
