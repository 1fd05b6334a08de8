#include "testpmd/parser.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ios>
#include <random>
#include <sstream>
#include <streambuf>
#include <string>
#include <utility>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "testpmd/lexer.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;

FlowRule MustParseRule(const std::string& text) {
  absl::StatusOr<Command> c = ParseOne(text);
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return {};
  if (auto* create = std::get_if<FlowCreateCmd>(&c->body)) return create->rule;
  if (auto* validate = std::get_if<FlowValidateCmd>(&c->body)) return validate->rule;
  ADD_FAILURE() << "not a flow create/validate: " << text;
  return {};
}

// The first error of `text`, as "line:col: message".
std::string FirstError(const std::string& text) {
  absl::StatusOr<Command> c = ParseOne(text);
  if (c.ok()) return "parsed";
  const SourcePos pos = PosOf(c.status()).value_or(SourcePos{});
  return absl::StrCat(pos.line, ":", pos.column, ": ", c.status().message());
}

TEST(LexerTest, TokensCommentsAndContinuations) {
  std::vector<CommandTokens> commands =
      Lex("# a comment\n"
          "\n"
          "flow flush 0   # trailing comment\n"
          "flow create 0 ingress \\\n"
          "   pattern end actions drop / end\n");
  ASSERT_THAT(commands, SizeIs(2));
  ASSERT_THAT(commands[0].tokens, SizeIs(3));
  EXPECT_EQ(commands[0].tokens[2].text, "0");
  EXPECT_EQ(commands[0].tokens[2].pos, (SourcePos{3, 12}));
  ASSERT_THAT(commands[1].tokens, SizeIs(10));
  EXPECT_EQ(commands[1].tokens[3].text, "ingress");
  EXPECT_EQ(commands[1].tokens[4].text, "pattern");
  EXPECT_EQ(commands[1].tokens[4].pos, (SourcePos{5, 4}));
}

