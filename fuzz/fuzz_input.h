// The fuzz targets' view of their input: a stream of operands read front to back — bytes, numbers below a
// bound, little-endian words, byte strings — that reads as zeros once it runs out, so every input decodes.
#ifndef DRSIM_FUZZ_FUZZ_INPUT_H_
#define DRSIM_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace drsim::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  bool done() const { return at_ >= size_; }
  uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }
  // 0..n-1, from one byte (n <= 256).
  int Below(int n) { return Byte() % n; }
  uint16_t U16() {
    const uint16_t low = Byte();
    return static_cast<uint16_t>(low | Byte() << 8);
  }
  uint32_t U32() {
    const uint32_t low = U16();
    return low | static_cast<uint32_t>(U16()) << 16;
  }
  // The next `n` bytes (zeros past the end).
  std::vector<uint8_t> Bytes(size_t n) {
    std::vector<uint8_t> bytes(n);
    for (uint8_t& b : bytes) b = Byte();
    return bytes;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace drsim::fuzz

#endif  // DRSIM_FUZZ_FUZZ_INPUT_H_
