#include "sim/meter.h"

#include <algorithm>
#include <vector>

#include "gtest/gtest.h"

namespace drsim::sim {
namespace {

// The rdma-core test's meter: valid, bucket_overflow, start green, cir_m 1 cir_e 6 (15.625 MB/s).
MeterParams TestParams() {
  MeterParams p;
  p.valid = true;
  p.bucket_overflow = true;
  p.start_color = MeterColor::kGreen;
  p.cir_mantissa = 1;
  p.cir_exponent = 6;
  p.cbs_mantissa = 1;
  p.cbs_exponent = 12;  // 4096 bytes
  p.ebs_mantissa = 1;
  p.ebs_exponent = 11;  // 2048 bytes
  return p;
}

TEST(MeterParamsTest, PrmLayoutRoundTrip) {
  MeterParams p = TestParams();
  p.meter_mode = 1;
  p.eir_mantissa = 7;
  p.eir_exponent = 9;
  uint8_t b[32];
  p.Serialize(b);
  EXPECT_EQ(b[0], 0x80 | 0x40 | 2 << 4 | 1);
  EXPECT_EQ(b[10], 6);
  EXPECT_EQ(b[11], 1);
  absl::StatusOr<MeterParams> back = MeterParams::Parse(b);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->eir_mantissa, 7);
  EXPECT_EQ(back->meter_mode, 1);
  EXPECT_DOUBLE_EQ(back->cir_per_second(), 15.625e6);  // the test's "15.625MBps"
  EXPECT_DOUBLE_EQ(back->cbs(), 4096);
  std::vector<uint8_t> big(33);
  EXPECT_EQ(MeterParams::Parse(big).status().code(), absl::StatusCode::kInvalidArgument);
  b[0] |= 0x30;
  EXPECT_EQ(MeterParams::Parse(b).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TokenMeterTest, SrTcmGreenThenYellowThenRedAndRefill) {
  TokenMeter m(TestParams());
  // A burst at time 0: 4 x 1000 bytes green (CBS 4096), 2 yellow (EBS 2048), then red.
  std::vector<MeterColor> colors;
  for (int i = 0; i < 8; ++i) colors.push_back(m.Mark(0, 1014, 1000));
  EXPECT_EQ(colors, (std::vector<MeterColor>{MeterColor::kGreen, MeterColor::kGreen, MeterColor::kGreen,
                                             MeterColor::kGreen, MeterColor::kYellow, MeterColor::kYellow,
                                             MeterColor::kRed, MeterColor::kRed}));
  // 64 us later 1000 bytes have accrued at 15.625 MB/s.
  EXPECT_EQ(m.Mark(64000, 1014, 1000), MeterColor::kGreen);
  EXPECT_EQ(m.Mark(64000, 1014, 1000), MeterColor::kRed);
  // After a long pause both buckets are full again (the committed overflow refills the excess bucket).
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.Mark(10'000'000, 1014, 1000), MeterColor::kGreen);
  EXPECT_EQ(m.Mark(10'000'000, 1014, 1000), MeterColor::kYellow);
}

TEST(TokenMeterTest, SustainedRateSplitsAtCir) {
  MeterParams p = TestParams();
  TokenMeter m(p);
  // 1000-byte packets at 31.25 MB/s (twice CIR) for a second: about half green.
  int green = 0, total = 0;
  for (uint64_t t = 0; t < 1'000'000'000; t += 32'000, ++total)
    green += m.Mark(t, 1014, 1000) == MeterColor::kGreen;
  EXPECT_NEAR(static_cast<double>(green) / total, 0.5, 0.01);
}

TEST(TokenMeterTest, TrTcmAndColorAwareAndPackets) {
  MeterParams p = TestParams();
  p.both_buckets_on_green = true;
  p.ebs_exponent = 13;  // peak bucket 8192 bytes
  TokenMeter m(p);
  std::vector<MeterColor> colors;
  for (int i = 0; i < 10; ++i) colors.push_back(m.Mark(0, 1014, 1000));
  // Green takes from both buckets: 4 green, then 4 yellow (peak bucket 8192 - 4000), then red.
  EXPECT_EQ(std::count(colors.begin(), colors.end(), MeterColor::kGreen), 4);
  EXPECT_EQ(std::count(colors.begin(), colors.end(), MeterColor::kYellow), 4);
  EXPECT_EQ(colors.back(), MeterColor::kRed);

  MeterParams aware = TestParams();
  aware.start_color = MeterColor::kYellow;  // never green
  TokenMeter y(aware);
  EXPECT_EQ(y.Mark(0, 100, 86), MeterColor::kYellow);

  MeterParams packets = TestParams();
  packets.meter_mode = 3;
  packets.cbs_mantissa = 3;
  packets.cbs_exponent = 0;  // 3 packets
  packets.ebs_mantissa = 0;
  TokenMeter pk(packets);
  EXPECT_EQ(pk.Mark(0, 9000, 8986), MeterColor::kGreen);
  EXPECT_EQ(pk.Mark(0, 9000, 8986), MeterColor::kGreen);
  EXPECT_EQ(pk.Mark(0, 9000, 8986), MeterColor::kGreen);
  EXPECT_EQ(pk.Mark(0, 60, 46), MeterColor::kRed);

  TokenMeter off(TestParams(), /*active=*/false);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(off.Mark(0, 1500, 1486), MeterColor::kGreen);
}

TEST(TokenMeterTest, ModifyChangesOnlySelectedFields) {
  TokenMeter m(TestParams());
  MeterParams faster = TestParams();
  faster.cir_exponent = 5;  // double the rate
  faster.cbs_exponent = 2;
  m.Modify(faster, true, kMeterSelectCir);
  EXPECT_EQ(m.params().cir_exponent, 5);
  EXPECT_EQ(m.params().cbs_exponent, 12);  // not selected
  m.Modify(faster, false, kMeterSelectActive);
  EXPECT_FALSE(m.active());
}

}  // namespace
}  // namespace drsim::sim