TEST(LexerTest, SplitsOnEveryBlankInLongTokens) {
  // Tokens longer than a word of the scan, blanks of every kind, and a control character that is none.
  const std::string text =
      "flow\tcreate\v0x0123456789abcdef\x01z\f10.200.300.400/32\rend  aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n";
  std::vector<CommandTokens> commands = Lex(text);
  ASSERT_THAT(commands, SizeIs(1));
  std::vector<std::string> words;
  for (const Token& t : commands[0].tokens) words.emplace_back(t.text);
  EXPECT_THAT(words, ElementsAre("flow", "create", "0x0123456789abcdef\x01z", "10.200.300.400/32", "end",
                                 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
  EXPECT_EQ(commands[0].tokens[3].pos, (SourcePos{1, 34}));
  EXPECT_EQ(commands[0].tokens[5].pos, (SourcePos{1, 57}));
}

TEST(LexerTest, SkipsTestpmdPromptsOnlyWhereACommandStarts) {
  std::vector<CommandTokens> commands =
      Lex("testpmd> flow flush 0\n"
          "testpmd>flow flush 1\n"
          "flow flush testpmd>\n");
  ASSERT_THAT(commands, SizeIs(3));
  ASSERT_THAT(commands[0].tokens, SizeIs(3));
  EXPECT_EQ(commands[0].tokens[0].text, "flow");
  EXPECT_EQ(commands[0].tokens[0].pos, (SourcePos{1, 10}));
  EXPECT_EQ(commands[1].tokens[0].text, "testpmd>flow");  // not a prompt: testpmd prints a blank after it
  ASSERT_THAT(commands[2].tokens, SizeIs(3));
  EXPECT_EQ(commands[2].tokens[2].text, "testpmd>");
}

TEST(LexerTest, SplitsLinesWithAndWithoutCommentsAlike) {
  // Lines without a '#' or a backslash are split by a map of their blanks, the others a byte at a time:
  // the same line, with a comment after it, must give the same tokens. Lengths around the map's 64-byte
  // words and past its end (over 511 bytes: the byte loop again), tokens across words, every blank.
  std::mt19937 random(20261130);
  const std::string alphabet = std::string("ab0/.:x") + " \t\v\f\r" + '\x01' + '\x7f' + "testpmd>";
  for (int round = 0; round < 3000; ++round) {
    const size_t length = round < 1200 ? static_cast<size_t>(round % 600) : random() % 700;
    std::string line;
    for (size_t k = 0; k < length; ++k) line += alphabet[random() % alphabet.size()];
    if (round % 7 == 0) line = "testpmd> " + line;
    if (round % 11 == 0) line = "testpmd>\ttestpmd> " + line;
    const std::string plain = line + "\nflow", commented = line + " # a comment\nflow";
    const std::vector<CommandTokens> mapped = Lex(plain);  // (views of the texts)
    const std::vector<CommandTokens> by_bytes = Lex(commented);
    ASSERT_EQ(mapped.size(), by_bytes.size()) << line;
    for (size_t c = 0; c < mapped.size(); ++c) {
      ASSERT_EQ(mapped[c].tokens.size(), by_bytes[c].tokens.size()) << line;
      for (size_t t = 0; t < mapped[c].tokens.size(); ++t) {
        EXPECT_EQ(mapped[c].tokens[t].text, by_bytes[c].tokens[t].text) << line;
        EXPECT_EQ(mapped[c].tokens[t].pos, by_bytes[c].tokens[t].pos) << line;
      }
      EXPECT_EQ(mapped[c].end, by_bytes[c].end) << line;
    }
  }
}

// CommandStream reads its stream in chunks of a huge page and lexes lines where they lie: it gives Lex's
// commands wherever lines and continued commands fall against the chunks' edges, however long a line is,
// and with or without a last newline. A line offered to `take_line` is the text's line; one it takes is
// no command.
TEST(CommandStreamTest, GivesLexsCommandsAcrossChunkEdges) {
  std::mt19937 random(20261202);
  std::string text;
  while (text.size() < (size_t{5} << 20)) {
    switch (random() % 8) {
      case 0:
        text += "\n";
        break;
      case 1:
        text += "# a comment, not continued \\\n";
        break;
      case 2:
        text += "flow create 0 ingress \\\n  pattern eth / end \\ \r\n actions drop / end\n";
        break;
      case 3:
        text += "flow destroy 0 rule " + std::string(1 + random() % 3000, '7') + "\r\n";
        break;
      default:
        text += absl::StrCat("flow create 0 ingress pattern eth / ipv4 src is 10.0.", random() % 256, ".",
                             random() % 256, " / end actions queue index ", random() % 16, " / end\n");
    }
  }
  // A line longer than a chunk, continued by one nearly a chunk long; no newline at the end.
  text += "flow list 0 " + std::string(size_t{3} << 20, 'x') + " \\\n" +
          std::string((size_t{2} << 20) - 5, 'y') + "\nflow flush 0";
  const std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  for (const bool take_destroys : {false, true}) {
    SCOPED_TRACE(take_destroys ? "destroys taken" : "nothing taken");
    std::vector<CommandTokens> expected;
    for (CommandTokens& command : Lex(text)) {
      if (take_destroys && command.tokens[1].text == "destroy") continue;
      expected.push_back(std::move(command));
    }
    std::istringstream in(text);
    CommandStream stream(in);
    CommandTokens command;
    size_t given = 0, offered = 0, taken = 0;
    auto take_line = [&](absl::string_view line, int line_number) {
      ++offered;
      EXPECT_EQ(line, lines[line_number - 1]) << "line " << line_number;
      const bool take = take_destroys && absl::StartsWith(line, "flow destroy");
      taken += take;
      return take;
    };
    while (stream.Next(&command, take_line)) {
      ASSERT_LT(given, expected.size());
      const CommandTokens& want = expected[given++];
      ASSERT_EQ(command.tokens.size(), want.tokens.size()) << "command " << given;
      for (size_t t = 0; t < want.tokens.size(); ++t) {
        ASSERT_EQ(command.tokens[t].text, want.tokens[t].text) << "command " << given;
        ASSERT_EQ(command.tokens[t].pos, want.tokens[t].pos) << "command " << given;
      }
      ASSERT_EQ(command.end, want.end) << "command " << given;
    }
    EXPECT_EQ(given, expected.size());
    EXPECT_GT(offered, given);  // (blank and comment lines are offered too)
    EXPECT_EQ(taken > 0, take_destroys);
  }
  // The last line longer than a chunk, without a newline.
  const std::string last = "\nflow list 0 " + std::string(size_t{5} << 20, 'z');
  std::istringstream in(last);
  CommandStream stream(in);
  CommandTokens command;
  ASSERT_TRUE(stream.Next(&command));
  ASSERT_THAT(command.tokens, SizeIs(4));
  EXPECT_EQ(command.tokens[3].text, absl::string_view(last).substr(13));
  EXPECT_EQ(command.end, (SourcePos{2, static_cast<int>(last.size())}));
  EXPECT_FALSE(stream.Next(&command));
}

// The commands CommandStream gives of `text`, checked against Lex's.
void ExpectLexsCommands(const std::string& text) {
  const std::vector<CommandTokens> expected = Lex(text);
  std::istringstream in(text);
  CommandStream stream(in);
  CommandTokens command;
  size_t given = 0;
  while (stream.Next(&command)) {
    ASSERT_LT(given, expected.size());
    const CommandTokens& want = expected[given++];
    ASSERT_EQ(command.tokens.size(), want.tokens.size()) << "command " << given;
    for (size_t t = 0; t < want.tokens.size(); ++t) {
      ASSERT_EQ(command.tokens[t].text, want.tokens[t].text) << "command " << given << " token " << t;
      ASSERT_EQ(command.tokens[t].pos, want.tokens[t].pos) << "command " << given << " token " << t;
    }
    ASSERT_EQ(command.end, want.end) << "command " << given;
  }
  EXPECT_EQ(given, expected.size());
  EXPECT_EQ(stream.read_error(), 0);
}

// Lines placed on the chunk's edge: a continued line ending just before it (its tokens must outlive the
// read of the next chunk), a newline and a '\r' on either side of it, lines of the chunk's size and one
// byte either way, a continued line longer than a chunk, and no text at all.
TEST(CommandStreamTest, GivesLexsCommandsAtTheChunksEdge) {
  constexpr size_t kChunk = size_t{2} << 20;  // CommandStream's chunk (a huge page)
  // A comment line that ends `bytes` into the text (newline included).
  auto pad = [](size_t bytes) { return "#" + std::string(bytes - 2, 'p') + "\n"; };
  const std::string continued = "flow create 0 ingress pattern eth / end \\\n";
  const std::string rest = " actions queue index 3 / end\nflow flush 0\n";
  for (size_t before_edge = 0; before_edge < 4; ++before_edge) {
    SCOPED_TRACE(absl::StrCat("the continued line ends ", before_edge, " bytes before the edge"));
    ExpectLexsCommands(pad(kChunk - before_edge - continued.size()) + continued + rest);
    // Twice: the second chunk's edge falls after lines taken from a moved partial line.
    ExpectLexsCommands(pad(kChunk - before_edge - continued.size()) + continued + rest +
                       pad(kChunk - 1000 - before_edge - rest.size()) + continued + rest);
  }
  ExpectLexsCommands(pad(kChunk - 14) + "flow flush 0\r\nflow flush 1\r\n");  // the '\r' last in the chunk
  ExpectLexsCommands(pad(kChunk - 13) + "flow flush 0\r\nflow flush 1\r\n");  // the '\n' last
  for (const size_t line : {kChunk - 1, kChunk, kChunk + 1}) {
    SCOPED_TRACE(absl::StrCat("a line of ", line, " bytes"));
    const std::string token = std::string(line - 13, 'v');
    ExpectLexsCommands("flow flush 0\nflow list 0 " + token + "\nflow flush 1\n");
  }
  ExpectLexsCommands("flow list 0 " + std::string(kChunk + 7, 'l') + " \\\n" + std::string(kChunk + 9, 'm') +
                     "\nflow flush 2\n");
  ExpectLexsCommands("");
  ExpectLexsCommands("\n");
}

// A stream whose reading fails: the commands of the lines read before, then the read's errno.
TEST(CommandStreamTest, StopsAtAFailedReadWithItsErrno) {
  // Gives `text`'s first `whole` bytes in one read, then fails with `error`.
  class FailingBuffer : public std::streambuf {
   public:
    FailingBuffer(std::string text, int error) : text_(std::move(text)), error_(error) {}

   protected:
    std::streamsize xsgetn(char* to, std::streamsize n) override {
      if (at_ == text_.size()) {
        errno = error_;
        throw std::ios_base::failure("read failed");
      }
      const size_t bytes = std::min(text_.size() - at_, static_cast<size_t>(n));
      std::memcpy(to, text_.data() + at_, bytes);
      at_ += bytes;
      return static_cast<std::streamsize>(bytes);
    }

   private:
    std::string text_;
    size_t at_ = 0;
    int error_;
  };
  {  // the first read fails
    FailingBuffer buffer("", EISDIR);
    std::istream in(&buffer);
    CommandStream stream(in);
    CommandTokens command;
    EXPECT_FALSE(stream.Next(&command));
    EXPECT_EQ(stream.read_error(), EISDIR);
  }
  {  // a chunk of whole lines but the last, then a failure: the last line and the open command are not given
    constexpr size_t kChunk = size_t{2} << 20;  // CommandStream's chunk (a huge page)
    std::string text;
    for (int i = 0; text.size() + 40 < kChunk; ++i) text += absl::StrCat("flow flush ", i, "\n");
    text += "flow create 0 ingress \\\n";  // a command continued
    text.resize(kChunk, 'x');              // and a line cut short by the failure
    const size_t lines = std::count(text.begin(), text.end(), '\n');
    FailingBuffer buffer(text, EIO);
    std::istream in(&buffer);
    CommandStream stream(in);
    CommandTokens command;
    size_t given = 0;
    while (stream.Next(&command)) {
      ASSERT_EQ(command.tokens.size(), 3u);
      EXPECT_EQ(command.tokens[2].text, absl::StrCat(given));
      ++given;
    }
    EXPECT_EQ(given, lines - 1);
    EXPECT_EQ(stream.read_error(), EIO);
    EXPECT_EQ(stream.lines(), static_cast<int>(lines));
  }
  {  // a stream that ends is no error
    std::istringstream in("flow flush 0");
    CommandStream stream(in);
    CommandTokens command;
    EXPECT_TRUE(stream.Next(&command));
    EXPECT_FALSE(stream.Next(&command));
    EXPECT_EQ(stream.read_error(), 0);
  }
}

TEST(ParserTest, AttributesPatternAndActions) {
  FlowRule r = MustParseRule(
      "flow create 3 ingress group 1 priority 2 pattern eth / ipv4 src is 10.0.0.1 dst spec 10.0.0.0 "
      "dst mask 255.255.255.0 / tcp dst is 80 / end actions mark id 5 / queue index 1 / end");
  EXPECT_EQ(r.port, 3);
  EXPECT_TRUE(r.attr.ingress);
  EXPECT_FALSE(r.attr.egress);
  EXPECT_EQ(r.attr.group, 1u);
  EXPECT_EQ(r.attr.priority, 2u);
  ASSERT_THAT(r.pattern, SizeIs(3));
  EXPECT_EQ(r.pattern[0].def->name, "eth");
  EXPECT_FALSE(r.pattern[0].mask_given);
  const Item& ipv4 = r.pattern[1];
  EXPECT_TRUE(ipv4.mask_given);
  const ItemWord& src = ipv4.words[FindField(*ipv4.def, "src")->storage];
  EXPECT_EQ(src.spec, 0x0a000001);
  EXPECT_EQ(src.mask, 0xffffffff);
  const ItemWord& dst = ipv4.words[FindField(*ipv4.def, "dst")->storage];
  EXPECT_EQ(dst.spec, 0x0a000000);
  EXPECT_EQ(dst.mask, 0xffffff00);
  ASSERT_THAT(r.actions, SizeIs(2));
  EXPECT_EQ(r.actions[0].def->type, ActionType::kMark);
  EXPECT_EQ(r.actions[0].Find("id")->value.number, 5);
  EXPECT_EQ(r.actions[1].Find("index")->value.number, 1);
}

TEST(ParserTest, FieldForms) {
  // prefix, last, repeated mentions (the last one counts), sub-fields sharing a word.
  FlowRule r = MustParseRule(
      "flow create 0 ingress pattern eth / ipv4 src spec 10.1.1.1 src prefix 24 src prefix 16 "
      "dst is 10.1.1.1 dst last 10.2.3.4 / end actions drop / end");
  const Item& ipv4 = r.pattern[1];
  const ItemWord& src = ipv4.words[FindField(*ipv4.def, "src")->storage];
  EXPECT_EQ(src.mask, 0xffff0000);
  EXPECT_TRUE(src.spec_set);
  EXPECT_FALSE(src.last_set);
  const ItemWord& dst = ipv4.words[FindField(*ipv4.def, "dst")->storage];
  EXPECT_TRUE(dst.last_set);
  EXPECT_EQ(dst.last, 0x0a020304);

  r = MustParseRule("flow create 0 ingress pattern eth / vlan vid is 100 pcp is 3 / end actions drop / end");
  const ItemWord& tci = r.pattern[1].words[0];
  EXPECT_EQ(tci.spec, (3 << 13) | 100);
  EXPECT_EQ(tci.mask, 0xe000 | 0x0fff);

  // A spec without any mask keeps mask_given false: rte_flow's default mask applies later.
  r = MustParseRule("flow create 0 ingress pattern eth / udp dst spec 4789 / end actions drop / end");
  EXPECT_FALSE(r.pattern[1].mask_given);
  EXPECT_TRUE(r.pattern[1].words[1].spec_set);
}

TEST(ParserTest, EverySupportedItem) {
  const char* items[] = {
      "eth dst is 00:11:22:33:44:55 src is 02:00:00:00:00:01 type is 0x0800 has_vlan is 0",
      "vlan tci is 5 pcp is 1 dei is 0 vid is 10 inner_type is 0x0800 has_more_vlan is 0",
      ("ipv4 version_ihl is 0x45 tos is 4 ttl is 64 proto is 6 src is 1.2.3.4 dst is 5.6.7.8 fragment_offset "
       "is 0"),
      "ipv6 tc is 1 flow is 5 proto is 17 hop is 64 src is 2001:db8::1 dst is ::1 has_frag_ext is 0",
      "icmp type is 8 code is 0 ident is 1 seq is 2",
      "icmp6 type is 128 code is 0",
      "udp src is 1 dst is 4789",
      "tcp src is 1 dst is 80 flags is 2",
      "vxlan vni is 42 flag_i is 1 last_rsvd is 0",
      "vxlan-gpe vni is 42 protocol is 3 flags is 12",
      "geneve vni is 9 protocol is 0x6558 optlen is 0",
      "gre protocol is 0x0800 c_bit is 0 k_bit is 1 s_bit is 0",
      "gre_key value is 0x1234",
      "nvgre tni is 77",
      "mpls label is 100 tc is 1 s is 1 ttl is 64",
      "gtp teid is 5 msg_type is 255 v_pt_rsv_flags is 0x30",
      "gtpu teid is 6",
      "gtp_psc qfi is 9 pdu_t is 1",
      "ib_bth opcode is 4 dst_qp is 0x12",
      "meta data is 7",
      "tag data is 3 index is 1",
      "port_id id is 1",
      "represented_port ethdev_port_id is 2",
      "meter color is green",
      "void",
  };
  for (const char* item : items) {
    const std::string text =
        absl::StrCat("flow validate 0 transfer pattern ", item, " / end actions drop / end");
    FlowRule r = MustParseRule(text);
    ASSERT_THAT(r.pattern, SizeIs(1)) << item;
    EXPECT_TRUE(r.pattern[0].def != nullptr) << item;
  }
}

TEST(ParserTest, EverySupportedAction) {
  const char* actions[] = {
      "void",
      "drop",
      "queue index 3",
      "rss func toeplitz level 0 types ipv4-tcp l3-src-only end key 0x0102 key_len 40 queues 0 1 2 3 end",
      "mark id 0x1234",
      "flag",
      "jump group 2",
      "count identifier 1",
      "meter mtr_id 1",
      "port_id original 0 id 1",
      "represented_port ethdev_port_id 1",
      "raw_encap index 2",
      "raw_decap index 3",
      "vxlan_encap",
      "vxlan_decap",
      "nvgre_encap",
      "nvgre_decap",
      "of_push_vlan ethertype 0x8100",
      "of_set_vlan_vid vlan_vid 100",
      "of_set_vlan_pcp vlan_pcp 3",
      "of_pop_vlan",
      "of_set_nw_ttl nw_ttl 9",
      "of_dec_nw_ttl",
      "set_mac_src mac_addr 02:00:00:00:00:01",
      "set_mac_dst mac_addr 02:00:00:00:00:02",
      "set_ipv4_src ipv4_addr 1.1.1.1",
      "set_ipv4_dst ipv4_addr 2.2.2.2",
      "set_ipv6_src ipv6_addr 2001:db8::1",
      "set_ipv6_dst ipv6_addr 2001:db8::2",
      "set_tp_src port 1000",
      "set_tp_dst port 2000",
      "set_ttl ttl_value 7",
      "dec_ttl",
      "set_ipv4_dscp dscp_value 46",
      "set_ipv6_dscp dscp_value 46",
      "inc_tcp_seq value 1",
      "dec_tcp_seq value 1",
      "inc_tcp_ack value 1",
      "dec_tcp_ack value 1",
      "set_tag data 0x1234 index 1 mask 0xffff",
      "set_meta data 0x55 mask 0xff",
      "modify_field op set dst_type ipv4_ttl src_type value src_value 0x40 width 8",
      ("modify_field op add dst_type tcp_seq_num dst_level 1 dst_offset 0 src_type value src_value 0x10 "
       "width 32"),
      "sample ratio 2 index 0",
  };
  for (const char* action : actions) {
    const std::string text = absl::StrCat("flow validate 0 ingress pattern end actions ", action, " / end");
    FlowRule r = MustParseRule(text);
    ASSERT_THAT(r.actions, SizeIs(1)) << action;
  }
  FlowRule r =
      MustParseRule("flow create 0 ingress pattern end actions rss types ip udp end queues 4 5 end / end");
  const Action& rss = r.actions[0];
  ASSERT_THAT(rss.Find("types")->value.list, SizeIs(2));
  EXPECT_EQ(rss.Find("types")->value.list[1].text, "udp");
  ASSERT_THAT(rss.Find("queues")->value.list, SizeIs(2));
  EXPECT_EQ(rss.Find("queues")->value.list[1].number, 5);
}

TEST(ParserTest, ErrorPositionsSayWhatWasExpected) {
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth / ipv4 src is 10.0.0 / end actions drop / end"),
            "1:49: expected an IPv4 address (a.b.c.d) for ipv4 field 'src', found '10.0.0'");
  EXPECT_EQ(
      FirstError("flow create 0 ingress pattern eth / ipv4 sorc is 1.1.1.1 / end actions drop / end"),
      "1:42: expected a field of item 'ipv4' (version_ihl, tos, length, packet_id, fragment_offset, ttl, "
      "proto, src, dst) or '/', found 'sorc'");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth / udp dst equals 3 / end actions drop / end"),
            "1:45: expected is, spec, last, mask or prefix after 'dst', found 'equals'");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth / vlan vid is 5000 / end actions drop / end"),
            "1:49: 5000 does not fit vlan field 'vid' (12 bits)");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth ipv4 / end actions drop / end"),
            "1:35: expected a field of item 'eth' (dst, src, type, has_vlan) or '/', found 'ipv4'");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth / end actions queue index / end"),
            "1:61: expected an unsigned number of at most 16 bits for queue parameter 'index', found '/'");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth / end actions drop / end extra"),
            "1:60: expected end of line, found 'extra'");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth / end"), "1:40: expected 'actions' at end of line");
  EXPECT_EQ(FirstError("flow create 0 ingres pattern end actions end"),
            "1:15: expected group, priority, ingress, egress, transfer, user_id or pattern, found 'ingres'");
  EXPECT_EQ(
      FirstError("flow make 0"),
      "1:6: expected validate, create, destroy, flush, list, query, aged or indirect_action after 'flow', "
      "found 'make'");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern eth / tag index spec 1 / end actions drop / end"),
            "1:47: expected 'is' after 'index', found 'spec'");
  EXPECT_THAT(FirstError("flow create 0 ingress pattern eth / end actions rss types ipv4-tcp / end"),
              HasSubstr("1:68: expected a value of rss parameter 'types' (all, none, ip, udp, tcp,"));
}

