// The three wires: loopback order and bound, pcap pacing and output, a real interface (a veth pair in a
// network namespace of the test's own), and the errors for bad specs.
//
// The netdev tests need root (CAP_SYS_ADMIN for the namespace, CAP_NET_RAW for the sockets) and
// iproute2's `ip`. Without them they fail, saying so: a skipped test would hide an untested wire.
#include "soft_mlx5/wire.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/pcap_file.h"

namespace drsim::soft_mlx5 {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Frame = std::vector<uint8_t>;

// An Ethernet frame of the local experimental EtherType 0x88b5 carrying `tag`, 64 bytes long.
Frame TestFrame(uint8_t tag) {
  Frame f = {0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5};
  f.resize(64, tag);
  return f;
}

bool IsTestFrame(const Frame& f) { return f.size() >= 14 && f[12] == 0x88 && f[13] == 0xb5; }

int64_t MonotonicMicros() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

int64_t RealtimeMicros() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

TEST(LoopbackWireTest, ReturnsFramesInOrderAtMostMaxAtATime) {
  auto wire = OpenWire("loopback");
  ASSERT_TRUE(wire.ok()) << wire.status();
  for (uint8_t i = 0; i < 5; ++i) (*wire)->Transmit(TestFrame(i));
  EXPECT_THAT((*wire)->Poll(2), ElementsAre(TestFrame(0), TestFrame(1)));
  EXPECT_THAT((*wire)->Poll(100), ElementsAre(TestFrame(2), TestFrame(3), TestFrame(4)));
  EXPECT_TRUE((*wire)->Poll(100).empty());
}

TEST(LoopbackWireTest, EmptySpecIsLoopback) {
  auto wire = OpenWire("");
  ASSERT_TRUE(wire.ok()) << wire.status();
  (*wire)->Transmit(TestFrame(7));
  EXPECT_THAT((*wire)->Poll(1), ElementsAre(TestFrame(7)));
}

TEST(LoopbackWireTest, HoldsAtMost65536FramesAndCountsTheDropped) {
  constexpr uint32_t kCapacity = 65536;
  ::testing::internal::CaptureStderr();
  {
    auto wire = OpenWire("loopback");
    ASSERT_TRUE(wire.ok()) << wire.status();
    for (uint32_t i = 0; i < kCapacity + 3; ++i) {
      const uint8_t bytes[4] = {uint8_t(i >> 24), uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)};
      (*wire)->Transmit(bytes);
    }
    std::vector<Frame> frames = (*wire)->Poll(SIZE_MAX);
    ASSERT_EQ(frames.size(), kCapacity);  // the 3 newest were dropped
    for (uint32_t i = 0; i < kCapacity; ++i) {
      ASSERT_EQ(frames[i], (Frame{uint8_t(i >> 24), uint8_t(i >> 16), uint8_t(i >> 8), uint8_t(i)})) << i;
    }
    // Room again once polled.
    (*wire)->Transmit(TestFrame(1));
    EXPECT_THAT((*wire)->Poll(10), ElementsAre(TestFrame(1)));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("wire 'loopback': the queue is full (65536 frames not polled)"));
  EXPECT_THAT(err, HasSubstr("wire 'loopback': 3 frame(s) lost"));
}

TEST(WireSpecTest, BadSpecsNameTheCulprit) {
  for (const char* spec : {"foo", "loopbackx", "pcap", "netdev", "tap:eth0"}) {
    auto wire = OpenWire(spec);
    ASSERT_FALSE(wire.ok()) << spec;
    EXPECT_EQ(wire.status().code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_EQ(wire.status().message(), absl::StrCat("wire '", spec, "': loopback, pcap:IN,OUT or netdev:IF"));
  }
  for (const char* spec : {"pcap:", "pcap:in.pcap", "pcap:in.pcap,", "netdev:", "netdev:a/b", "netdev:eth0:1",
                           "netdev:sixteen_chars_16"}) {
    auto wire = OpenWire(spec);
    ASSERT_FALSE(wire.ok()) << spec;
    EXPECT_EQ(wire.status().code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_THAT(wire.status().message(), HasSubstr(absl::StrCat("wire '", spec, "': "))) << spec;
    EXPECT_THAT(wire.status().message(),
                HasSubstr(absl::StartsWith(spec, "pcap") ? "pcap:IN,OUT" : "netdev:IF"))
        << spec;
  }
}

class PcapWireTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) { return absl::StrCat(::testing::TempDir(), "/", name); }
};

