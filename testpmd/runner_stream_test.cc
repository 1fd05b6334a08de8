// Rule files streamed into a pristine engine one command at a time (runner.h's RunStream): what the flows
// do and what flow list/query/destroy say afterwards, errors with their lines (and nothing left installed),
// identical rules in linear time (older wins, EEXIST when refused) and shared actions; and commands of a
// shape seen before, installed from a flow template, equal to those parsed.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "dr/dump.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw/net_addr.h"
#include "testpmd/engine_test_util.h"
#include "testpmd/parser.h"
#include "testpmd/runner.h"

namespace drsim::testpmd {
namespace {

using ::testing::HasSubstr;

FileReport Stream(FlowEngine& engine, const std::string& text, StreamOptions options = {}) {
  std::istringstream in(text);
  return RunStream(engine, "f.rules", in, options);
}

std::string Rule(const char* src, int queue) {
  return absl::StrCat("flow create 0 ingress group 1 pattern eth / ipv4 src is ", src,
                      " / udp / end actions count / queue index ", queue, " / end\n");
}

TEST_F(EngineTest, StreamedFlowsSteerAndAnswerListQueryAndDestroy) {
  ASSERT_TRUE(engine_.pristine());
  const std::string text = "flow create 0 ingress pattern eth / end actions jump group 1 / end\n" +
                           Rule("10.0.0.1", 1) + "# a comment\n" + Rule("10.0.0.2", 2) + Rule("10.0.0.3", 3);
  size_t seen = 0;
  StreamOptions options;
  options.keep_outcomes = false;
  options.on_command = [&seen](size_t n) { seen = n; };
  FileReport r = Stream(engine_, text, options);
  ASSERT_TRUE(r.ok()) << r.diagnostics.front().ToString();
  EXPECT_EQ(r.commands, 4u);
  EXPECT_EQ(seen, 4u);
  EXPECT_TRUE(r.outcomes.empty());
  EXPECT_FALSE(engine_.pristine());
  EXPECT_EQ(engine_.FlowLine(0, 2), 4);  // the comment is line 3

  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.2", "1.1.1.1", 1, 2)).qp_num, Qp(0, 2));
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.3", "1.1.1.1", 1, 2)).qp_num, Qp(0, 3));
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.9", "1.1.1.1", 1, 2)).fate, sim::Fate::kDomainDefault);

  absl::StatusOr<CommandResult> list = Try("flow list 0 group 1");
  ASSERT_TRUE(list.ok());
  EXPECT_THAT(list->text, HasSubstr("2\t1\t0\ti--\tETH IPV4 UDP => COUNT QUEUE\n"));
  absl::StatusOr<CommandResult> count = Try("flow query 0 2 count");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->count->hits, 1u);
  ASSERT_TRUE(Try("flow destroy 0 rule 2").ok());
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.2", "1.1.1.1", 1, 2)).fate, sim::Fate::kDomainDefault);
  EXPECT_EQ(engine_.counts().flows, 3);
}

TEST_F(EngineTest, StreamedErrorsNameTheirLinesAndLeaveNothingInstalled) {
  const std::string text =
      Rule("10.0.0.1", 1) +  // 1
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.300 / end actions drop / end\n" +
      Rule("10.0.0.2", 99) +     // 3: no queue 99
      Rule("10.0.0.3", 3) +      // 4
      "flow query 0 7 count\n";  // 5: no flow 7
  FileReport r = Stream(engine_, text);
  ASSERT_EQ(r.diagnostics.size(), 3u);
  EXPECT_THAT(r.diagnostics[0].ToString(), HasSubstr("f.rules:2:49: error:"));
  EXPECT_EQ(r.diagnostics[1].pos.line, 3);
  EXPECT_THAT(r.diagnostics[1].ToString(), HasSubstr("queue"));
  EXPECT_EQ(r.diagnostics[2].pos.line, 5);
  EXPECT_EQ(r.commands, 0u);
  EXPECT_TRUE(r.outcomes.empty());
  // Everything the file did is undone: the engine is as new.
  EXPECT_TRUE(engine_.pristine());
  const EngineCounts c = engine_.counts();
  EXPECT_EQ(c.flows, 0);
  EXPECT_EQ(c.rules, 0);
  EXPECT_EQ(c.domains, 0);
  EXPECT_EQ(c.shared_actions, 0);
  // And a clean file runs on it afterwards.
  EXPECT_TRUE(Stream(engine_, Rule("10.0.0.1", 1)).ok());
}

TEST_F(EngineTest, IdenticalRulesStreamInLinearTimeAndTheOldestWins) {
  // 20,000 copies: quadratic duplicate chains would walk 2 * 10^8 links here (and the check engine of a
  // whole-file check as many again).
  constexpr int kCopies = 20000;
  std::string text = "flow create 0 ingress pattern eth / end actions jump group 1 / end\n";
  text += Rule("10.0.0.1", 1);
  for (int i = 1; i < kCopies; ++i) text += Rule("10.0.0.1", 2);
  FileReport r = Stream(engine_, text);
  ASSERT_TRUE(r.ok());
  const EngineCounts c = engine_.counts();
  EXPECT_EQ(c.flows, kCopies + 1);
  EXPECT_EQ(c.rules, kCopies + 1);
  EXPECT_EQ(c.matchers, 2);
  // Every copy's queue action is one shared action (the jump is the table's own); counters stay per flow.
  EXPECT_EQ(c.shared_actions, 2);
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.1", "1.1.1.1", 1, 2)).qp_num, Qp(0, 1));
  ASSERT_TRUE(Try("flow destroy 0 rule 1").ok());  // the oldest copy: the next-oldest wins
  EXPECT_EQ(nic_.ReceiveFromWire(Udp("10.0.0.1", "1.1.1.1", 1, 2)).qp_num, Qp(0, 2));
  absl::StatusOr<CommandResult> count = Try("flow query 0 2 count");
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->count->hits, 1u);
  ASSERT_TRUE(Try("flow flush 0").ok());  // newest first
  EXPECT_EQ(engine_.counts().rules, 0);
  EXPECT_EQ(engine_.counts().shared_actions, 0);
}

