#include "sim/pcap_file.h"

#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/frame_builder.h"

namespace drsim::sim {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::vector<uint8_t> SampleFrame(uint16_t sport, size_t payload) {
  FrameSpec s;
  s.dmac = *hw::MacAddress::Parse("02:00:00:00:00:01");
  s.smac = *hw::MacAddress::Parse("02:00:00:00:00:02");
  s.ipv4_src = *hw::Ipv4Address::Parse("10.0.0.1");
  s.ipv4_dst = *hw::Ipv4Address::Parse("10.0.0.2");
  s.sport = sport;
  s.dport = 4000;
  s.payload_len = payload;
  return BuildFrame(s);
}

// Writes a capture with libpcap directly, for link types and precisions WritePcapFile does not make.
void WriteWithLibpcap(const std::string& path, int link_type, unsigned precision, const pcap_pkthdr& header,
                      const std::vector<uint8_t>& data) {
  pcap_t* dead = pcap_open_dead_with_tstamp_precision(link_type, kPcapSnapLen, precision);
  ASSERT_NE(dead, nullptr);
  pcap_dumper_t* dumper = pcap_dump_open(dead, path.c_str());
  ASSERT_NE(dumper, nullptr) << pcap_geterr(dead);
  pcap_dump(reinterpret_cast<u_char*>(dumper), &header, data.data());
  pcap_dump_close(dumper);
  pcap_close(dead);
}

TEST(PcapFileTest, RoundTripKeepsBytesTimestampsAndLengths) {
  const std::string path = TempPath("round_trip.pcap");
  std::vector<PcapFrame> frames(3);
  frames[0] = {SampleFrame(1000, 0), 60, 1700000000123456};
  frames[1] = {SampleFrame(1001, 1400), 0, 1700000000999999};  // orig_len 0: written as the size
  frames[2] = {SampleFrame(1002, 10), 9000, 5};                // a snapped frame: orig_len > size
  ASSERT_TRUE(WritePcapFile(path, frames).ok());

  absl::StatusOr<std::vector<PcapFrame>> back = ReadPcapFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*back)[i].data, frames[i].data) << i;
    EXPECT_EQ((*back)[i].timestamp_us, frames[i].timestamp_us) << i;
  }
  EXPECT_EQ((*back)[0].orig_len, 60u);
  EXPECT_EQ((*back)[1].orig_len, frames[1].data.size());
  EXPECT_EQ((*back)[2].orig_len, 9000u);
}

TEST(PcapFileTest, PlainFramesWithAndWithoutTimestamps) {
  const std::string path = TempPath("plain.pcap");
  const std::vector<std::vector<uint8_t>> frames = {SampleFrame(1, 0), SampleFrame(2, 100)};
  ASSERT_TRUE(WritePcapFile(path, frames).ok());
  absl::StatusOr<std::vector<PcapFrame>> back = ReadPcapFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].data, frames[1]);
  EXPECT_EQ((*back)[1].orig_len, frames[1].size());
  EXPECT_EQ((*back)[0].timestamp_us, 0);

  const std::vector<int64_t> stamps = {10, 2000001};
  ASSERT_TRUE(WritePcapFile(path, frames, stamps).ok());
  back = ReadPcapFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*back)[0].timestamp_us, 10);
  EXPECT_EQ((*back)[1].timestamp_us, 2000001);
}

TEST(PcapFileTest, EmptyCapture) {
  const std::string path = TempPath("empty.pcap");
  ASSERT_TRUE(WritePcapFile(path, std::vector<PcapFrame>{}).ok());
  absl::StatusOr<std::vector<PcapFrame>> back = ReadPcapFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->empty());
}

TEST(PcapFileTest, NanosecondFilesAreReadInMicroseconds) {
  const std::string path = TempPath("nano.pcap");
  pcap_pkthdr header{};
  header.ts.tv_sec = 7;
  header.ts.tv_usec = 123456789;  // nanoseconds in a nanosecond-precision file
  const std::vector<uint8_t> frame = SampleFrame(3, 0);
  header.caplen = header.len = frame.size();
  WriteWithLibpcap(path, DLT_EN10MB, PCAP_TSTAMP_PRECISION_NANO, header, frame);
  absl::StatusOr<std::vector<PcapFrame>> back = ReadPcapFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].timestamp_us, 7123456);
}

TEST(PcapFileTest, WriteArgumentErrorsNameTheFrame) {
  const std::string path = TempPath("bad_args.pcap");
  absl::Status s = WritePcapFile(path, {SampleFrame(1, 0)}, std::vector<int64_t>{1, 2});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("2 timestamps for 1 frames"));

  std::vector<PcapFrame> frames(2);
  frames[1].timestamp_us = -1;
  s = WritePcapFile(path, frames);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad_args.pcap\", frame 1: negative timestamp"));

  frames[1].timestamp_us = 0;
  frames[1].data.resize(kPcapSnapLen + 1);
  s = WritePcapFile(path, frames);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("frame 1: 262145 bytes exceed the snapshot length"));
}

TEST(PcapFileTest, WriteErrorsNameTheFile) {
  absl::Status s = WritePcapFile(TempPath("no/such/dir/x.pcap"), {SampleFrame(1, 0)});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("no/such/dir/x.pcap"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("No such file or directory"));

  // /dev/full accepts the open and fails the writes with ENOSPC.
  s = WritePcapFile("/dev/full", {SampleFrame(1, 0)});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("cannot write pcap file \"/dev/full\""));
}

TEST(PcapFileTest, ReadErrorsNameTheFile) {
  absl::StatusOr<std::vector<PcapFrame>> r = ReadPcapFile(TempPath("missing.pcap"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("missing.pcap"));

  const std::string text = TempPath("not_a_capture.txt");
  std::ofstream(text) << "this is not a capture file, just some text\n";
  r = ReadPcapFile(text);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("cannot read pcap file \"" + text + "\": "));
}

TEST(PcapFileTest, NonEthernetLinkTypeIsNamed) {
  const std::string path = TempPath("raw_ip.pcap");
  pcap_pkthdr header{};
  const std::vector<uint8_t> packet(20, 0x45);
  header.caplen = header.len = packet.size();
  WriteWithLibpcap(path, DLT_RAW, PCAP_TSTAMP_PRECISION_MICRO, header, packet);
  absl::StatusOr<std::vector<PcapFrame>> r = ReadPcapFile(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("raw_ip.pcap\" has link type RAW"));
}

TEST(PcapFileTest, TruncatedFileNamesTheFrame) {
  const std::string path = TempPath("truncated.pcap");
  const std::vector<std::vector<uint8_t>> frames = {SampleFrame(1, 0), SampleFrame(2, 0), SampleFrame(3, 0)};
  ASSERT_TRUE(WritePcapFile(path, frames).ok());
  // 24-byte file header, then 16-byte record headers: cut the third frame's bytes short.
  const off_t full = 24 + 3 * 16 + static_cast<off_t>(frames[0].size() * 3);
  ASSERT_EQ(truncate(path.c_str(), full - 10), 0);
  absl::StatusOr<std::vector<PcapFrame>> r = ReadPcapFile(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("truncated.pcap\", frame 2: "));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("truncated"));  // libpcap's own words
}

}  // namespace
}  // namespace drsim::sim
