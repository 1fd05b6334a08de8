#include "actions/modify_header_compiler.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::actions {
namespace {

using hw::ModifyField;

constexpr auto kRx = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
constexpr auto kTx = MLX5DV_DR_DOMAIN_TYPE_NIC_TX;
constexpr auto kFdb = MLX5DV_DR_DOMAIN_TYPE_FDB;

void ExpectError(const absl::Status& s, absl::StatusCode code, const std::string& needle) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_NE(s.message().find(needle), absl::string_view::npos) << "'" << needle << "' not in: " << s;
}

absl::Status Check(mlx5dv_dr_domain_type d, std::vector<uint64_t> words) {
  return CompileModifyHeader(d, words).status();
}

TEST(ModifyHeaderCompilerTest, AcceptsTheRdmaCoreTestLists) {
  // test_tbl_modify_header_rule: SET SMAC_47_16 = 0x88888888, SET SMAC_15_0 = 0x8888.
  absl::StatusOr<hw::ModifyProgram> a =
      CompileModifyHeader(kTx, {hw::ModifySetWord(ModifyField::kSmac47_16, 0, 0, 0x88888888),
                                hw::ModifySetWord(ModifyField::kSmac15_0, 0, 16, 0x8888)});
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_EQ(a->actions.size(), 2u);
  EXPECT_EQ(a->actions[0].length, 32);
  // test_metadata_modify_action_set_copy_match: SET reg_c_0, COPY reg_c_0 -> reg_c_1.
  EXPECT_TRUE(
      Check(kRx, {hw::ModifySetWord(ModifyField::kMetadataRegC0, 0, 0, 0x1234),
                  hw::ModifyCopyWord(ModifyField::kMetadataRegC0, 0, ModifyField::kMetadataRegC1, 0, 0)})
          .ok());
}

TEST(ModifyHeaderCompilerTest, Errors) {
  ExpectError(Check(kRx, {}), absl::StatusCode::kInvalidArgument, "empty");
  ExpectError(Check(kRx, {hw::ModifySetWord(ModifyField::kIpTtl, 4, 8, 1)}),
              absl::StatusCode::kInvalidArgument,
              "modify_header action[0] (SET IP_TTL): offset 4 + length 8 exceeds IP_TTL's 8 bits");
  ExpectError(Check(kRx, {hw::ModifySetWord(static_cast<ModifyField>(0x57), 0, 0, 1)}),
              absl::StatusCode::kInvalidArgument, "unknown field 0x57");
  ExpectError(Check(kRx, {hw::ModifyAddWord(ModifyField::kTcpSport, 1)}), absl::StatusCode::kInvalidArgument,
              "ADD is only supported on IP_TTL");
  EXPECT_TRUE(Check(kRx, {hw::ModifyAddWord(ModifyField::kIpTtl, 0xff)}).ok());  // a decrement
  ExpectError(Check(kRx, {hw::ModifySetWord(ModifyField::kMetadataRegA, 0, 0, 1)}),
              absl::StatusCode::kInvalidArgument, "METADATA_REGA can only be modified in NIC_TX");
  ExpectError(Check(kFdb, {hw::ModifySetWord(ModifyField::kMetadataRegB, 0, 0, 1)}),
              absl::StatusCode::kInvalidArgument, "METADATA_REGB can only be modified in NIC_RX");
  EXPECT_TRUE(Check(kTx, {hw::ModifySetWord(ModifyField::kMetadataRegA, 0, 0, 1)}).ok());
  ExpectError(
      Check(kTx, {hw::ModifyCopyWord(ModifyField::kMetadataRegB, 0, ModifyField::kMetadataRegC0, 0, 0)}),
      absl::StatusCode::kInvalidArgument, "COPY METADATA_REGB -> METADATA_REGC_0");
  ExpectError(Check(kRx, {hw::ModifyCopyWord(ModifyField::kIpDscp, 3, ModifyField::kIpEcn, 0, 4)}),
              absl::StatusCode::kInvalidArgument, "offset 3 + length 4 exceeds IP_DSCP's 6 bits");
  ExpectError(Check(kRx, {hw::ModifySetWord(ModifyField::kSipv4, 0, 0, 1),
                          hw::ModifySetWord(ModifyField::kDipv6_31_0, 0, 0, 1)}),
              absl::StatusCode::kUnimplemented,
              "action[1] (SET DIPV6_31_0): a list cannot modify both IPv4 and IPv6");
  ExpectError(Check(kRx, {hw::ModifySetWord(ModifyField::kTcpDport, 0, 16, 1),
                          hw::ModifySetWord(ModifyField::kUdpDport, 0, 16, 1)}),
              absl::StatusCode::kInvalidArgument, "both TCP and UDP");
  uint64_t bad_type = hw::ModifySetWord(ModifyField::kIpTtl, 0, 8, 1) ^ htobe64(uint64_t{5} << 60);
  ExpectError(Check(kRx, {bad_type}), absl::StatusCode::kUnimplemented, "unknown action type 4");
  // DSCP/ECN belong to neither IP version, so they mix with either.
  EXPECT_TRUE(Check(kRx, {hw::ModifySetWord(ModifyField::kIpDscp, 0, 6, 1),
                          hw::ModifySetWord(ModifyField::kSipv6_31_0, 0, 0, 1),
                          hw::ModifySetWord(ModifyField::kIpEcn, 0, 2, 1)})
                  .ok());
}

