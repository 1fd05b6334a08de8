#include "soft_mlx5/wire.h"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "sim/pcap_file.h"

namespace drsim::soft_mlx5 {
namespace {

constexpr absl::string_view kUsage = "loopback, pcap:IN,OUT or netdev:IF";

// How many frames the loopback wire holds between polls; one more is dropped.
constexpr size_t kLoopbackCapacity = 65536;

// The largest frame the netdev wire reads: a GRO-merged frame can exceed the MTU by far.
constexpr size_t kNetdevFrameMax = sim::kPcapSnapLen;

int64_t NowMicros(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// `status` with "wire 'SPEC': " before its message, so every error names the spec it came from.
absl::Status InSpec(absl::string_view spec, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("wire '", spec, "': ", status.message()));
}

absl::Status ErrnoError(absl::string_view spec, int error, absl::string_view what) {
  return absl::ErrnoToStatus(error, absl::StrCat("wire '", spec, "': ", what));
}

// Counts the frames a wire loses. Transmit has no way to report a failure, so the first loss says why
// on stderr, and the total is printed when the wire closes.
class LossCounter {
 public:
  explicit LossCounter(std::string spec) : spec_(std::move(spec)) {}
  LossCounter(const LossCounter&) = delete;
  LossCounter& operator=(const LossCounter&) = delete;
  ~LossCounter() {
    if (lost_ > 0) std::fprintf(stderr, "drsim: wire '%s': %llu frame(s) lost\n", spec_.c_str(), lost_);
  }

  void Lose(absl::string_view why) {
    if (lost_++ == 0) {
      std::fprintf(stderr, "drsim: wire '%s': %.*s; losing frames (the count is printed at exit)\n",
                   spec_.c_str(), static_cast<int>(why.size()), why.data());
    }
  }

 private:
  std::string spec_;
  unsigned long long lost_ = 0;
};

// What leaves comes back, in order; a full queue drops the newest frame (tail drop, as a NIC's queue).
class LoopbackWire : public Wire {
 public:
  using Wire::Transmit;
  void Transmit(absl::Span<const uint8_t> frame) override {
    if (queue_.size() >= kLoopbackCapacity) {
      losses_.Lose(absl::StrFormat("the queue is full (%d frames not polled)", kLoopbackCapacity));
      return;
    }
    queue_.emplace_back(frame.begin(), frame.end());
  }
  void Transmit(std::vector<uint8_t>&& frame) override {
    if (queue_.size() >= kLoopbackCapacity) {
      losses_.Lose(absl::StrFormat("the queue is full (%d frames not polled)", kLoopbackCapacity));
      return;
    }
    queue_.push_back(std::move(frame));
  }

  std::vector<std::vector<uint8_t>> Poll(size_t max) override {
    std::vector<std::vector<uint8_t>> frames;
    while (!queue_.empty() && frames.size() < max) {
      frames.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    return frames;
  }

 private:
  std::deque<std::vector<uint8_t>> queue_;
  LossCounter losses_{"loopback"};
};

struct PcapCloser {
  void operator()(pcap_t* p) const { pcap_close(p); }
};
struct DumperCloser {
  void operator()(pcap_dumper_t* d) const { pcap_dump_close(d); }
};

// Frames of a capture arrive at their recorded pace; what leaves is appended to another capture.
class PcapWire : public Wire {
 public:
  using Wire::Transmit;
  static absl::StatusOr<std::unique_ptr<Wire>> Open(absl::string_view spec, const std::string& in,
                                                    const std::string& out) {
    auto wire = std::unique_ptr<PcapWire>(new PcapWire(spec));
    if (!in.empty()) {
      absl::StatusOr<std::vector<sim::PcapFrame>> frames = sim::ReadPcapFile(in);
      if (!frames.ok()) return InSpec(spec, frames.status());
      wire->arrivals_ = *std::move(frames);
    }
    wire->dead_.reset(
        pcap_open_dead_with_tstamp_precision(DLT_EN10MB, sim::kPcapSnapLen, PCAP_TSTAMP_PRECISION_MICRO));
    if (!wire->dead_)
      return absl::ResourceExhaustedError(absl::StrCat("wire '", spec, "': pcap_open_dead failed"));
    // Opened here rather than by pcap_dump_open so that errno names the failure and "-" is a file name.
    FILE* file = std::fopen(out.c_str(), "wb");
    if (!file) return ErrnoError(spec, errno, absl::StrFormat("cannot create pcap file \"%s\"", out));
    wire->dumper_.reset(pcap_dump_fopen(wire->dead_.get(), file));  // on failure libpcap has closed `file`
    if (!wire->dumper_) {
      return absl::UnavailableError(absl::StrFormat("wire '%s': cannot write pcap file \"%s\": %s", spec, out,
                                                    pcap_geterr(wire->dead_.get())));
    }
    // The file header alone, so a reader sees a valid (empty) capture from the start.
    if (pcap_dump_flush(wire->dumper_.get()) != 0) {
      return ErrnoError(spec, errno, absl::StrFormat("cannot write pcap file \"%s\"", out));
    }
    wire->out_ = out;
    return std::unique_ptr<Wire>(std::move(wire));
  }