TEST_F(EngineTest, RefusedDuplicatesFailWithAlreadyExistsAtTheirLine) {
  ASSERT_TRUE(Try(Rule("10.0.0.1", 1)).ok());
  for (const dr::Domain* d : engine_.Domains()) ASSERT_TRUE(d->AllowDuplicateRules(false).ok());
  FileReport r = Stream(engine_, Rule("10.0.0.2", 1) + Rule("10.0.0.1", 2));
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].code, absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(r.diagnostics[0].pos.line, 2);
  EXPECT_THAT(r.diagnostics[0].message, HasSubstr("duplicate"));
}

// Flow templates (flow_template_cache.h): an engine that keeps no history, streamed without outcomes,
// installs repeated shapes from templates; with outcomes kept, it parses every command. Both must end the
// same, DR object for DR object.
class TemplateStreamTest : public EngineTest {
 protected:
  static EngineOptions NoHistory() {
    EngineOptions o;
    o.keep_history = false;
    return o;
  }
  // Streams `text` into both engines, with templates and without; each must run every command as the other.
  void StreamBothWays(const std::string& text, FileReport* t, FileReport* p) {
    *t = StreamInto(templated_, text, true);
    *p = StreamInto(parsed_, text, false);
    ASSERT_TRUE(t->ok()) << t->diagnostics.front().ToString();
    ASSERT_TRUE(p->ok()) << p->diagnostics.front().ToString();
    EXPECT_EQ(t->commands, p->commands);
  }
  static FileReport StreamInto(FlowEngine& engine, const std::string& text, bool templates) {
    StreamOptions options;
    options.keep_outcomes = !templates;
    return Stream(engine, text, options);
  }
  // rdma-core's dump of every domain of `engine`, with stable ids.
  static std::string Dump(const FlowEngine& engine) {
    char* buffer = nullptr;
    size_t size = 0;
    std::FILE* f = open_memstream(&buffer, &size);
    dr::DumpOptions options;
    options.stable_ids = true;
    for (const dr::Domain* d : engine.Domains()) EXPECT_TRUE(dr::DumpDomain(*d, f, options).ok());
    std::fclose(f);
    std::string out(buffer, size);
    std::free(buffer);
    return out;
  }
  static std::string Listed(const FlowEngine& engine) {
    std::string out;
    for (uint16_t port = 0; port < 3; ++port) {
      absl::StatusOr<std::vector<FlowInfo>> flows = engine.ListFlows(port, {});
      if (!flows.ok()) continue;
      for (const FlowInfo& f : *flows) {
        absl::StrAppend(&out, port, " ", f.id, " line ", engine.FlowLine(port, f.id).value_or(0), "\n");
      }
      out += FlowEngine::FormatFlowList(*flows);
    }
    return out;
  }