TEST(ParserTest, UnsupportedItemsAndActionsNameTheReason) {
  absl::StatusOr<Command> c = ParseOne("flow create 0 ingress pattern eth / sctp / end actions drop / end");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(c.status().message(), HasSubstr("pattern item 'sctp' is not supported: the mlx5 match layout"));
  EXPECT_EQ(PosOf(c.status())->column, 37);

  c = ParseOne("flow create 0 ingress pattern end actions passthru / end");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(c.status().message(), HasSubstr("action 'passthru' is not supported"));
}

TEST(ParserTest, RecoversAtSlashAndReportsEveryError) {
  std::vector<CommandTokens> tokens = Lex(
      "flow create 0 ingress pattern eth / ipv4 src is 1.2.3 / udp dst is 99999 / end actions queue index x "
      "/ drop / fly / end");
  ParsedCommand p = ParseCommand(tokens[0]);
  EXPECT_FALSE(p.command.has_value());
  ASSERT_THAT(p.errors, SizeIs(4));
  EXPECT_THAT(p.errors[0].message(), HasSubstr("'1.2.3'"));
  EXPECT_THAT(p.errors[1].message(), HasSubstr("99999 does not fit udp field 'dst'"));
  EXPECT_THAT(p.errors[2].message(), HasSubstr("found 'x'"));
  EXPECT_THAT(p.errors[3].message(), HasSubstr("expected an action or 'end', found 'fly'"));
}

