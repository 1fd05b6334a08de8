#include "hw/net_addr.h"

#include <arpa/inet.h>

#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

// inet_pton's reading of `text`, the reference Ipv4Address::Parse follows.
bool InetPton4(const std::string& text, uint32_t* value) {
  in_addr addr;
  if (inet_pton(AF_INET, text.c_str(), &addr) != 1) return false;
  *value = ntohl(addr.s_addr);
  return true;
}

void ExpectAsInetPton(const std::string& text) {
  uint32_t want = 0;
  const bool valid = InetPton4(text, &want);
  absl::StatusOr<Ipv4Address> got = Ipv4Address::Parse(text);
  ASSERT_EQ(got.ok(), valid) << "\"" << text << "\"";
  if (valid) {
    EXPECT_EQ(got->value, want) << "\"" << text << "\"";
  }
}

TEST(Ipv4AddressTest, ParsesDottedQuads) {
  EXPECT_EQ(Ipv4Address::Parse("10.1.2.3")->value, 0x0a010203u);
  EXPECT_EQ(Ipv4Address::Parse("0.0.0.0")->value, 0u);
  EXPECT_EQ(Ipv4Address::Parse("255.255.255.255")->value, 0xffffffffu);
  EXPECT_EQ(Ipv4Address::Parse("192.168.100.7")->ToString(), "192.168.100.7");
}

TEST(Ipv4AddressTest, RejectsWhatInetPtonRejects) {
  for (const char* text :
       {"",          ".",         "1.2.3",      "1.2.3.4.",  ".1.2.3.4", "1..2.3",    "1.2.3.4.5",
        "256.1.1.1", "1.2.3.256", "1.2.3.1000", "01.2.3.4",  "1.2.3.04", "1.2.3.00",  "1.2.3.4 ",
        " 1.2.3.4",  "1.2.3.-4",  "1.2.3.4x",   "0x1.2.3.4", "1.2.3",    "1234.1.1.1"}) {
    EXPECT_FALSE(Ipv4Address::Parse(text).ok()) << "\"" << text << "\"";
    ExpectAsInetPton(text);
  }
}

TEST(Ipv4AddressTest, AgreesWithInetPtonOnRandomText) {
  std::mt19937 rng(45);
  const std::string alphabet = "0123456789..x ";
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const size_t n = rng() % 17;
    for (size_t j = 0; j < n; ++j) text += alphabet[rng() % alphabet.size()];
    ExpectAsInetPton(text);
  }
  for (int i = 0; i < 20000; ++i) {  // well-formed quads, parts of one to three digits up to 299
    std::string text;
    for (int part = 0; part < 4; ++part) text += (part ? "." : "") + std::to_string(rng() % 300);
    ExpectAsInetPton(text);
  }
}

}  // namespace
}  // namespace drsim::hw