TEST_F(PcapWireTest, DeliversAtTheRecordedPaceAndWritesWhatLeaves) {
  // Offsets from the first frame: 0, 0, 250 ms, 500 ms; the first frame's own time is arbitrary.
  constexpr int64_t kFirst = 1700000000123456;
  const std::vector<int64_t> offsets = {0, 0, 250000, 500000};
  std::vector<Frame> in_frames;
  std::vector<int64_t> stamps;
  for (size_t i = 0; i < offsets.size(); ++i) {
    in_frames.push_back(TestFrame(static_cast<uint8_t>(i)));
    stamps.push_back(kFirst + offsets[i]);
  }
  const std::string in = Path("in.pcap"), out = Path("out.pcap");
  ASSERT_TRUE(sim::WritePcapFile(in, in_frames, stamps).ok());

  auto wire = OpenWire(absl::StrCat("pcap:", in, ",", out));
  ASSERT_TRUE(wire.ok()) << wire.status();
  // The clock starts at the first Poll, not at OpenWire.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const int64_t first_before = MonotonicMicros();
  std::vector<Frame> got = (*wire)->Poll(1);
  const int64_t first_after = MonotonicMicros();
  EXPECT_THAT(got, ElementsAre(TestFrame(0)));  // `max` holds back the second frame due at 0
  // Each frame's arrival is its due time on CLOCK_MONOTONIC: the first Poll's time plus its offset, which
  // the NIC's clock takes for it (meters see the capture's spacing).
  ASSERT_EQ((*wire)->last_arrivals().size(), 1u);
  const int64_t start_ns = (*wire)->last_arrivals()[0];
  EXPECT_GE(start_ns, first_before * 1000);
  EXPECT_LE(start_ns, first_after * 1000);
  size_t delivered = got.size();
  // Polls until every frame came: each Poll returns exactly the frames due by then. The wire's elapsed
  // time lies in [before - first_after, after - first_before]; frames due within that window may go
  // either way, all others are decided.
  while (delivered < in_frames.size() && MonotonicMicros() - first_after < 2000000) {
    const int64_t before = MonotonicMicros();
    got = (*wire)->Poll(100);
    const int64_t after = MonotonicMicros();
    const int64_t low = before - first_after, high = after - first_before;
    size_t must = delivered, may = delivered;
    while (must < offsets.size() && offsets[must] <= low) ++must;
    while (may < offsets.size() && offsets[may] <= high) ++may;
    ASSERT_GE(delivered + got.size(), must) << "frames due were held back at " << low << " us";
    ASSERT_LE(delivered + got.size(), may) << "frames came early at " << high << " us";
    ASSERT_EQ((*wire)->last_arrivals().size(), got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ((*wire)->last_arrivals()[i], start_ns + offsets[delivered] * 1000);
      EXPECT_EQ(got[i], in_frames[delivered++]);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(delivered, in_frames.size());
  EXPECT_TRUE((*wire)->Poll(100).empty());

  // What leaves is in OUT at once, while the wire is still open.
  const int64_t sent_before = RealtimeMicros();
  (*wire)->Transmit(TestFrame(0xa1));
  (*wire)->Transmit(TestFrame(0xa2));
  const int64_t sent_after = RealtimeMicros();
  auto written = sim::ReadPcapFile(out);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 2u);
  EXPECT_EQ((*written)[0].data, TestFrame(0xa1));
  EXPECT_EQ((*written)[1].data, TestFrame(0xa2));
  for (const sim::PcapFrame& f : *written) {
    EXPECT_GE(f.timestamp_us, sent_before);
    EXPECT_LE(f.timestamp_us, sent_after);
    EXPECT_EQ(f.orig_len, 64u);
  }
  // Transmitted frames do not come back: a pcap wire is not a loopback.
  EXPECT_TRUE((*wire)->Poll(100).empty());
  wire->reset();
  written = sim::ReadPcapFile(out);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->size(), 2u);
}

