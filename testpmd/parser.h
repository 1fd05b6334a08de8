// The parser of testpmd commands: tokens (lexer.h) become Commands (ast.h), or errors that say where and
// what was expected.
//
// Accepted commands, in testpmd's syntax (doc/guides/testpmd_app_ug/testpmd_funcs.rst):
//   flow validate|create PORT [group N] [priority N] [ingress] [egress] [transfer]
//        pattern ITEM [/ ITEM ...] / end actions ACTION [/ ACTION ...] / end
//   flow validate|create PORT ... [user_id N] ...  (an attribute, before pattern)
//   flow destroy PORT rule ID [rule ID ...]      flow flush PORT
//   flow list PORT [group N ...]                 flow query PORT ID count|age [user_id]
//   flow aged PORT [destroy]
//   flow indirect_action PORT create [action_id ID] [ingress] [egress] [transfer] action ACTION / end
//   flow indirect_action PORT update ID action ACTION / end
//   flow indirect_action PORT destroy action_id ID [action_id ID ...]
//   flow indirect_action PORT query ID
//   set raw_encap|raw_decap [INDEX] ITEM [/ ITEM ...] / end_set
//   set sample_actions INDEX ACTION [/ ACTION ...] / end
//   set vxlan|vxlan-with-vlan|vxlan-tos-ttl ip-version ipv4|ipv6 vni N udp-src N udp-dst N
//       [ip-tos N ip-ttl N] ip-src A ip-dst A [vlan-tci N] eth-src M eth-dst M
//   set nvgre|nvgre-with-vlan ip-version ipv4|ipv6 tni N ip-src A ip-dst A [vlan-tci N] eth-src M eth-dst M
//   add port meter profile srtcm_rfc2697 PORT ID CIR CBS EBS [PACKET_MODE]
//   add port meter profile trtcm_rfc2698 PORT ID CIR PIR CBS PBS [PACKET_MODE]
//   add port meter profile trtcm_rfc4115 PORT ID CIR EIR CBS EBS [PACKET_MODE]
//   add port meter policy PORT ID g_actions ACTIONS / end [y_actions ACTIONS / end] [r_actions ...]
//   create port meter PORT ID PROFILE POLICY yes|no STATS_MASK SHARED [g|y|r] [USE_PRE_METER_COLOR]
//   enable|disable|del port meter PORT ID        del port meter profile|policy PORT ID
// Items and actions are those of schema.h, with their testpmd field and parameter names; items and actions
// testpmd has but DR cannot express are rejected by name with the reason (Unimplemented).
//
// Errors are InvalidArgument (or Unimplemented for an unsupported item/action) carrying the position of
// the offending token (source.h). After an error inside a pattern or action list the parser resumes at the
// next `/`, so one command can report several independent errors.
//
// Pure functions; thread-safe.
#ifndef DRSIM_TESTPMD_PARSER_H_
#define DRSIM_TESTPMD_PARSER_H_

#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "testpmd/ast.h"
#include "testpmd/lexer.h"

namespace drsim::testpmd {

struct ParsedCommand {
  std::optional<Command> command;    // set when there is no error
  std::vector<absl::Status> errors;  // every error found, in token order
};

// Parses one command.
ParsedCommand ParseCommand(const CommandTokens& tokens);

// A parser of one command after another that parses each into the same Command, whose room (a rule's
// items and their words, its actions and their arguments) is kept from command to command: a stream of
// a million `flow create` commands then allocates nothing to parse them. One reader's; not thread-safe.
class CommandParser {
 public:
  // Parses `tokens`: the command, valid until the next call, or nullptr with every error appended to
  // `errors` (as ParseCommand reports them).
  Command* Parse(const CommandTokens& tokens, std::vector<absl::Status>* errors);

 private:
  Command command_;
};

struct ParsedText {
  std::vector<Command> commands;     // the commands that parsed, in order
  std::vector<absl::Status> errors;  // every error of every command, in order
};

// Lexes and parses a whole rule file.
ParsedText ParseText(absl::string_view text);

// Parses `text` holding exactly one command: the command or its first error.
absl::StatusOr<Command> ParseOne(absl::string_view text);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_PARSER_H_
