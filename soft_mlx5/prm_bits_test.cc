#include "soft_mlx5/prm_bits.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::soft_mlx5 {
namespace {

TEST(PrmBitsTest, FieldsAreBigEndianFromTheMostSignificantBit) {
  std::vector<uint8_t> b(8, 0);
  PrmSet(absl::MakeSpan(b), {0x00, 16}, 0x0939);  // an opcode
  PrmSet(absl::MakeSpan(b), {0x2b, 5}, 0x1f);     // bits 3..7 of byte 5
  PrmSet(absl::MakeSpan(b), {0x3c, 1}, 1);        // bit 4 of byte 7
  EXPECT_EQ(b, (std::vector<uint8_t>{0x09, 0x39, 0, 0, 0, 0x1f, 0, 0x08}));
  EXPECT_EQ(PrmGet(b, {0x00, 16}), 0x0939u);
  EXPECT_EQ(PrmGet(b, {0x2b, 5}), 0x1fu);
  EXPECT_EQ(PrmGet(b, {0x28, 8}), 0x1fu);
  EXPECT_EQ(PrmGet(b, {0x3c, 1}), 1u);
  // A field straddling bytes, and a 64-bit one.
  PrmSet(absl::MakeSpan(b), {0x04, 12}, 0xabc);
  EXPECT_EQ(b[0], 0x0a);
  EXPECT_EQ(b[1], 0xbc);
  PrmSet(absl::MakeSpan(b), {0, 64}, 0x0102030405060708);
  EXPECT_EQ(PrmGet(b, {0, 64}), 0x0102030405060708u);
  EXPECT_EQ(b[7], 0x08);
  // Setting a narrower field leaves its neighbours alone, and keeps only its own bits of the value.
  PrmSet(absl::MakeSpan(b), {0x08, 4}, 0xff);
  EXPECT_EQ(b[1], 0xf2);
  EXPECT_EQ(b[0], 0x01);
}

TEST(PrmBitsTest, NothingPastTheBufferIsReadOrWritten) {
  std::vector<uint8_t> backing(6, 0xee);
  absl::Span<uint8_t> b = absl::MakeSpan(backing).first(4);
  PrmSet(b, {0x18, 32}, 0xffffffff);  // bytes 3 to 6: only byte 3 is in the buffer
  EXPECT_EQ(backing, (std::vector<uint8_t>{0xee, 0xee, 0xee, 0xff, 0xee, 0xee}));
  EXPECT_EQ(PrmGet(b, {0x18, 16}), 0xff00u);  // the missing byte reads 0
  EXPECT_EQ(PrmGet(b, {0x40, 8}), 0u);
  constexpr PrmField f{0x1e8, 24};
  EXPECT_EQ(f.first_byte(), 61u);
  EXPECT_EQ(f.end_byte(), 64u);
  EXPECT_EQ(f.At(0x100).bit, 0x2e8u);
}

}  // namespace
}  // namespace drsim::soft_mlx5
