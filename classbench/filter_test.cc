#include "classbench/filter.h"

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace drsim::classbench {
namespace {

using ::testing::HasSubstr;

TEST(FilterTest, ParsesClassBenchLines) {
  absl::StatusOr<Filter> f = ParseFilterLine(
      "@10.0.160.77/24\t192.0.0.0/8\t0 : 65535\t6000 : 6063\t0x11/0xFF\t0x0000/0x0000", "f", 1);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->src, 0x0a00a000u);  // host bits cleared
  EXPECT_EQ(f->src_mask, 0xffffff00u);
  EXPECT_EQ(f->dst, 0xc0000000u);
  EXPECT_EQ(f->dst_mask, 0xff000000u);
  EXPECT_TRUE(f->sport.all());
  EXPECT_EQ(f->dport, (PortRange{6000, 6063}));
  EXPECT_EQ(f->proto, 17);
  EXPECT_EQ(f->proto_mask, 0xff);
  // Blanks instead of tabs, no flags field, any protocol.
  f = ParseFilterLine("@0.0.0.0/0  1.2.3.4/32  1024 : 2047  80 : 80  0x00/0x00", "f", 1);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->src_mask, 0u);
  EXPECT_EQ(f->dst, 0x01020304u);
  EXPECT_EQ(f->sport, (PortRange{1024, 2047}));
  EXPECT_EQ(f->proto_mask, 0);
  EXPECT_EQ(*ParseFilterLine(FormatFilter(*f), "f", 1), *f) << FormatFilter(*f);
}

TEST(FilterTest, ErrorsNameFileLineAndColumn) {
  struct Case {
    const char* line;
    const char* message;
  };
  const Case cases[] = {
      {"10.0.0.0/8 0.0.0.0/0 0 : 1 0 : 1 0x06/0xFF", "f:3:1: a filter line starts with '@'"},
      {"@10.0.0/8\t0.0.0.0/0\t0 : 1\t0 : 1\t0x06/0xFF", "f:3:2: bad IPv4 address '10.0.0'"},
      {"@10.0.0.0/33\t0.0.0.0/0\t0 : 1\t0 : 1\t0x06/0xFF", "f:3:11: bad prefix length '33'"},
      {"@10.0.0.0/8\t0.0.0.0/0\t5 : 1\t0 : 1\t0x06/0xFF", "f:3:23: bad port range '5 : 1'"},
      {"@10.0.0.0/8\t0.0.0.0/0\t0 : 1\t0 : 70000\t0x06/0xFF", "f:3:29: bad port range '0 : 70000'"},
      {"@10.0.0.0/8\t0.0.0.0/0\t0 : 1\t0 : 1\t0x06/0x0F", "f:3:35: bad protocol '0x06/0x0F'"},
      {"@10.0.0.0/8\t0.0.0.0/0\t0 : 1", "f:3:1: expected 5 or 6 fields"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Filter> f = ParseFilterLine(c.line, "f", 3);
    ASSERT_FALSE(f.ok()) << c.line;
    EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(f.status().message(), HasSubstr(c.message)) << c.line;
  }
}

TEST(FilterTest, ReadsFilesAndFindsTheFirstMatch) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/set.txt";
  std::ofstream(path) << "# a comment\n"
                         "@10.0.0.0/8\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x06/0xFF\r\n"
                         "\n"
                         "@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x00/0x00\n";
  absl::StatusOr<std::vector<Filter>> set = ReadFilterFile(path);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->size(), 2u);
  EXPECT_EQ(FirstMatch(*set, {0x0a010203, 1, 5, 80, 6}), 0u);
  EXPECT_EQ(FirstMatch(*set, {0x0a010203, 1, 5, 80, 17}), 1u);
  EXPECT_EQ(FirstMatch({set->front()}, {0x0b010203, 1, 5, 80, 6}), std::nullopt);
  std::ofstream(path) << "@10.0.0.0/8\t0.0.0.0/0\t0 : 65535\t80 : 80\t0x06/0xFF\n@bad\n";
  EXPECT_THAT(ReadFilterFile(path).status().message(), HasSubstr("set.txt:2:1: expected 5 or 6 fields"));
  EXPECT_EQ(ReadFilterFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(FilterTest, ReadsClassBenchTraces) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/trace.txt";
  // trace_generator's format: addresses as integers, then ports and protocol, then the filter drawn from;
  // its later versions write the TCP flags before the filter (4294967295: any).
  std::ofstream(path) << "167838211\t3232235777\t1024\t80\t6\t12\n"
                         "# comment\n"
                         "\n"
                         "1 2 3 4 17\r\n"
                         "5\t6\t65535\t0\t6\t4294967295\t9\n";
  absl::StatusOr<std::vector<Header>> trace = ReadTraceFile(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->size(), 3u);
  EXPECT_EQ((*trace)[0].src, 0x0a010203u);
  EXPECT_EQ((*trace)[0].dst, 0xc0a80101u);
  EXPECT_EQ((*trace)[0].sport, 1024);
  EXPECT_EQ((*trace)[0].dport, 80);
  EXPECT_EQ((*trace)[0].proto, 6);
  EXPECT_EQ((*trace)[1].proto, 17);
  EXPECT_EQ((*trace)[2].sport, 65535);
  EXPECT_EQ((*trace)[2].dport, 0);
  EXPECT_EQ((*trace)[2].proto, 6);

  EXPECT_THAT(ParseTraceLine("1 2 70000 4 6", "t", 3).status().message(),
              HasSubstr("t:3:5: bad source port '70000'"));
  EXPECT_THAT(ParseTraceLine("1 2 3 4", "t", 9).status().message(),
              HasSubstr("t:9:8: expected the protocol"));
  EXPECT_THAT(ParseTraceLine("1 x 3 4 6", "t", 1).status().message(),
              HasSubstr("t:1:3: bad destination address 'x'"));
  std::ofstream(path) << "# only a comment\n";
  EXPECT_THAT(ReadTraceFile(path).status().message(), HasSubstr("no headers"));
  EXPECT_EQ(ReadTraceFile(path + ".missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(FilterTest, RangeToPrefixesCoversExactly) {
  std::mt19937 rng(1);
  std::vector<PortRange> ranges = {{0, 0xffff}, {0, 0}, {0xffff, 0xffff}, {1, 0xfffe}, {1024, 65535}};
  for (int i = 0; i < 200; ++i) {
    uint16_t a = static_cast<uint16_t>(rng()), b = static_cast<uint16_t>(rng());
    ranges.push_back({std::min(a, b), std::max(a, b)});
  }
  for (const PortRange& r : ranges) {
    const std::vector<PortPrefix> prefixes = RangeToPrefixes(r);
    EXPECT_LE(prefixes.size(), 30u);
    for (uint32_t port = 0; port <= 0xffff; ++port) {
      int covered = 0;
      for (const PortPrefix& p : prefixes) covered += (port & p.mask) == p.value;
      ASSERT_EQ(covered, port >= r.lo && port <= r.hi ? 1 : 0) << r.lo << ".." << r.hi << " port " << port;
    }
  }
  EXPECT_EQ(RangeToPrefixes({0, 0xffff}).size(), 1u);
  EXPECT_EQ(RangeToPrefixes({1, 0xfffe}).size(), 30u);  // the worst case
}

}  // namespace
}  // namespace drsim::classbench