  // Both engines hold the same flows, lines and DR objects.
  void ExpectSameFlows() {
    EXPECT_EQ(Listed(templated_), Listed(parsed_));
    // The dumps, field by field; object ids are the process's, so one dump's ids must map one to one onto
    // the other's.
    const std::vector<std::string> dump = absl::StrSplit(Dump(templated_), '\n');
    const std::vector<std::string> parsed_dump = absl::StrSplit(Dump(parsed_), '\n');
    EXPECT_GT(dump.size(), 1000u);
    ASSERT_EQ(dump.size(), parsed_dump.size());
    std::map<std::string, std::string> ids, parsed_ids;
    for (size_t i = 0; i < dump.size(); ++i) {
      const std::vector<std::string> a = absl::StrSplit(dump[i], ','),
                                     b = absl::StrSplit(parsed_dump[i], ',');
      ASSERT_EQ(a.size(), b.size()) << "dump line " << i + 1 << ": " << dump[i] << " / " << parsed_dump[i];
      for (size_t f = 0; f < a.size(); ++f) {
        if (!absl::StartsWith(a[f], "0x")) {
          ASSERT_EQ(a[f], b[f]) << "dump line " << i + 1 << ": " << dump[i] << " / " << parsed_dump[i];
          continue;
        }
        ASSERT_EQ(ids.emplace(a[f], b[f]).first->second, b[f]) << "dump line " << i + 1;
        ASSERT_EQ(parsed_ids.emplace(b[f], a[f]).first->second, a[f]) << "dump line " << i + 1;
      }
    }
    const EngineCounts tc = templated_.counts(), pc = parsed_.counts();
    EXPECT_EQ(tc.flows, pc.flows);
    EXPECT_EQ(tc.rules, pc.rules);
    EXPECT_EQ(tc.matchers, pc.matchers);
    EXPECT_EQ(tc.shared_actions, pc.shared_actions);
  }

  sim::Nic templated_nic_{2}, parsed_nic_{2};
  FlowEngine templated_{templated_nic_, NoHistory()}, parsed_{parsed_nic_, NoHistory()};
};

std::string Ip4(uint32_t v) { return hw::Ipv4Address{v}.ToString(); }

// `text` with some of its lines written as testpmd also reads them: with a comment after, blanks before,
// a tab or a carriage return, testpmd's prompt, or continued on a second line.
std::string Respell(const std::string& text, std::mt19937& rng) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::string l(line);
    switch (rng() % 16) {
      case 0:
        l += "  # a note";
        break;
      case 1:
        l = "  " + l;
        break;
      case 2:
        l.replace(l.find(' '), 1, "\t");
        break;
      case 3:
        l += "\r";
        break;
      case 4:
        l = "testpmd> " + l;
        break;
      case 5:
        if (const size_t slash = l.find(" / "); slash != std::string::npos) l.replace(slash, 3, " / \\\n");
        break;
    }
    out += l + "\n";
  }
  return out;
}