TEST(ParserTest, ParseTextReportsEveryLine) {
  ParsedText t = ParseText(
      "flow create 0 ingress pattern eth / end actions drop / end\n"
      "flow create 0 ingress pattern eth / ip / end actions drop / end\n"
      "# ok\n"
      "flow destroy 0 rule\n"
      "flow flush 0\n");
  EXPECT_THAT(t.commands, SizeIs(2));
  ASSERT_THAT(t.errors, SizeIs(2));
  EXPECT_EQ(PosOf(t.errors[0])->line, 2);
  EXPECT_EQ(PosOf(t.errors[0])->column, 37);
  EXPECT_EQ(PosOf(t.errors[1])->line, 4);
  EXPECT_THAT(t.errors[1].message(), HasSubstr("expected a rule id at end of line"));
}

TEST(ParserTest, FlowManagementCommands) {
  absl::StatusOr<Command> c = ParseOne("flow destroy 1 rule 0 rule 7");
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& destroy = std::get<FlowDestroyCmd>(c->body);
  EXPECT_EQ(destroy.port, 1);
  EXPECT_EQ(destroy.rule_ids, (std::vector<uint32_t>{0, 7}));

  c = ParseOne("flow list 0 group 1 group 3");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<FlowListCmd>(c->body).groups, (std::vector<uint32_t>{1, 3}));

  c = ParseOne("flow query 0 4 count");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<FlowQueryCmd>(c->body).rule_id, 4u);
  EXPECT_EQ(FirstError("flow query 0 4 rss"),
            "1:16: expected 'count' or 'age' (the queryable actions), found 'rss'");
  c = ParseOne("flow query 0 77 age user_id");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<FlowQueryCmd>(c->body).what, FlowQueryCmd::What::kAge);
  EXPECT_TRUE(std::get<FlowQueryCmd>(c->body).by_user_id);
  c = ParseOne("flow aged 1 destroy");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<FlowAgedCmd>(c->body).port, 1);
  EXPECT_TRUE(std::get<FlowAgedCmd>(c->body).destroy);
  EXPECT_EQ(FirstError("flow aged 0 now"), "1:13: expected end of line, found 'now'");

  c = ParseOne("flow flush 2");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<FlowFlushCmd>(c->body).port, 2);
}