  // Written with the wall-clock time, and flushed at once: a reader (or the program's exit) never sees
  // half a frame, and nothing waits in a buffer.
  void Transmit(absl::Span<const uint8_t> frame) override {
    if (frame.size() > sim::kPcapSnapLen) {
      losses_.Lose(
          absl::StrFormat("a %d-byte frame exceeds the snapshot length %d", frame.size(), sim::kPcapSnapLen));
      return;
    }
    const int64_t now_us = NowMicros(CLOCK_REALTIME);
    pcap_pkthdr header{};
    header.ts.tv_sec = static_cast<time_t>(now_us / 1000000);
    header.ts.tv_usec = static_cast<suseconds_t>(now_us % 1000000);
    header.caplen = header.len = static_cast<uint32_t>(frame.size());
    pcap_dump(reinterpret_cast<u_char*>(dumper_.get()), &header, frame.data());
    if (pcap_dump_flush(dumper_.get()) != 0) {
      losses_.Lose(absl::StrFormat("cannot write pcap file \"%s\": %s", out_, std::strerror(errno)));
    }
  }

  // Frame i is due once (its timestamp - the first frame's) has passed since the first Poll.
  std::vector<std::vector<uint8_t>> Poll(size_t max) override {
    std::vector<std::vector<uint8_t>> frames;
    due_ns_.clear();
    if (next_ >= arrivals_.size()) return frames;
    const int64_t now_us = NowMicros(CLOCK_MONOTONIC);
    if (start_us_ < 0) start_us_ = now_us;
    const int64_t elapsed_us = now_us - start_us_;
    const int64_t first_us = arrivals_.front().timestamp_us;
    while (next_ < arrivals_.size() && frames.size() < max &&
           arrivals_[next_].timestamp_us - first_us <= elapsed_us) {
      frames.push_back(std::move(arrivals_[next_].data));
      due_ns_.push_back((start_us_ + arrivals_[next_].timestamp_us - first_us) * 1000);
      ++next_;
    }
    return frames;
  }

  absl::Span<const int64_t> last_arrivals() const override { return due_ns_; }

 private:
  explicit PcapWire(absl::string_view spec) : losses_(std::string(spec)) {}

