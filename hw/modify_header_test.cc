#include "hw/modify_header.h"

#include <endian.h>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

TEST(ModifyHeaderTest, SetWordLayout) {
  // The rdma-core test's SET SMAC_47_16 = 0x88888888 (length 32 encoded as 0).
  uint64_t w = ModifySetWord(ModifyField::kSmac47_16, 0, 0, 0x88888888);
  EXPECT_EQ(be64toh(w), 0x1001000088888888ull);
  ModifyAction a = DecodeModifyWord(w);
  EXPECT_EQ(a.op, 1);
  EXPECT_EQ(a.field, 0x01);
  EXPECT_EQ(a.offset, 0);
  EXPECT_EQ(a.length, 32);
  EXPECT_EQ(a.data, 0x88888888u);
  a = DecodeModifyWord(ModifySetWord(ModifyField::kFirstVid, 3, 12, 0xabc));
  EXPECT_EQ(a.field, 0x17);
  EXPECT_EQ(a.offset, 3);
  EXPECT_EQ(a.length, 12);
}

TEST(ModifyHeaderTest, CopyWordLayout) {
  uint64_t w = ModifyCopyWord(ModifyField::kMetadataRegC0, 4, ModifyField::kMetadataRegC1, 8, 16);
  // type 3 | src 0x51 | src_offset 4 | length 16 | dst 0x52 | dst_offset 8
  EXPECT_EQ(be64toh(w), 0x3051041000520800ull);
  ModifyAction a = DecodeModifyWord(w);
  EXPECT_EQ(a.op, 3);
  EXPECT_EQ(a.field, 0x51);
  EXPECT_EQ(a.offset, 4);
  EXPECT_EQ(a.length, 16);
  EXPECT_EQ(a.dst_field, 0x52);
  EXPECT_EQ(a.dst_offset, 8);
}

TEST(ModifyHeaderTest, FieldTable) {
  ASSERT_NE(FindModifyField(0x0a), nullptr);
  EXPECT_EQ(FindModifyField(0x0a)->name, "IP_TTL");
  EXPECT_EQ(FindModifyField(0x73)->width, 2);
  EXPECT_EQ(FindModifyField(0x07)->width, 9);
  EXPECT_EQ(FindModifyField(0x57), nullptr);  // REGC_6 is not modifiable
  EXPECT_EQ(FindModifyField(0x00), nullptr);
}

}  // namespace
}  // namespace drsim::hw