// Rules of six shapes in turn, with random values, and now and then a command that drops the templates.
std::string MixedShapes(int rules, std::mt19937& rng) {
  std::string text = "flow create 0 ingress pattern eth / end actions jump group 1 / end\n";
  for (int i = 0; i < rules; ++i) {
    const uint32_t a = 0x0a000000 | (rng() & 0xffff), b = static_cast<uint32_t>(rng());
    const int sport = static_cast<int>(rng() % 65536), dport = static_cast<int>(rng() % 65536);
    switch (i % 6) {
      case 0:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 pattern eth / ipv4 src is %s dst is %s / udp src is "
            "%d dst is %d / end actions queue index 1 / end\n",
            Ip4(a), Ip4(b), sport, dport);
        break;
      case 1:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 priority %d pattern eth / ipv4 src spec %s src mask "
            "255.255.0.0 dst spec %s dst prefix 24 / tcp dst spec %d dst mask 0xfc00 / end "
            "actions drop / end\n",
            i % 3, Ip4(a), Ip4(b), dport);
        break;
      case 2:
        absl::StrAppendFormat(&text,
                              "flow create 0 ingress group 1 pattern eth / ipv6 src is 2001:db8::%x dst is "
                              "fe80::%x:%x / tcp dst is %d / end actions queue index 2 / end\n",
                              a & 0xffff, b >> 16, b & 0xffff, dport);
        break;
      case 3:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 pattern eth src is 02:00:00:%02x:%02x:%02x / ipv4 "
            "dst is %s / end actions mark id 7 / queue index 3 / end\n",
            a & 0xff, b & 0xff, sport & 0xff, Ip4(b));
        break;
      case 4:  // a counter of its own: no template
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 pattern eth / ipv4 src is %s / end actions count / "
            "queue index 4 / end\n",
            Ip4(a));
        break;
      case 5:  // transfer rules of port 1, and a duplicate of the last rule now and then
        absl::StrAppendFormat(
            &text,
            "flow create 1 transfer pattern eth / ipv4 dst is %s / udp dst is %d / end actions "
            "port_id id 2 / end\n",
            Ip4(b), dport);
        if (rng() % 4 == 0) {
          absl::StrAppendFormat(&text,
                                "flow create 1 transfer pattern eth / ipv4 dst is %s / udp dst is %d / end "
                                "actions port_id id 2 / end\n",
                                Ip4(b), dport);
        }
        break;
    }
    if (i % 97 == 96) absl::StrAppendFormat(&text, "flow destroy 0 rule %d\n", i / 2);
    if (i % 89 == 88) text += "flow list 0\n";
  }
  return Respell(text, rng);
}

TEST_F(TemplateStreamTest, TemplatedFlowsEqualParsedOnes) {
  std::mt19937 rng(20261202);
  const std::string text = MixedShapes(600, rng);
  FileReport t, p;
  ASSERT_NO_FATAL_FAILURE(StreamBothWays(text, &t, &p));
  EXPECT_GT(t.templated, 300u);  // of about 750 commands
  EXPECT_EQ(p.templated, 0u);
  ExpectSameFlows();
}

// More shapes take turns than the recent ones the cache tries first: found by the slots of their lines
// (SpacedSlots), or by their tokens where a line is spaced otherwise.
TEST_F(TemplateStreamTest, ManyShapesInTurnEqualParsedOnes) {
  std::mt19937 rng(20261203);
  std::string text = "flow create 0 ingress pattern eth / end actions jump group 1 / end\n";
  for (int i = 0; i < 2400; ++i) {
    const uint32_t a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    const int shape = static_cast<int>(rng() % 48);
    const char* spacing = i % 50 == 7 ? "  " : " ";  // (now and then two blanks before a slot value)
    absl::StrAppendFormat(
        &text,
        "flow create 0 ingress group 1 priority %d pattern eth / ipv4 src is%s%s dst spec %s "
        "dst mask 255.255.%d.0 / udp dst is %d / end actions mark id %d / queue index %d / "
        "end\n",
        shape % 3, spacing, Ip4(a), Ip4(b), shape % 2 == 0 ? 255 : 0, static_cast<int>(b % 65536),
        1 + shape / 12, shape % 12 % 5);
  }
  text = Respell(text, rng);
  FileReport t, p;
  ASSERT_NO_FATAL_FAILURE(StreamBothWays(text, &t, &p));
  EXPECT_GT(t.templated,
            1600u);  // of 2401 commands; those Respell breaks and each shape's first two are parsed
  ExpectSameFlows();
}

