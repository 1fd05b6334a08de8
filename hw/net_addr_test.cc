#include "hw/net_addr.h"

#include <arpa/inet.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
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

// Up to `max_length` - 1 bytes drawn from `alphabet`.
std::string RandomText(std::mt19937& rng, absl::string_view alphabet, size_t max_length) {
  std::string text;
  const size_t n = rng() % max_length;
  for (size_t j = 0; j < n; ++j) text += alphabet[rng() % alphabet.size()];
  return text;
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
  for (int i = 0; i < 20000; ++i) ExpectAsInetPton(RandomText(rng, alphabet, 17));
  for (int i = 0; i < 20000; ++i) {  // well-formed quads, parts of one to three digits up to 299
    std::string text;
    for (int part = 0; part < 4; ++part) text += (part ? "." : "") + std::to_string(rng() % 300);
    ExpectAsInetPton(text);
  }
}

// inet_pton's reading of `text` as IPv6 against Ipv6Address::Parse's.
void ExpectAsInetPton6(const std::string& text) {
  std::array<uint8_t, 16> want{};
  const bool valid = inet_pton(AF_INET6, text.c_str(), want.data()) == 1;
  absl::StatusOr<Ipv6Address> got = Ipv6Address::Parse(text);
  ASSERT_EQ(got.ok(), valid) << "\"" << text << "\"";
  if (valid) {
    EXPECT_EQ(got->bytes, want) << "\"" << text << "\"";
  } else {
    EXPECT_NE(std::string(got.status().message()).find(text), std::string::npos);
  }
}

TEST(Ipv6AddressTest, ParsesTextForms) {
  EXPECT_EQ(Ipv6Address::Parse("2001:db8::1")->ToString(), "2001:db8::1");
  EXPECT_EQ(Ipv6Address::Parse("::")->bytes, (std::array<uint8_t, 16>{}));
  EXPECT_EQ(Ipv6Address::Parse("::ffff:10.1.2.3")->word(3), 0x0a010203u);
  EXPECT_EQ(Ipv6Address::Parse("1:2:3:4:5:6:7:8")->word(0), 0x00010002u);
  EXPECT_EQ(Ipv6Address::Parse("FFFF::")->word(0), 0xffff0000u);
}

TEST(Ipv6AddressTest, RejectsWhatInetPtonRejects) {
  for (const char* text : {"",
                           ":",
                           ":::",
                           "1",
                           "1:",
                           ":1",
                           "1:::2",
                           "1::2::3",
                           "12345::",
                           "1:2:3:4:5:6:7:8:9",
                           "1:2:3:4:5:6:7:8::",
                           "::1:2:3:4:5:6:7:8",
                           "1:2:3:4:5:6:7",
                           "g::",
                           "::1 ",
                           " ::1",
                           "1::2:",
                           "::ffff:1.2.3",
                           "::ffff:1.2.3.4:5",
                           "1.2.3.4"}) {
    EXPECT_FALSE(Ipv6Address::Parse(text).ok()) << "\"" << text << "\"";
    ExpectAsInetPton6(text);
  }
  for (const char* text : {"1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1::8", "0000:0:00:000::", "::1.2.3.4",
                           "1:2:3:4:5:6:1.2.3.4", "a:B:c:D:e:F:0:1"}) {
    EXPECT_TRUE(Ipv6Address::Parse(text).ok()) << "\"" << text << "\"";
    ExpectAsInetPton6(text);
  }
}

TEST(Ipv6AddressTest, AgreesWithInetPtonOnRandomText) {
  std::mt19937 rng(46);
  const std::string alphabet = "0123456789abcdefABCDEFg::::..";
  for (int i = 0; i < 50000; ++i) ExpectAsInetPton6(RandomText(rng, alphabet, 24));
  for (int i = 0; i < 50000; ++i) {  // inet_ntop's forms, some runs of zero groups, some groups of 5-6 digits
    std::array<uint8_t, 16> bytes{};
    for (uint8_t& b : bytes) b = rng() % 3 == 0 ? 0 : static_cast<uint8_t>(rng());
    char buf[INET6_ADDRSTRLEN];
    ASSERT_NE(inet_ntop(AF_INET6, bytes.data(), buf, sizeof buf), nullptr);
    std::string text = buf;
    const size_t digit = text.find_first_of("0123456789abcdef");
    if (rng() % 4 == 0 && digit != std::string::npos) text.insert(digit, rng() % 2 ? "0" : "00");
    ExpectAsInetPton6(text);
  }
}

}  // namespace
}  // namespace drsim::hw