// What a list rewrites is decided once, here: the device fixes the checksums over the fields the list writes
// and no others, as the hardware "recalcs checksums only if re-writing headers" (Linux mlx5e,
// en/tc/act/csum.c, csum_offload_supported). A COPY's source is only read.
TEST(ModifyHeaderCompilerTest, TheProgramSaysWhichChecksumsTheListRewrites) {
  auto compile = [](std::vector<uint64_t> words) {
    absl::StatusOr<hw::ModifyProgram> p = CompileModifyHeader(kRx, words);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::make_pair(p->checksums, p->writes_packet) : std::make_pair(uint8_t{0xff}, true);
  };
  using Summary = std::pair<uint8_t, bool>;
  const uint8_t kIpv4 = hw::kModifyIpv4HeaderChecksum, kL4 = hw::kModifyL4Checksum;
  // rdma-core's test_metadata_modify_action_set_copy_match: registers only, and a frame field read.
  EXPECT_EQ(compile({hw::ModifySetWord(ModifyField::kMetadataRegC0, 0, 0, 0x1234),
                     hw::ModifyCopyWord(ModifyField::kMetadataRegC0, 0, ModifyField::kMetadataRegC1, 0, 0),
                     hw::ModifyCopyWord(ModifyField::kSipv4, 0, ModifyField::kMetadataRegC2, 0, 0)}),
            Summary(hw::kModifyNoChecksum, false));
  EXPECT_EQ(compile({hw::ModifySetWord(ModifyField::kSmac47_16, 0, 0, 1),
                     hw::ModifySetWord(ModifyField::kFirstVid, 0, 12, 5)}),
            Summary(hw::kModifyNoChecksum, true));
  EXPECT_EQ(compile({hw::ModifyAddWord(ModifyField::kIpTtl, 0xff)}), Summary(kIpv4, true));
  EXPECT_EQ(compile({hw::ModifySetWord(ModifyField::kIpDscp, 0, 6, 1)}), Summary(kIpv4, true));
  EXPECT_EQ(compile({hw::ModifySetWord(ModifyField::kDipv4, 0, 0, 1)}), Summary(kIpv4 | kL4, true));
  EXPECT_EQ(compile({hw::ModifySetWord(ModifyField::kUdpDport, 0, 16, 1)}), Summary(kL4, true));
  EXPECT_EQ(compile({hw::ModifySetWord(ModifyField::kIpv6Hoplimit, 0, 8, 1)}),
            Summary(hw::kModifyNoChecksum, true));
  EXPECT_EQ(compile({hw::ModifyCopyWord(ModifyField::kMetadataRegC0, 0, ModifyField::kTcpSport, 0, 16)}),
            Summary(kL4, true));
}

}  // namespace
}  // namespace drsim::actions