// Slots beyond addresses and ports (VLAN ids and TCIs, TOS and TTL, VNIs) and template items around them
// (vlan, vxlan, vxlan-gpe, icmp, icmp6, gre), with values from 0 to all ones.
TEST_F(TemplateStreamTest, VlanTunnelAndIpFieldShapesEqualParsedOnes) {
  std::mt19937 rng(20261204);
  std::string text = "flow create 0 ingress pattern eth / end actions jump group 1 / end\n";
  for (int i = 0; i < 900; ++i) {
    const uint32_t a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    const uint32_t vid = i % 50 == 0 ? 0 : i % 50 == 1 ? 4095 : a % 4096;
    switch (i % 6) {
      case 0:
        absl::StrAppendFormat(&text,
                              "flow create 0 ingress group 1 pattern eth / vlan vid is %d / ipv4 src is %s / "
                              "udp dst is %d / end actions queue index 1 / end\n",
                              vid, Ip4(b), static_cast<int>(b % 65536));
        break;
      case 1:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 priority 1 pattern eth / ipv4 dst is %s tos is %d "
            "ttl is %d / udp dst is 4789 / vxlan vni is %d / eth / ipv4 src is %s / end "
            "actions mark id 3 / queue index 2 / end\n",
            Ip4(a), static_cast<int>(b & 0xff), static_cast<int>((b >> 8) & 0xff),
            static_cast<int>(i % 50 == 1 ? 0xffffff : b >> 8), Ip4(b));
        break;
      case 2:
        absl::StrAppendFormat(&text,
                              "flow create 0 ingress group 1 pattern eth / vlan tci is %d / ipv6 dst is "
                              "2001:db8::%x / tcp dst is %d / end actions drop / end\n",
                              static_cast<int>(a & 0xffff), b & 0xffff, static_cast<int>(a >> 16));
        break;
      case 3:
        absl::StrAppendFormat(&text,
                              "flow create 0 ingress group 1 pattern eth / ipv4 src is %s / icmp type is 8 / "
                              "end actions queue index 3 / end\n",
                              Ip4(a));
        break;
      case 4:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 pattern eth / ipv4 / udp / vxlan-gpe vni is %d / "
            "end actions queue index 4 / end\n",
            static_cast<int>(a >> 8));
        break;
      case 5:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 pattern eth / ipv6 src is fe80::%x / icmp6 type is "
            "135 / end actions queue index 5 / end\n"
            "flow create 0 ingress group 1 pattern eth / ipv4 dst is %s / gre / end actions "
            "drop / end\n",
            a & 0xffff, Ip4(b));
        if (i % 12 == 5) {  // the pushed VLAN id is the slot's: parsed each time
          absl::StrAppendFormat(&text,
                                "flow create 1 transfer pattern eth / vlan vid is %d / ipv4 / end actions "
                                "of_push_vlan ethertype 0x8100 / port_id id 2 / end\n",
                                vid);
        }
        break;
    }
  }
  text = Respell(text, rng);
  FileReport t, p;
  ASSERT_NO_FATAL_FAILURE(StreamBothWays(text, &t, &p));
  // Of 1,126 commands: those Respell breaks, each shape's first two and the VLAN pushes are parsed.
  EXPECT_GT(t.templated, 800u);
  EXPECT_EQ(p.templated, 0u);
  ExpectSameFlows();
}

// Flows with a mark each of their own (OVS marks every offloaded flow): the mark's id is a slot, first in
// the actions or after another, in shapes with pattern slots and without, beside flag, ids from 0 to the
// largest and spelled in hex, and a pattern's own `mark` item, which is none.
TEST_F(TemplateStreamTest, MarksOfTheirOwnEqualParsedOnes) {
  std::mt19937 rng(20261205);
  std::string text;
  for (int i = 0; i < 1500; ++i) {
    const uint32_t a = static_cast<uint32_t>(rng()), b = static_cast<uint32_t>(rng());
    uint32_t mark = 1 + static_cast<uint32_t>(i);
    if (i % 100 == 3) mark = 0;
    if (i % 100 == 4) mark = 0xffffef;  // the largest
    const std::string id = i % 7 == 0 ? absl::StrFormat("0x%x", mark) : absl::StrCat(mark);
    switch (rng() % 5) {
      case 0:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 pattern eth / ipv4 src is %s dst is %s / tcp src "
            "is %d dst is %d / end actions mark id %s / queue index %d / end\n",
            Ip4(a), Ip4(b), a >> 16, b >> 16, id, static_cast<int>(b % 4));
        break;
      case 1:
        absl::StrAppendFormat(&text,
                              "flow create 0 ingress group 1 pattern eth / ipv6 dst is fe80::%x / udp / end "
                              "actions queue index 2 / mark id %s / end\n",
                              a & 0xffff, id);
        break;
      case 2:  // no pattern slot: the mark is the shape's only one
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 2 pattern eth / ipv4 / udp / end actions mark id %s / "
            "drop / end\n",
            id);
        break;
      case 3:
        absl::StrAppendFormat(
            &text,
            "flow create 0 ingress group 1 pattern eth / ipv4 dst is %s / end actions flag / "
            "queue index 1 / end\n",
            Ip4(b));
        break;
      case 4:
        absl::StrAppendFormat(&text,
                              "flow create 0 ingress group 1 priority 1 pattern eth / ipv4 src is %s / end "
                              "actions mark  id %s / queue index 3 / end\n",
                              Ip4(a), id);
        break;
    }
    if (i % 211 == 210) absl::StrAppendFormat(&text, "flow destroy 0 rule %d\n", i / 3);
  }
  text = Respell(text, rng);
  FileReport t, p;
  ASSERT_NO_FATAL_FAILURE(StreamBothWays(text, &t, &p));
  EXPECT_GT(t.templated,
            1000u);  // of about 1,500: those Respell breaks and each shape's first two are parsed
  EXPECT_EQ(p.templated, 0u);
  ExpectSameFlows();
}

