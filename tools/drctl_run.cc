#include "tools/drctl_run.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "sim/rx_queue.h"

namespace drsim::tools {
namespace {

// The destination name of one delivery, and (for queues, ports and the wire) takes its bytes out.
Arrival Collect(Session& session, const sim::Delivery& d) {
  Arrival a;
  switch (d.fate) {
    case sim::Fate::kQueued: {
      std::optional<testpmd::QueueRef> q = session.engine->QueueOf(d.qp_num);
      a.destination =
          q ? absl::StrFormat("queue:%d/%d", q->port, q->index) : absl::StrFormat("qp:0x%x", d.qp_num);
      sim::RxQueue* rq = session.nic->function(d.vport)->queue(d.qp_num);
      if (std::optional<sim::RxCompletion> c = rq ? rq->Poll() : std::nullopt) {
        a.frame = std::move(c->frame);
        a.has_tag = c->has_flow_tag;
        a.tag = c->flow_tag;
      }
      break;
    }
    case sim::Fate::kPort:
      a.destination = absl::StrFormat("vport:%d", d.vport);
      if (auto f = session.nic->function(d.vport)->PollPort()) a.frame = *std::move(f);
      break;
    case sim::Fate::kWire:
      a.destination = "wire";
      if (auto f = session.nic->PollWire()) a.frame = *std::move(f);
      break;
    default:  // a drop action, a domain's drop default, a full queue, a table loop
      a.destination = "drop";
      break;
  }
  return a;
}

// Output file name of a destination in --out DIR.
std::string PcapName(const std::string& destination) {
  if (destination == "wire") return "wire.pcap";
  std::string name = destination;
  for (char& c : name) {
    if (c == ':' || c == '/') c = '-';
  }
  return name + ".pcap";  // queue-<port>-<q>.pcap, vport-<n>.pcap
}

absl::Status MakeDir(const std::string& dir) {
  std::string path;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || (dir[i] == '/' && i > 0)) {
      path = dir.substr(0, i);
      if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::UnavailableError(absl::StrFormat("%s: %s", path, std::strerror(errno)));
      }
    }
  }
  return absl::OkStatus();
}

struct Tally {
  uint64_t frames = 0, bytes = 0;
};

}  // namespace

std::vector<Arrival> Inject(Session& session, const Options& options, const sim::PcapFrame& frame, bool trace,
                            sim::Verdict* verdict) {
  session.nic->set_time_ns(FrameTimeNs(frame));  // the NIC's clock follows the capture's
  const sim::Frame bytes(frame.data);
  absl::Span<sim::Verdict> out(verdict, 1);
  absl::Status s =
      options.from_vport.has_value()
          ? session.nic->function(*options.from_vport)->Send(absl::MakeConstSpan(&bytes, 1), out, trace)
          : session.nic->ReceiveFromWire(absl::MakeConstSpan(&bytes, 1), out, trace);
  (void)s;  // only fails for mismatched spans, which cannot happen here
  std::vector<Arrival> arrivals;
  arrivals.push_back(Collect(session, *verdict));
  for (const sim::Delivery& copy : verdict->copies) arrivals.push_back(Collect(session, copy));
  return arrivals;
}