  std::vector<sim::PcapFrame> arrivals_;
  size_t next_ = 0;              // the first frame not yet delivered
  std::vector<int64_t> due_ns_;  // the due times of the last Poll's frames
  int64_t start_us_ = -1;        // CLOCK_MONOTONIC at the first Poll
  std::unique_ptr<pcap_t, PcapCloser> dead_;
  std::unique_ptr<pcap_dumper_t, DumperCloser> dumper_;  // declared after dead_: closed before it
  std::string out_;
  LossCounter losses_;
};

// A Linux interface through an AF_PACKET socket: the NIC's uplink is cabled to it.
class NetdevWire : public Wire {
 public:
  using Wire::Transmit;
  static absl::StatusOr<std::unique_ptr<Wire>> Open(absl::string_view spec, const std::string& ifname) {
    const unsigned int ifindex = if_nametoindex(ifname.c_str());
    if (ifindex == 0) return ErrnoError(spec, errno, absl::StrFormat("interface \"%s\"", ifname));
    // Protocol 0 receives nothing until bind names the interface: no frame of another interface slips in.
    const int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      return ErrnoError(spec, errno,
                        absl::StrFormat("interface \"%s\": AF_PACKET socket (needs CAP_NET_RAW)", ifname));
    }
    auto wire = std::unique_ptr<NetdevWire>(new NetdevWire(spec, fd, ifname));
    sockaddr_ll address{};
    address.sll_family = AF_PACKET;
    address.sll_protocol = htons(ETH_P_ALL);
    address.sll_ifindex = static_cast<int>(ifindex);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      return ErrnoError(spec, errno, absl::StrFormat("interface \"%s\": bind", ifname));
    }
    // Frames for any MAC: the NIC behind the wire has MACs of its own (the PF's and the VFs'). The
    // membership ends with the socket.
    packet_mreq promisc{};
    promisc.mr_ifindex = static_cast<int>(ifindex);
    promisc.mr_type = PACKET_MR_PROMISC;
    if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &promisc, sizeof(promisc)) != 0) {
      return ErrnoError(spec, errno, absl::StrFormat("interface \"%s\": promiscuous mode", ifname));
    }
    return std::unique_ptr<Wire>(std::move(wire));
  }

  ~NetdevWire() override { close(fd_); }

  void Transmit(absl::Span<const uint8_t> frame) override {
    if (send(fd_, frame.data(), frame.size(), MSG_DONTWAIT) < 0) {
      losses_.Lose(absl::StrFormat("interface \"%s\": send: %s", ifname_, std::strerror(errno)));
    }
  }

  // Skips PACKET_OUTGOING: frames leaving IF (the kernel's, another program's) are not arrivals. The
  // kernel keeps the socket's own transmissions from it already.
  std::vector<std::vector<uint8_t>> Poll(size_t max) override {
    std::vector<std::vector<uint8_t>> frames;
    while (frames.size() < max) {
      sockaddr_ll from{};
      socklen_t from_len = sizeof(from);
      const ssize_t n = recvfrom(fd_, buffer_.data(), buffer_.size(), MSG_DONTWAIT | MSG_TRUNC,
                                 reinterpret_cast<sockaddr*>(&from), &from_len);
      if (n < 0) {
        if (errno == EINTR) continue;
        // EAGAIN: nothing more for now. Anything else (the interface went away) is a loss to report.
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          losses_.Lose(absl::StrFormat("interface \"%s\": recv: %s", ifname_, std::strerror(errno)));
        }
        break;
      }
      if (from.sll_pkttype == PACKET_OUTGOING) continue;
      if (static_cast<size_t>(n) > buffer_.size()) {
        losses_.Lose(absl::StrFormat("interface \"%s\": a %d-byte frame exceeds %d bytes", ifname_, n,
                                     buffer_.size()));
        continue;
      }
      frames.emplace_back(buffer_.begin(), buffer_.begin() + n);
    }
    return frames;
  }

 private:
  NetdevWire(absl::string_view spec, int fd, std::string ifname)
      : fd_(fd), ifname_(std::move(ifname)), buffer_(kNetdevFrameMax), losses_(std::string(spec)) {}

  int fd_;
  std::string ifname_;
  std::vector<uint8_t> buffer_;
  LossCounter losses_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Wire>> OpenWire(absl::string_view spec) {
  if (spec.empty() || spec == "loopback") return std::unique_ptr<Wire>(std::make_unique<LoopbackWire>());
  if (absl::StartsWith(spec, "pcap:")) {
    const absl::string_view files = spec.substr(5);
    const size_t comma = files.find(',');
    if (comma == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("wire '", spec, "': pcap:IN,OUT needs a comma between the input and output files"));
    }
    const std::string in(files.substr(0, comma)), out(files.substr(comma + 1));
    if (out.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("wire '", spec, "': pcap:IN,OUT needs an output file"));
    }
    return PcapWire::Open(spec, in, out);
  }
  if (absl::StartsWith(spec, "netdev:")) {
    const std::string ifname(spec.substr(7));
    if (ifname.empty() || ifname.size() >= IFNAMSIZ || ifname.find_first_of("/ \t\n:") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrFormat("wire '%s': netdev:IF needs an interface name of 1 to %d characters without '/', "
                          "':' or spaces",
                          spec, IFNAMSIZ - 1));
    }
    return NetdevWire::Open(spec, ifname);
  }
  return absl::InvalidArgumentError(absl::StrCat("wire '", spec, "': ", kUsage));
}

}  // namespace drsim::soft_mlx5