// A mark id above the largest in a templated shape reads as the parser says, at its line.
TEST_F(TemplateStreamTest, MarkIdsAboveTheLargestReadAsParsedOnes) {
  std::string text;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppendFormat(
        &text,
        "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.%d / end actions mark id %d / "
        "queue index 1 / end\n",
        i, i);
  }
  text +=
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.9 / end actions mark id 0xfffff0 / queue index "
      "1 / end\n";
  text +=
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.9 / end actions mark id 0x1000000 / queue "
      "index 1 / end\n";
  FileReport t = StreamInto(templated_, text, true);
  FileReport p = StreamInto(parsed_, text, false);
  ASSERT_EQ(t.diagnostics.size(), 2u);
  ASSERT_EQ(p.diagnostics.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(t.diagnostics[i].ToString(), p.diagnostics[i].ToString());
  EXPECT_EQ(t.diagnostics[0].pos.line, 5);
  EXPECT_THAT(t.diagnostics[0].message, HasSubstr("id 0xfffff0 is above 0xffffef"));
  EXPECT_EQ(t.diagnostics[1].pos.line, 6);
}

TEST_F(TemplateStreamTest, ShapesPastTheLimitForgetThoseWithoutTemplates) {
  // Rules of a new shape each (a GRE protocol of their own, which is no slot), more than the 16,384 shapes a
  // stream keeps, between rules of one shape.
  constexpr int kRules = 17000;
  std::string text;
  for (int i = 0; i < kRules; ++i) {
    absl::StrAppendFormat(
        &text,
        "flow create 0 ingress pattern eth / ipv4 src is %s / gre protocol is %d / end actions queue "
        "index 1 / end\n",
        Ip4(0x0a000000 + static_cast<uint32_t>(i)), i);
    if (i % 2 == 0) {
      absl::StrAppendFormat(&text,
                            "flow create 0 ingress pattern eth / ipv4 dst is %s / end actions drop / end\n",
                            Ip4(0x0b000000 + static_cast<uint32_t>(i)));
    }
  }
  FileReport t = StreamInto(templated_, text, true);
  FileReport p = StreamInto(parsed_, text, false);
  ASSERT_TRUE(t.ok() && p.ok());
  EXPECT_EQ(t.commands, p.commands);
  EXPECT_EQ(t.templated, static_cast<size_t>(kRules / 2 - 2));
  ExpectSameFlows();
}

TEST_F(TemplateStreamTest, ErrorsOfTemplatedShapesReadAsParsedOnes) {
  std::string text;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppendFormat(
        &text,
        "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.%d / udp src is %d / end actions "
        "queue index 1 / end\n",
        i, 1000 + i);
  }
  // A value that does not read, and one too wide for its field, in the shape of the four before.
  text +=
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.300 / udp src is 1 / end actions queue index 1 "
      "/ "
      "end\n";
  text +=
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.9 / udp src is 70000 / end actions queue index "
      "1 / "
      "end\n";
  FileReport t = StreamInto(templated_, text, true);
  FileReport p = StreamInto(parsed_, text, false);
  ASSERT_EQ(t.diagnostics.size(), 2u);
  ASSERT_EQ(p.diagnostics.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(t.diagnostics[i].ToString(), p.diagnostics[i].ToString());
  EXPECT_EQ(t.diagnostics[0].pos.line, 5);
  EXPECT_EQ(t.diagnostics[1].pos.line, 6);
  EXPECT_THAT(t.diagnostics[1].message, HasSubstr("src"));
  EXPECT_EQ(templated_.counts().rules, 0);  // a file with errors leaves nothing
}

