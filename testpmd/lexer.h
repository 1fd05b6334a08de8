// The lexer of testpmd rule files: text becomes commands, each a list of tokens with positions.
//
// testpmd's command line splits a command on blanks; so does this. A token is a run of non-blank
// characters ("ipv4", "10.0.0.1", "00:11:22:33:44:55", "0x8100", "/", "vxlan-gpe"). One command is one
// line; a line ending in a backslash continues on the next one. A '#' that starts a token starts a comment
// running to the end of the line. Blank and comment-only lines hold no command. testpmd's prompt,
// "testpmd>" as a command's first token, is skipped, so lines pasted from a session read as typed.
//
// Pure function of its input; thread-safe.
#ifndef DRSIM_TESTPMD_LEXER_H_
#define DRSIM_TESTPMD_LEXER_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "testpmd/source.h"

namespace drsim::testpmd {

struct Token {
  std::string text;
  SourcePos pos;
};

struct CommandTokens {
  std::vector<Token> tokens;  // never empty
  SourcePos end;              // just past the command's last character, for "expected ... at end of line"
};

// The commands of `text`, in order.
std::vector<CommandTokens> Lex(absl::string_view text);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_LEXER_H_