TEST(ParserTest, SetCommands) {
  absl::StatusOr<Command> c = ParseOne(
      "set raw_encap 4 eth src is 10:11:22:33:44:55 / vlan tci is 1 inner_type is 0x0800 / ipv4 / udp dst is "
      "4789 / vxlan vni is 2 / end_set");
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& raw = std::get<SetRawCmd>(c->body);
  EXPECT_FALSE(raw.decap);
  EXPECT_EQ(raw.index, 4u);
  EXPECT_THAT(raw.items, SizeIs(5));

  c = ParseOne("set raw_decap eth / ipv4 / udp / vxlan / end_set");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(std::get<SetRawCmd>(c->body).decap);
  EXPECT_EQ(std::get<SetRawCmd>(c->body).index, 0u);

  c = ParseOne("set sample_actions 0 mark id 0x1234 / queue index 0 / end");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(std::get<SetSampleActionsCmd>(c->body).actions, SizeIs(2));

  c = ParseOne(
      "set vxlan ip-version ipv4 vni 4 udp-src 4 udp-dst 4789 ip-src 127.0.0.1 ip-dst 128.0.0.1 eth-src "
      "11:11:11:11:11:11 eth-dst 22:22:22:22:22:22");
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& vxlan = std::get<SetTunnelCmd>(c->body);
  EXPECT_EQ(vxlan.vni, 4u);
  EXPECT_EQ(vxlan.udp_dst, 4789);
  EXPECT_EQ(vxlan.ipv4_dst.value, 0x80000001u);
  EXPECT_EQ(vxlan.eth_dst.bytes[0], 0x22);

  c = ParseOne(
      "set vxlan-tos-ttl ip-version ipv6 vni 4 udp-src 4 udp-dst 4 ip-tos 0 ip-ttl 255 ip-src ::1 ip-dst "
      "::2222 "
      "eth-src 11:11:11:11:11:11 eth-dst 22:22:22:22:22:22");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(std::get<SetTunnelCmd>(c->body).ipv6);
  EXPECT_EQ(std::get<SetTunnelCmd>(c->body).ip_ttl, 255);

  c = ParseOne(
      "set nvgre-with-vlan ip-version ipv4 tni 4 ip-src 127.0.0.1 ip-dst 128.0.0.1 vlan-tci 34 eth-src "
      "11:11:11:11:11:11 eth-dst 22:22:22:22:22:22");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<SetTunnelCmd>(c->body).kind, SetTunnelCmd::Kind::kNvgre);
  EXPECT_EQ(std::get<SetTunnelCmd>(c->body).vlan_tci, 34);

  EXPECT_EQ(FirstError("set vxlan ip-version ipv4 vni 4 udp-dst 4"),
            "1:33: expected 'udp-src', found 'udp-dst'");
}