TEST_F(TemplateStreamTest, TemplatesCopyOnlyPlainFlowsAndMakeNothingDrRefuses) {
  // (Group 1: DR refuses duplicates only below the root table.)
  ASSERT_TRUE(
      templated_.Execute(*ParseOne("flow create 0 ingress pattern eth / end actions jump group 1 / end"))
          .ok());
  absl::StatusOr<Command> c = ParseOne(
      "flow create 0 ingress group 1 pattern eth / ipv4 src is 10.0.0.1 / end actions queue index 1 / end");
  ASSERT_TRUE(c.ok());
  const FlowRule& rule = std::get<FlowCreateCmd>(c->body).rule;
  ASSERT_TRUE(templated_.Execute(*c).ok());
  const std::vector<PatternSlot> slots = {PatternSlot{1, FindField(*rule.pattern[1].def, "src")}};
  absl::StatusOr<std::shared_ptr<const FlowTemplate>> t = templated_.TemplateOfFlow(rule, 1, slots);
  ASSERT_TRUE(t.ok()) << t.status();
  const absl::uint128 other = hw::Ipv4Address::Parse("10.0.0.2")->value;
  absl::StatusOr<uint32_t> id = templated_.CreateFromTemplate(**t, {other}, 7);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, 2u);
  EXPECT_EQ(templated_.FlowLine(0, 2), 7);
  EXPECT_EQ(templated_nic_.ReceiveFromWire(Udp("10.0.0.2", "1.1.1.1", 1, 2)).qp_num,
            *templated_.QueueNumber(0, 1));
  // A duplicate DR refuses: nothing is made.
  for (const dr::Domain* d : templated_.Domains()) ASSERT_TRUE(d->AllowDuplicateRules(false).ok());
  const absl::uint128 first = hw::Ipv4Address::Parse("10.0.0.1")->value;
  EXPECT_EQ(templated_.CreateFromTemplate(**t, {first}, 8).status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(templated_.counts().flows, 3);
  EXPECT_EQ(templated_.counts().rules, 3);
  // Values not its slots', a flow with a counter of its own, and a flow that is not the port's last.
  EXPECT_EQ(templated_.CreateFromTemplate(**t, {}, 9).status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<Command> counted = ParseOne(
      "flow create 0 ingress group 1 pattern eth / ipv4 src is 10.0.0.5 / end actions count / queue index 1 "
      "/ "
      "end");
  ASSERT_TRUE(counted.ok());
  const FlowRule& counted_rule = std::get<FlowCreateCmd>(counted->body).rule;
  ASSERT_TRUE(templated_.Execute(*counted).ok());
  EXPECT_EQ(templated_.TemplateOfFlow(counted_rule, 3, slots).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(templated_.TemplateOfFlow(rule, 1, slots).status().code(), absl::StatusCode::kNotFound);
  // A flow of an indirect action: FlowsUsing must find the action among its holds.
  ASSERT_TRUE(
      templated_.Execute(*ParseOne("flow indirect_action 0 create action_id 5 ingress action count / end"))
          .ok());
  absl::StatusOr<Command> indirect = ParseOne(
      "flow create 0 ingress group 1 pattern eth / ipv4 src is 10.0.0.6 / end actions indirect 5 / queue "
      "index 1 / "
      "end");
  ASSERT_TRUE(indirect.ok());
  ASSERT_TRUE(templated_.Execute(*indirect).ok());
  const absl::Status refused =
      templated_.TemplateOfFlow(std::get<FlowCreateCmd>(indirect->body).rule, 4, slots).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.message(), HasSubstr("indirect"));
  t->reset();  // (before the engine goes)
}

TEST_F(EngineTest, AnEngineKeepingItsHistoryMakesNoTemplates) {
  absl::StatusOr<Command> c =
      ParseOne("flow create 0 ingress pattern eth / ipv4 src is 10.0.0.1 / end actions drop / end");
  ASSERT_TRUE(c.ok());
  const FlowRule& rule = std::get<FlowCreateCmd>(c->body).rule;
  ASSERT_TRUE(engine_.Execute(*c).ok());
  const std::vector<PatternSlot> slots = {PatternSlot{1, FindField(*rule.pattern[1].def, "src")}};
  EXPECT_EQ(engine_.TemplateOfFlow(rule, 0, slots).status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace drsim::testpmd
