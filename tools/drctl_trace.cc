// drctl trace: one frame's path through the NIC, explained.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hw/match_layout.h"
#include "tools/drctl_run.h"

namespace drsim::tools {
namespace {

std::string StageName(const sim::Hop& hop) {
  switch (hop.domain) {
    case MLX5DV_DR_DOMAIN_TYPE_FDB:
      return hop.pipe == hw::kRxPipe ? "FDB (RX pipe, from the wire)" : "FDB (TX pipe, from a vport)";
    case MLX5DV_DR_DOMAIN_TYPE_NIC_RX:
      return absl::StrFormat("port %d NIC_RX", hop.vport);
    case MLX5DV_DR_DOMAIN_TYPE_NIC_TX:
      return absl::StrFormat("port %d NIC_TX", hop.vport);
  }
  return "?";
}

// "outer.ip_version=0x4 outer.tcp_dport=0xffff": the fields a mask selects.
std::string MaskFields(const hw::MatchParams& mask) {
  std::vector<std::string> fields;
  for (const hw::FieldInfo& f : hw::AllFields()) {
    uint32_t word;
    std::memcpy(&word, mask.bytes() + f.word_offset(), 4);
    const uint32_t v = (__builtin_bswap32(word) >> f.shift()) & f.max_value();
    if (v != 0) fields.push_back(absl::StrFormat("%s=0x%x", f.name, v));
  }
  return fields.empty() ? "(matches everything)" : absl::StrJoin(fields, " ");
}

// "port 0 flow 3 ..." -> the testpmd line that created flow 3 of port 0, from the rule file `text`.
std::string FlowSource(const Session& session, const Options& options, absl::string_view text,
                       const std::string& label) {
  int port, flow;
  if (std::sscanf(label.c_str(), "port %d flow %d", &port, &flow) != 2) return "";
  const std::optional<int> line = session.engine->FlowLine(port, flow);
  if (!line) return "";
  return absl::StrFormat("%s:%d: %s", options.rules, *line, CommandText(text, *line));
}

// Hex of bytes [from, to) of `b`, at most 48 bytes of it.
std::string Hex(const std::vector<uint8_t>& b, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < from + 48; ++i) absl::StrAppendFormat(&out, "%02x", b[i]);
  if (to > from + 48) absl::StrAppend(&out, "...");
  return out;
}

// What changed from `before` to `after`. Same length: each differing run of bytes. Otherwise the part
// between the longest common prefix and suffix (an encapsulation is bytes inserted at 0, a decapsulation
// bytes removed there, a VLAN push 4 bytes inserted at 12), as offsets of `before`.
std::string ByteChanges(const std::vector<uint8_t>& before, const std::vector<uint8_t>& after) {
  if (before == after) return "    (unchanged)\n";
  std::string out;
  if (before.size() == after.size()) {
    for (size_t i = 0; i < before.size();) {
      if (before[i] == after[i]) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < before.size() && j - i < 16 && before[j] != after[j]) ++j;
      absl::StrAppendFormat(&out, "    [%d..%d] %s -> %s\n", i, j - 1, Hex(before, i, j), Hex(after, i, j));
      i = j;
    }
    return out;
  }
  const size_t shortest = std::min(before.size(), after.size());
  size_t prefix = 0, suffix = 0;
  while (prefix < shortest && before[prefix] == after[prefix]) ++prefix;
  while (suffix < shortest - prefix &&
         before[before.size() - 1 - suffix] == after[after.size() - 1 - suffix]) {
    ++suffix;
  }
  const size_t b_end = before.size() - suffix, a_end = after.size() - suffix;
  absl::StrAppendFormat(&out, "    length %d -> %d bytes\n", before.size(), after.size());
  if (b_end == prefix) {
    absl::StrAppendFormat(&out, "    %d bytes inserted at %d: %s\n", a_end - prefix, prefix,
                          Hex(after, prefix, a_end));
  } else if (a_end == prefix) {
    absl::StrAppendFormat(&out, "    %d bytes removed at %d: %s\n", b_end - prefix, prefix,
                          Hex(before, prefix, b_end));
  } else {
    absl::StrAppendFormat(&out, "    [%d..%d] %s -> %s (%d bytes)\n", prefix, b_end - 1,
                          Hex(before, prefix, b_end), Hex(after, prefix, a_end), a_end - prefix);
  }
  absl::StrAppendFormat(&out, "    the other %d bytes unchanged\n", prefix + suffix);
  return out;
}

}  // namespace

int TraceFrame(const Options& options, std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::vector<sim::PcapFrame>> frames = sim::ReadPcapFile(options.pcap);
  if (!frames.ok()) {
    err << "drctl: " << frames.status().message() << "\n";
    return kExitUsage;
  }
  if (*options.frame >= static_cast<long>(frames->size())) {
    err << absl::StrFormat("drctl: --frame %d: %s has frames 0 to %d\n", *options.frame, options.pcap,
                           static_cast<long>(frames->size()) - 1);
    return kExitUsage;
  }
  int status;
  std::unique_ptr<Session> session = LoadRules(options, err, &status, FrameTimeNs(frames->front()));
  if (session == nullptr) return status;
  // The rules' text, read again for the lines the frame's rules came from.
  std::optional<std::string> text = ReadTextFile(options.rules, "rule file", err);
  if (!text) return kExitUsage;
  // The frames before it go through first: counters, meters and samplers see what they would have.
  sim::Verdict v;
  for (long i = 0; i < *options.frame; ++i) Inject(*session, options, (*frames)[i], false, &v);
  const sim::PcapFrame& f = (*frames)[*options.frame];
  v = sim::Verdict();
  std::vector<Arrival> arrivals = Inject(*session, options, f, /*trace=*/true, &v);

  out << absl::StrFormat("frame %d of %s: %d bytes from %s\n", *options.frame, options.pcap, f.data.size(),
                         options.from_vport ? absl::StrFormat("vport %d", *options.from_vport) : "the wire");
  for (const sim::Hop& hop : v.path) {
    out << "  " << StageName(hop);
    if (hop.rule_id == 0) {
      out << (hop.table_id == 0 ? ": no level-0 matcher holds it" : ", no matcher holds it")
          << " -> the domain's default\n";
      continue;
    }
    out << absl::StrFormat(", table level %d:\n", hop.table_level);
    std::optional<hw::MatchParams> mask = session->engine->MatcherMask(hop.matcher_id);
    out << absl::StrFormat("    matcher %d: %s\n", hop.matcher_id,
                           mask ? MaskFields(*mask) : std::string("(one of the engine's own)"));
    const std::string label = session->engine->DescribeRule(hop.rule_id);
    out << absl::StrFormat("    rule %d: %s\n", hop.rule_id,
                           label.empty() ? "(not from the rule file)" : label);
    if (std::string source = FlowSource(*session, options, *text, label); !source.empty()) {
      out << "      " << source << "\n";
    }
    if (std::vector<std::string> actions = session->engine->RuleActions(hop.rule_id); !actions.empty()) {
      out << "      actions: " << absl::StrJoin(actions, ", ") << "\n";
    }
  }
  for (const Arrival& a : arrivals) {
    out << "  -> " << a.destination;
    if (a.has_tag) out << " tag=" << a.tag;
    out << "\n";
    if (a.destination != "drop") out << ByteChanges(f.data, a.frame);
  }
  return kExitOk;
}

}  // namespace drsim::tools