TEST(ParserTest, MeterCommands) {
  absl::StatusOr<Command> c = ParseOne("add port meter profile srtcm_rfc2697 0 13 21504 2688 0 0");
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& srtcm = std::get<AddMeterProfileCmd>(c->body);
  EXPECT_EQ(srtcm.profile_id, 13u);
  EXPECT_EQ(srtcm.cir, 21504u);
  EXPECT_EQ(srtcm.cbs, 2688u);

  c = ParseOne("add port meter profile trtcm_rfc2698 0 1 1000 2000 100 200");
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& trtcm = std::get<AddMeterProfileCmd>(c->body);
  EXPECT_EQ(trtcm.algorithm, MeterAlgorithm::kTrTcmRfc2698);
  EXPECT_EQ(trtcm.eir, 2000u);
  EXPECT_EQ(trtcm.ebs, 200u);

  c = ParseOne("add port meter policy 0 1 g_actions queue index 0 / end y_actions end r_actions drop / end");
  ASSERT_TRUE(c.ok()) << c.status();
  const auto& policy = std::get<AddMeterPolicyCmd>(c->body);
  EXPECT_THAT(policy.green, SizeIs(1));
  EXPECT_THAT(policy.yellow, SizeIs(0));
  EXPECT_THAT(policy.red, SizeIs(1));

  c = ParseOne("create port meter 0 1 13 1 yes 0xffff 0 g 0");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<CreateMeterCmd>(c->body).profile_id, 13u);
  c = ParseOne("create port meter 0 1 13 1 yes 0xffff 0 0");
  ASSERT_TRUE(c.ok()) << c.status();

  c = ParseOne("del port meter profile 0 13");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<MeterObjectCmd>(c->body).op, MeterObjectCmd::Op::kDeleteProfile);
  c = ParseOne("disable port meter 0 1");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<MeterObjectCmd>(c->body).op, MeterObjectCmd::Op::kDisable);
}