int RunFrames(const Options& options, std::ostream& out, std::ostream& err, bool progress) {
  absl::StatusOr<std::vector<sim::PcapFrame>> frames = sim::ReadPcapFile(options.pcap);
  if (!frames.ok()) {
    err << "drctl: " << frames.status().message() << "\n";
    return kExitUsage;
  }
  int status;
  Progress shown(err, progress);
  shown.set_total_frames(frames->size());
  std::unique_ptr<Session> session =
      LoadRules(options, err, &status, frames->empty() ? 0 : FrameTimeNs(frames->front()), &shown);
  if (session == nullptr) return status;
  std::string after_text;
  if (!options.after.empty()) {
    std::optional<std::string> text = ReadTextFile(options.after, "--after command file", err);
    if (!text) return kExitUsage;
    after_text = *std::move(text);
  }
  std::ofstream verdicts;
  if (!options.verdicts.empty()) {
    verdicts.open(options.verdicts);
    if (!verdicts) {
      err << "drctl: " << options.verdicts << ": cannot write the verdict file\n";
      return kExitUsage;
    }
  }
  if (!options.out_dir.empty()) {
    if (absl::Status s = MakeDir(options.out_dir); !s.ok()) {
      err << "drctl: --out " << s.message() << "\n";
      return kExitUsage;
    }
  }

  std::map<std::string, std::vector<sim::PcapFrame>> outputs;  // by destination
  std::map<std::string, Tally> by_destination;
  std::map<uint32_t, Tally> by_rule;  // DR rule id
  Tally in;
  const size_t n = frames->size();
  for (size_t i = 0; i < n; ++i) {
    const sim::PcapFrame& f = (*frames)[i];
    sim::Verdict v;
    std::vector<Arrival> arrivals = Inject(*session, options, f, /*trace=*/true, &v);
    ++in.frames;
    in.bytes += f.data.size();
    for (const sim::Hop& hop : v.path) {
      if (hop.rule_id == 0) continue;
      ++by_rule[hop.rule_id].frames;
      by_rule[hop.rule_id].bytes += f.data.size();
    }
    // The frame's destinations: each distinct one, in order; "drop" only when it reached none.
    std::vector<std::string> names;
    std::optional<uint32_t> tag;
    for (Arrival& a : arrivals) {
      if (a.destination != "drop") {
        Tally& t = by_destination[a.destination];
        ++t.frames;
        t.bytes += a.frame.size();
        if (!tag && a.has_tag && absl::StartsWith(a.destination, "queue:")) tag = a.tag;
        if (!options.out_dir.empty()) {
          outputs[a.destination].push_back({std::move(a.frame), 0, f.timestamp_us});
          outputs[a.destination].back().orig_len =
              static_cast<uint32_t>(outputs[a.destination].back().data.size());
        }
      }
      if (std::find(names.begin(), names.end(), a.destination) == names.end()) names.push_back(a.destination);
    }
    if (names.size() > 1) names.erase(std::remove(names.begin(), names.end(), "drop"), names.end());
    if (names == std::vector<std::string>{"drop"}) ++by_destination["drop"].frames;
    if (verdicts.is_open()) {
      verdicts << i << " " << absl::StrJoin(names, ",");
      if (tag) verdicts << " tag=" << *tag;
      verdicts << "\n";
    }
    shown.Frames(i + 1);
  }
  shown.Finish();
  if (verdicts.is_open()) {
    verdicts.close();
    if (!verdicts) {
      err << "drctl: " << options.verdicts << ": write failed\n";
      return kExitUsage;
    }
  }
  for (const auto& [destination, pcap] : outputs) {
    const std::string path = options.out_dir + "/" + PcapName(destination);
    if (absl::Status s = sim::WritePcapFile(path, pcap); !s.ok()) {
      err << "drctl: " << s.message() << "\n";
      return kExitUsage;
    }
  }

  // The clock runs on, then the --after commands see the NIC as the capture left it.
  if (options.wait_s) {
    session->nic->set_time_ns(session->nic->time_ns() + static_cast<uint64_t>(*options.wait_s * 1e9));
  }
  testpmd::FileReport after;
  if (!options.after.empty()) {
    after = testpmd::RunFile(*session->engine, options.after, after_text);
    if (!after.ok()) {
      for (const testpmd::Diagnostic& d : after.diagnostics) err << d.ToString() << "\n";
      err << absl::StrFormat("%s: %d error(s)\n", options.after, after.diagnostics.size());
      return kExitRejected;
    }
  }
  std::vector<std::string> after_commands;
  for (const testpmd::CommandOutcome& o : after.outcomes)
    after_commands.push_back(CommandText(after_text, o.pos.line));

  if (options.json) {
    nlohmann::json j;
    if (!options.after.empty()) {
      j["after"] = nlohmann::json::array();
      for (size_t i = 0; i < after.outcomes.size(); ++i) {
        j["after"].push_back({{"line", after.outcomes[i].pos.line},
                              {"command", after_commands[i]},
                              {"output", after.outcomes[i].result.text}});
      }
    }
    j["frames"] = in.frames;
    j["bytes"] = in.bytes;
    for (const auto& [destination, t] : by_destination) {
      j["destinations"][destination] = {{"frames", t.frames}, {"bytes", t.bytes}};
    }
    j["rules"] = nlohmann::json::array();
    for (const auto& [id, t] : by_rule) {
      j["rules"].push_back({{"rule", session->engine->DescribeRule(id)},
                            {"dr_rule", id},
                            {"hits", t.frames},
                            {"bytes", t.bytes}});
    }
    out << j.dump(2) << "\n";
    return kExitOk;
  }
  out << absl::StrFormat("%d frames, %d bytes from %s\n", in.frames, in.bytes,
                         options.from_vport ? absl::StrFormat("vport %d", *options.from_vport) : "the wire");
  out << "destinations:\n";
  for (const auto& [destination, t] : by_destination) {
    out << absl::StrFormat("  %-14s %8d frames %10d bytes\n", destination, t.frames, t.bytes);
  }
  out << "rules hit (frames, input bytes):\n";
  for (const auto& [id, t] : by_rule) {
    out << absl::StrFormat("  %-40s %8d frames %10d bytes\n", session->engine->DescribeRule(id), t.frames,
                           t.bytes);
  }
  if (!options.after.empty()) out << "after the last frame:\n";
  for (size_t i = 0; i < after.outcomes.size(); ++i) {
    out << absl::StrFormat("%s:%d: %s\n", options.after, after.outcomes[i].pos.line, after_commands[i])
        << after.outcomes[i].result.text;
  }
  return kExitOk;
}

}  // namespace drsim::tools