TEST_F(PcapWireTest, EmptyInputOnlyRecords) {
  const std::string out = Path("record.pcap");
  auto wire = OpenWire(absl::StrCat("pcap:,", out));
  ASSERT_TRUE(wire.ok()) << wire.status();
  EXPECT_TRUE((*wire)->Poll(10).empty());
  // A valid, empty capture before anything is sent.
  auto written = sim::ReadPcapFile(out);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_TRUE(written->empty());
  (*wire)->Transmit(TestFrame(3));
  written = sim::ReadPcapFile(out);
  ASSERT_TRUE(written.ok()) << written.status();
  ASSERT_EQ(written->size(), 1u);
  EXPECT_EQ((*written)[0].data, TestFrame(3));
}

TEST_F(PcapWireTest, ErrorsNameTheFile) {
  const std::string missing = Path("missing.pcap"), out = Path("o.pcap");
  auto wire = OpenWire(absl::StrCat("pcap:", missing, ",", out));
  ASSERT_FALSE(wire.ok());
  EXPECT_EQ(wire.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(wire.status().message(), HasSubstr(absl::StrCat("wire 'pcap:", missing, ",", out, "': ")));
  EXPECT_THAT(wire.status().message(), HasSubstr(missing));

  const std::string garbage = Path("garbage.pcap");
  std::ofstream(garbage) << "not a capture";
  wire = OpenWire(absl::StrCat("pcap:", garbage, ",", out));
  ASSERT_FALSE(wire.ok());
  EXPECT_EQ(wire.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wire.status().message(), HasSubstr(garbage));
  EXPECT_THAT(wire.status().message(), HasSubstr("unknown file format"));  // libpcap's own words

  const std::string bad_out = Path("no/such/dir/out.pcap");
  wire = OpenWire(absl::StrCat("pcap:,", bad_out));
  ASSERT_FALSE(wire.ok());
  EXPECT_EQ(wire.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(wire.status().message(), HasSubstr(bad_out));
  EXPECT_THAT(wire.status().message(), HasSubstr("No such file or directory"));
}

// iproute2's ip, wherever Debian put it (PATH under Bazel lacks sbin).
std::string IpCommand() {
  for (const char* path : {"/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

// A raw socket on `ifname`, for the far end of the cable.
int RawSocket(const std::string& ifname) {
  const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_ll address{};
  address.sll_family = AF_PACKET;
  address.sll_protocol = htons(ETH_P_ALL);
  address.sll_ifindex = static_cast<int>(if_nametoindex(ifname.c_str()));
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A veth pair dw0 <-> dw1, up, in a network namespace this thread enters for the test and leaves after;
// the namespace and the pair vanish with their last socket. Nothing outside it is touched.
class NetdevWireTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(geteuid(), 0u) << "the netdev wire test makes a network namespace and raw sockets: run it as "
                                "root (it does not skip)";
    ip_ = IpCommand();
    ASSERT_FALSE(ip_.empty()) << "iproute2's ip is missing: run scripts/setup";
    outside_ = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(outside_, 0) << std::strerror(errno);
    ASSERT_EQ(unshare(CLONE_NEWNET), 0) << "unshare(CLONE_NEWNET): " << std::strerror(errno);
    // No IPv6 on the new links: their router solicitations and MLD reports would be noise on the cable.
    std::ofstream("/proc/sys/net/ipv6/conf/default/disable_ipv6") << "1\n";
    Ip("link add dw0 type veth peer name dw1");
    Ip("link set dw0 up");
    Ip("link set dw1 up");
  }

  void TearDown() override {
    if (outside_ >= 0) {
      EXPECT_EQ(setns(outside_, CLONE_NEWNET), 0) << std::strerror(errno);
      close(outside_);
    }
  }

  void Ip(const std::string& args) {
    const std::string command = absl::StrCat(ip_, " ", args);
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }

  std::string ip_;
  int outside_ = -1;
};

// The first test frame `fd` receives within `timeout_ms`, or an empty frame.
Frame ReceiveTestFrame(int fd, int timeout_ms) {
  const int64_t deadline = MonotonicMicros() + timeout_ms * 1000;
  Frame buffer(65536);
  for (int64_t now = MonotonicMicros(); now < deadline; now = MonotonicMicros()) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>((deadline - now) / 1000) + 1) <= 0) continue;
    sockaddr_ll from{};
    socklen_t from_len = sizeof(from);
    const ssize_t n = recvfrom(fd, buffer.data(), buffer.size(), MSG_DONTWAIT,
                               reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n <= 0 || from.sll_pkttype == PACKET_OUTGOING) continue;
    Frame f(buffer.begin(), buffer.begin() + n);
    if (IsTestFrame(f)) return f;
  }
  return {};
}

TEST_F(NetdevWireTest, SendsToThePeerAndReceivesFromIt) {
  auto wire = OpenWire("netdev:dw0");
  ASSERT_TRUE(wire.ok()) << wire.status();
  const int peer = RawSocket("dw1");
  ASSERT_GE(peer, 0) << std::strerror(errno);

  // Wire -> peer.
  (*wire)->Transmit(TestFrame(0x11));
  EXPECT_EQ(ReceiveTestFrame(peer, 2000), TestFrame(0x11));

  // Another socket's frame leaving by dw0 is outgoing, not arriving: the wire does not take it in.
  const int beside = RawSocket("dw0");
  ASSERT_GE(beside, 0) << std::strerror(errno);
  const Frame leaving = TestFrame(0x12);
  ASSERT_EQ(send(beside, leaving.data(), leaving.size(), 0), static_cast<ssize_t>(leaving.size()))
      << std::strerror(errno);
  EXPECT_EQ(ReceiveTestFrame(peer, 2000), leaving);
  close(beside);

  // Peer -> wire; neither the wire's own transmission nor the other socket's is among what it receives.
  const Frame reply = TestFrame(0x22);
  ASSERT_EQ(send(peer, reply.data(), reply.size(), 0), static_cast<ssize_t>(reply.size()))
      << std::strerror(errno);
  std::vector<Frame> received;
  const int64_t deadline = MonotonicMicros() + 2000000;
  while (received.empty() && MonotonicMicros() < deadline) {
    for (Frame& f : (*wire)->Poll(64)) {
      if (IsTestFrame(f)) received.push_back(std::move(f));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_THAT(received, ElementsAre(reply));

  // Poll returns at most `max`.
  for (uint8_t tag = 0x30; tag < 0x34; ++tag) {
    const Frame f = TestFrame(tag);
    ASSERT_EQ(send(peer, f.data(), f.size(), 0), static_cast<ssize_t>(f.size()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::vector<Frame> first = (*wire)->Poll(2), rest = (*wire)->Poll(64);
  EXPECT_EQ(first.size(), 2u);
  first.insert(first.end(), rest.begin(), rest.end());
  EXPECT_THAT(first, ElementsAre(TestFrame(0x30), TestFrame(0x31), TestFrame(0x32), TestFrame(0x33)));
  close(peer);
}

TEST_F(NetdevWireTest, MissingInterfaceIsNamed) {
  auto wire = OpenWire("netdev:dw9");
  ASSERT_FALSE(wire.ok());
  EXPECT_THAT(wire.status().message(), HasSubstr("wire 'netdev:dw9': interface \"dw9\""));
  EXPECT_THAT(wire.status().message(), HasSubstr("No such device"));
}

}  // namespace
}  // namespace drsim::soft_mlx5