TEST(ParserTest, ModifyFieldOrder) {
  EXPECT_EQ(FirstError("flow create 0 egress pattern end actions modify_field dst_type ipv4_ttl op set "
                       "src_type value src_value 1 width 8 / end"),
            "1:55: expected 'op' in modify_field, found 'dst_type'");
  EXPECT_EQ(
      FirstError("flow create 0 egress pattern end actions modify_field op set dst_type ipv4_ttl "
                 "src_type value / end"),
      "1:42: modify_field needs op, dst_type, src_type and width, in that order; expected src_* options "
      "or 'width' next");
}

TEST(ValuesTest, NumbersFollowStrtoumaxBaseZero) {
  EXPECT_EQ(*ParseUnsigned(Token{"0x10", {}}, 16, "x"), 16u);
  EXPECT_EQ(*ParseUnsigned(Token{"010", {}}, 16, "x"), 8u);
  EXPECT_EQ(*ParseUnsigned(Token{"10", {}}, 16, "x"), 10u);
  EXPECT_FALSE(ParseUnsigned(Token{"09", {}}, 16, "x").ok());
  EXPECT_FALSE(ParseUnsigned(Token{"65536", {}}, 16, "x").ok());
  EXPECT_EQ(*ParseUnsigned(Token{"65535", {}}, 16, "x"), 65535u);
  // 64 bits: the largest value in each base, and one more, which overflows.
  EXPECT_EQ(*ParseUnsigned(Token{"18446744073709551615", {}}, 64, "x"), ~uint64_t{0});
  EXPECT_EQ(*ParseUnsigned(Token{"0xffffffffffffffff", {}}, 64, "x"), ~uint64_t{0});
  EXPECT_EQ(*ParseUnsigned(Token{"01777777777777777777777", {}}, 64, "x"), ~uint64_t{0});
  EXPECT_FALSE(ParseUnsigned(Token{"18446744073709551616", {}}, 64, "x").ok());
  EXPECT_FALSE(ParseUnsigned(Token{"0x10000000000000000", {}}, 64, "x").ok());
  EXPECT_FALSE(ParseUnsigned(Token{"02000000000000000000000", {}}, 64, "x").ok());
  EXPECT_FALSE(ParseUnsigned(Token{"18446744073709551615", {}}, 63, "x").ok());
  EXPECT_EQ(*ParseHex(Token{"0xabc", {}}, "x"), (std::vector<uint8_t>{0x0a, 0xbc}));
}

}  // namespace
TEST(ParserTest, AgeIndirectAndIndirectActionCommands) {
  absl::StatusOr<Command> c = ParseOne(
      "flow create 0 group 1 user_id 9 ingress pattern end actions age timeout 30 / indirect 4 / drop / "
      "end");
  ASSERT_TRUE(c.ok()) << c.status();
  const FlowRule& rule = std::get<FlowCreateCmd>(c->body).rule;
  EXPECT_EQ(rule.attr.user_id, 9u);
  ASSERT_EQ(rule.actions.size(), 3u);
  EXPECT_EQ(rule.actions[0].Find("timeout")->value.number, 30u);
  EXPECT_EQ(rule.actions[1].def->type, ActionType::kIndirect);
  EXPECT_EQ(rule.actions[1].Find("action_id")->value.number, 4u);
  EXPECT_EQ(FirstError("flow create 0 ingress pattern end actions indirect / drop / end"),
            "1:52: expected an unsigned number of at most 32 bits for the indirect action id, found '/'");
  EXPECT_EQ(FirstError("flow create 0 ingress pattern end actions age_update / end"),
            "1:43: action 'age_update' is not supported: updating an age through a flow is HW steering only");

  c = ParseOne("flow indirect_action 0 create action_id 7 ingress transfer action count / end");
  ASSERT_TRUE(c.ok()) << c.status();
  const IndirectActionCmd& create = std::get<IndirectActionCmd>(c->body);
  EXPECT_EQ(create.op, IndirectActionCmd::Op::kCreate);
  EXPECT_EQ(create.ids, std::vector<uint32_t>{7});
  EXPECT_TRUE(create.ingress && create.transfer && !create.egress);
  ASSERT_EQ(create.actions.size(), 1u);
  EXPECT_EQ(create.actions[0].def->type, ActionType::kCount);

  c = ParseOne("flow indirect_action 0 destroy action_id 7 action_id 8");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<IndirectActionCmd>(c->body).ids, (std::vector<uint32_t>{7, 8}));
  c = ParseOne("flow indirect_action 0 update 7 action age timeout 3 / end");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<IndirectActionCmd>(c->body).op, IndirectActionCmd::Op::kUpdate);
  c = ParseOne("flow indirect_action 0 query 7");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::get<IndirectActionCmd>(c->body).op, IndirectActionCmd::Op::kQuery);

  EXPECT_EQ(FirstError("flow indirect_action 0 create action_id 1 action_id 2 action count / end"),
            "1:43: expected one action_id, found 'action_id'");
  EXPECT_EQ(FirstError("flow indirect_action 0 create ingres action count / end"),
            "1:31: expected action_id, ingress, egress, transfer or action, found 'ingres'");
  EXPECT_EQ(FirstError("flow indirect_action 0 query 7 8"), "1:32: expected end of line, found '8'");
  EXPECT_EQ(FirstError("flow indirect_action 0 update 7 count / end"),
            "1:33: expected 'action', found 'count'");
}

}  // namespace drsim::testpmd

