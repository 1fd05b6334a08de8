#include "sim/pcap_file.h"

#include <pcap/pcap.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace drsim::sim {
namespace {

constexpr int64_t kMicrosPerSecond = 1000000;

struct PcapCloser {
  void operator()(pcap_t* p) const { pcap_close(p); }
};
struct DumperCloser {
  void operator()(pcap_dumper_t* d) const { pcap_dump_close(d); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;
using DumperHandle = std::unique_ptr<pcap_dumper_t, DumperCloser>;

absl::Status ErrnoStatus(int error, const std::string& what) {
  return absl::Status(absl::ErrnoToStatusCode(error), absl::StrFormat("%s: %s", what, std::strerror(error)));
}

absl::Status CheckFrames(const std::string& path, absl::Span<const PcapFrame> frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    if (frames[i].data.size() > kPcapSnapLen) {
      return absl::InvalidArgumentError(
          absl::StrFormat("pcap file \"%s\", frame %d: %d bytes exceed the snapshot length %d", path, i,
                          frames[i].data.size(), kPcapSnapLen));
    }
    if (frames[i].timestamp_us < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "pcap file \"%s\", frame %d: negative timestamp %d us", path, i, frames[i].timestamp_us));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status WritePcapFile(const std::string& path, absl::Span<const std::vector<uint8_t>> frames,
                           absl::Span<const int64_t> timestamps_us) {
  if (!timestamps_us.empty() && timestamps_us.size() != frames.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("pcap file \"%s\": %d timestamps for %d frames", path,
                                                      timestamps_us.size(), frames.size()));
  }
  std::vector<PcapFrame> stamped(frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    stamped[i].data = frames[i];
    stamped[i].orig_len = static_cast<uint32_t>(frames[i].size());
    stamped[i].timestamp_us = timestamps_us.empty() ? 0 : timestamps_us[i];
  }
  return WritePcapFile(path, stamped);
}

absl::Status WritePcapFile(const std::string& path, absl::Span<const PcapFrame> frames) {
  DRSIM_RETURN_IF_ERROR(CheckFrames(path, frames));
  PcapHandle dead(
      pcap_open_dead_with_tstamp_precision(DLT_EN10MB, kPcapSnapLen, PCAP_TSTAMP_PRECISION_MICRO));
  if (!dead)
    return absl::ResourceExhaustedError(absl::StrFormat("pcap file \"%s\": pcap_open_dead failed", path));
  // Opened here rather than by pcap_dump_open so that errno names the failure and "-" is a file name.
  FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) return ErrnoStatus(errno, absl::StrFormat("cannot create pcap file \"%s\"", path));
  DumperHandle dumper(pcap_dump_fopen(dead.get(), file));  // on failure libpcap has closed `file`
  if (!dumper) {
    return absl::UnavailableError(
        absl::StrFormat("cannot write pcap file \"%s\": %s", path, pcap_geterr(dead.get())));
  }
  for (const PcapFrame& frame : frames) {
    pcap_pkthdr header{};
    header.ts.tv_sec = static_cast<time_t>(frame.timestamp_us / kMicrosPerSecond);
    header.ts.tv_usec = static_cast<suseconds_t>(frame.timestamp_us % kMicrosPerSecond);
    header.caplen = static_cast<uint32_t>(frame.data.size());
    header.len = std::max(frame.orig_len, header.caplen);
    pcap_dump(reinterpret_cast<u_char*>(dumper.get()), &header, frame.data.data());
  }
  if (pcap_dump_flush(dumper.get()) != 0 || std::ferror(pcap_dump_file(dumper.get()))) {
    return ErrnoStatus(errno, absl::StrFormat("cannot write pcap file \"%s\"", path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PcapFrame>> ReadPcapFile(const std::string& path) {
  // libpcap reads standard input for "-"; a file named "-" is read as "./-".
  const std::string name = path == "-" ? "./-" : path;
  struct stat st;
  if (stat(name.c_str(), &st) != 0) return ErrnoStatus(errno, absl::StrFormat("pcap file \"%s\"", path));
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  PcapHandle pcap(pcap_open_offline_with_tstamp_precision(name.c_str(), PCAP_TSTAMP_PRECISION_MICRO, errbuf));
  if (!pcap) {
    return absl::InvalidArgumentError(absl::StrFormat("cannot read pcap file \"%s\": %s", path, errbuf));
  }
  const int link_type = pcap_datalink(pcap.get());
  if (link_type != DLT_EN10MB) {
    const char* link_name = pcap_datalink_val_to_name(link_type);
    return absl::InvalidArgumentError(
        absl::StrFormat("pcap file \"%s\" has link type %s (%d); only Ethernet (EN10MB, 1) is supported",
                        path, link_name ? link_name : "unknown", link_type));
  }
  std::vector<PcapFrame> frames;
  for (;;) {
    pcap_pkthdr* header = nullptr;
    const u_char* data = nullptr;
    const int rc = pcap_next_ex(pcap.get(), &header, &data);
    if (rc == PCAP_ERROR_BREAK) break;  // end of file
    if (rc != 1) {
      return absl::DataLossError(
          absl::StrFormat("pcap file \"%s\", frame %d: %s", path, frames.size(), pcap_geterr(pcap.get())));
    }
    PcapFrame& frame = frames.emplace_back();
    frame.data.assign(data, data + header->caplen);
    frame.orig_len = header->len;
    frame.timestamp_us = static_cast<int64_t>(header->ts.tv_sec) * kMicrosPerSecond + header->ts.tv_usec;
  }
  return frames;
}

}  // namespace drsim::sim
