// testpmd's geneve-opt item (OVN's tunnel key) on the software NIC: the GENEVE TLV option object mlx5
// creates on first use and the one-option-per-device rule, and mlx5's checks of the item, each with its
// message. runner_test.cc runs ovn_geneve.rules with traffic.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testpmd/engine_test_util.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

constexpr char kPattern[] = "flow create 0 transfer pattern eth / ipv4 / udp / geneve vni is 5 / ";

TEST_F(EngineTest, OneGeneveOptionPerDeviceUntilItsFlowsAreGone) {
  const std::string key = std::string(kPattern) + "geneve-opt class is 0x0102 type is 0x80 length is 1 data is ";
  Run(key + "0x00010002 / end actions drop / end");
  Run(key + "0x00010003 / end actions drop / end");  // the same option: shared
  // Another class, or the same with another length: refused, naming the option in use.
  const std::string other = std::string(kPattern) + "geneve-opt class is 0x0103 type is 0x80 length is 1 data is 1 / "
                                                     "end actions drop / end";
  absl::StatusOr<CommandResult> r = Try(other);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("only one GENEVE TLV option is supported per device"));
  EXPECT_THAT(r.status().message(), HasSubstr("class 0x0102 type 0x80 length 1"));
  EXPECT_EQ(ErrorColumn(r.status()), static_cast<int>(other.find("geneve-opt") + 1));
  r = Try("flow create 0 transfer pattern eth / ipv4 / udp / geneve vni is 5 optlen is 3 / geneve-opt class is 0x0102 type is 0x80 length is 2 data is 1 "
                                  "/ end actions drop / end");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("only one GENEVE TLV option"));
  // The object lives while flows use it; when they are gone the other option can be configured.
  EXPECT_TRUE(nic_.QueryGeneveTlvOption(1).ok());
  Run("flow flush 0");
  EXPECT_FALSE(nic_.QueryGeneveTlvOption(1).ok());
  Run(other);
  EXPECT_EQ(nic_.QueryGeneveTlvOption(2)->option_class, 0x0103);
  // validate makes and drops its own object, leaving the flows' one.
  EXPECT_TRUE(Try("flow validate 0 transfer pattern eth / ipv4 / udp / geneve / geneve-opt class is 0x0103 "
                  "type is 0x80 length is 1 data is 7 / end actions drop / end")
                  .ok());
  EXPECT_TRUE(nic_.QueryGeneveTlvOption(2).ok());
}

TEST_F(EngineTest, GeneveOptErrorsNameTheReason) {
  struct Case {
    const char* item;     // after "geneve vni is 5 / " (or replacing it when it starts with "!")
    const char* message;
    const char* culprit;  // the error's column is where this text starts
  } cases[] = {
      {"geneve-opt class spec 0x0102 type is 0x80 length is 1 data is 1",
       "class, type and length must be matched whole", "class"},
      {"geneve-opt class is 0x0102 type is 0x80 length is 0 data is 1", "of length 0", "length"},
      {"geneve-opt class is 0x0102 type is 0x80 length is 1", "without data", "geneve-opt"},
      {"geneve-opt class is 0x0102 type is 0x80 length is 8 data is 1", "at most 7 data words", "length"},
      {"geneve-opt class is 0x0102 type is 0x80 length is 1 data is 0x00000000", "cannot match option data 0",
       "data"},
      {"geneve-opt class is 0x0102 type is 0x80 length is 2 data is 0x0000000100000002",
       "only the first 4 can be matched", "0x0000000100000002"},
      {"geneve-opt", "needs its class, type and length", "geneve-opt"},
      {"geneve-opt class is 0x0102 type is 0x80 length is 1 data is 1 / geneve-opt class is 0x0102 type is 0x80 "
       "length is 1 data is 2",
       "a second geneve-opt item", "geneve-opt class is 0x0102 type is 0x80 length is 1 data is 2"},
  };
  for (const Case& c : cases) {
    const std::string command = std::string(kPattern) + c.item + " / end actions drop / end";
    absl::StatusOr<CommandResult> r = Try(command);
    ASSERT_FALSE(r.ok()) << command;
    EXPECT_THAT(r.status().message(), HasSubstr(c.message)) << command;
    EXPECT_EQ(ErrorColumn(r.status()), static_cast<int>(command.rfind(c.culprit) + 1)) << command << "\n  "
                                                                                        << r.status();
  }
  // Not after a geneve item; an option longer than the geneve item's optlen allows.
  absl::StatusOr<CommandResult> r = Try(
      "flow create 0 transfer pattern eth / ipv4 / udp / geneve-opt class is 0x0102 type is 0x80 length is 1 "
      "data is 1 / end actions drop / end");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("geneve-opt must follow a geneve item"));
  r = Try(
      "flow create 0 transfer pattern eth / ipv4 / udp / geneve vni is 5 optlen is 1 / geneve-opt class is 0x0102 "
      "type is 0x80 length is 1 data is 1 / end actions drop / end");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("exceeds the geneve item's optlen 1"));
  EXPECT_EQ(engine_.counts().rules, 0);  // failed commands leave nothing behind
  EXPECT_FALSE(nic_.QueryGeneveTlvOption(1).ok());
}

}  // namespace
}  // namespace drsim::testpmd