namespace drsim::testpmd {
namespace {

// Every value of a flow rule the parser sets, as text.
std::string DescribeRule(const FlowRule& r) {
  std::string out = absl::StrCat(
      "port ", r.port, "@", r.port_pos.column, " group ", r.attr.group, " priority ", r.attr.priority, " ",
      r.attr.ingress, r.attr.egress, r.attr.transfer, " user_id ", r.attr.user_id.value_or(0),
      r.attr.user_id ? "+" : "-", " @", r.pattern_pos.column, "/", r.actions_pos.column, ":");
  for (const Item& item : r.pattern) {
    absl::StrAppend(&out, " ", item.def->name, "@", item.pos.column, item.mask_given ? "m" : "", "[");
    for (const ItemWord& w : item.words) {
      absl::StrAppend(&out, absl::Uint128Low64(w.spec), "/", absl::Uint128Low64(w.last), "/",
                      absl::Uint128Low64(w.mask), w.spec_set, w.last_set, w.mask_set, "@", w.pos.column, ",");
    }
    absl::StrAppend(&out, "]");
  }
  for (const Action& a : r.actions) {
    absl::StrAppend(&out, " ", a.def->name, "@", a.pos.column, "(");
    for (const ActionArg& arg : a.args) {
      absl::StrAppend(&out, arg.def->name, "=", arg.value.text, "#", absl::Uint128Low64(arg.value.number),
                      "#", arg.value.bytes.size(), "#", arg.value.list.size(), ",");
    }
    absl::StrAppend(&out, ")");
  }
  return out;
}

std::string DescribeCommand(const Command& c) {
  std::string out = absl::StrCat(c.pos.line, ":", c.pos.column, " ", c.body.index(), " ");
  if (const auto* create = std::get_if<FlowCreateCmd>(&c.body))
    absl::StrAppend(&out, DescribeRule(create->rule));
  if (const auto* validate = std::get_if<FlowValidateCmd>(&c.body)) {
    absl::StrAppend(&out, DescribeRule(validate->rule));
  }
  return out;
}

TEST(CommandParserTest, AReusedParserParsesAsAFreshOne) {
  // Rules of more and fewer items, words and arguments after one another, errors in between (which leave
  // a rule half parsed), other commands between rules.
  const std::vector<CommandTokens> commands = Lex(
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.1 dst is 10.0.0.2 / udp src is 1 dst is 2 / "
      "end "
      "actions queue index 1 / end\n"
      "flow create 1 egress group 3 priority 2 user_id 9 pattern eth / end actions mark id 5 / count / rss "
      "queues 0 1 end / end\n"
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.300 / udp / end actions drop / end\n"
      "flow validate 0 transfer pattern ipv6 src spec ::1 src mask ffff:: / end actions drop / end\n"
      "flow create 0 ingress pattern eth / ipv4 src is 1.2.3.4 / tcp dst spec 80 dst mask 0xff00 / end "
      "actions queue index x / end\n"
      "flow list 0\n"
      "flow create 0 ingress pattern vlan vid is 3 / end actions drop / end\n"
      "flow create 0 ingress group 1 pattern eth / ipv4 / end actions jump group 2 / end\n"
      "flow create 0 ingress pattern eth / ipv4 src is 10.0.0.1 / udp / end actions queue index 1 / end\n");
  ASSERT_THAT(commands, SizeIs(9));
  CommandParser reused;
  for (const CommandTokens& tokens : commands) {
    const ParsedCommand fresh = ParseCommand(tokens);
    std::vector<absl::Status> errors;
    const Command* command = reused.Parse(tokens, &errors);
    const int line = tokens.tokens.front().pos.line;
    ASSERT_EQ(command != nullptr, fresh.command.has_value()) << "line " << line;
    if (command != nullptr) {
      EXPECT_EQ(DescribeCommand(*command), DescribeCommand(*fresh.command)) << line;
    }
    ASSERT_EQ(errors.size(), fresh.errors.size()) << "line " << line;
    for (size_t i = 0; i < errors.size(); ++i) {
      EXPECT_EQ(errors[i], fresh.errors[i]) << "line " << line;
    }
  }
}

}  // namespace
}  // namespace drsim::testpmd
