#include "classbench/generator.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::classbench {
namespace {

TEST(GeneratorTest, SetsAreValidDeterministicAndEndInACatchAll) {
  for (Profile p : {Profile::kAcl, Profile::kFw, Profile::kIpc}) {
    const std::vector<Filter> set = Generate(p, 2000, 7);
    ASSERT_EQ(set.size(), 2000u);
    EXPECT_EQ(set.back(), Filter{});
    EXPECT_EQ(Generate(p, 2000, 7), set);
    EXPECT_NE(Generate(p, 2000, 8), set);
    for (const Filter& f : set) {
      EXPECT_EQ(f.src & ~f.src_mask, 0u);
      EXPECT_EQ(f.dst & ~f.dst_mask, 0u);
      EXPECT_LE(f.sport.lo, f.sport.hi);
      EXPECT_LE(f.dport.lo, f.dport.hi);
      EXPECT_TRUE(f.proto_mask == 0 || f.proto_mask == 0xff);
      if (f.proto_mask == 0) {
        EXPECT_TRUE(f.sport.all() && f.dport.all());  // ports only with TCP/UDP
      }
    }
  }
  // The profiles differ where ClassBench's families do: firewalls wildcard far more destinations.
  auto dst_wildcards = [](const std::vector<Filter>& set) {
    int n = 0;
    for (const Filter& f : set) n += f.dst_mask == 0;
    return n;
  };
  EXPECT_GT(dst_wildcards(Generate(Profile::kFw, 5000, 1)),
            3 * dst_wildcards(Generate(Profile::kAcl, 5000, 1)));
  EXPECT_EQ(ParseProfile("fw").value(), Profile::kFw);
  EXPECT_FALSE(ParseProfile("firewall").ok());
}

TEST(GeneratorTest, TracesHitTheSetAndFilesRoundTrip) {
  const std::vector<Filter> set = Generate(Profile::kAcl, 1000, 3);
  const std::vector<Header> trace = GenerateTrace(set, 5000, 4);
  ASSERT_EQ(trace.size(), 5000u);
  int before_catch_all = 0;
  for (const Header& h : trace) before_catch_all += FirstMatch(set, h).value() + 1 < set.size();
  EXPECT_GT(before_catch_all, 4000);  // headers come from real filters, not only the default
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/acl1k.txt";
  ASSERT_TRUE(WriteFilterFile(path, set).ok());
  EXPECT_EQ(ReadFilterFile(path).value(), set);
}

}  // namespace
}  // namespace drsim::classbench
