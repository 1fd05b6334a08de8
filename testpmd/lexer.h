// The lexer of testpmd rule files: text becomes commands, each a list of tokens with positions.
//
// testpmd's command line splits a command on blanks; so does this. A token is a run of non-blank
// characters ("ipv4", "10.0.0.1", "00:11:22:33:44:55", "0x8100", "/", "vxlan-gpe"). One command is one
// line; a line ending in a backslash continues on the next one. A '#' that starts a token starts a comment
// running to the end of the line. Blank and comment-only lines hold no command. testpmd's prompt,
// "testpmd>" as a command's first token, is skipped, so lines pasted from a session read as typed.
//
// Lex takes a whole text; LineLexer and CommandStream take it a line at a time, so that a file of a million
// commands is never held whole (runner.h streams rule files through them).
//
// Lex is a pure function of its input, thread-safe; a LineLexer or CommandStream is one reader's.
#ifndef DRSIM_TESTPMD_LEXER_H_
#define DRSIM_TESTPMD_LEXER_H_

#include <istream>
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

// The lexer one line at a time.
class LineLexer {
 public:
  // Takes line `line_number` (1-based, without its newline); true when it ends a command, which is then
  // moved to `out`.
  bool Take(absl::string_view line, int line_number, CommandTokens* out);
  // At the end of the text: true when a command was left open (a backslash on the last line), moved to
  // `out`.
  bool Finish(CommandTokens* out);

 private:
  CommandTokens current_;
};

// The commands of a stream, read one at a time.
class CommandStream {
 public:
  explicit CommandStream(std::istream& in) : in_(in) {}
  // The next command; false at the end of the stream.
  bool Next(CommandTokens* out);

 private:
  std::istream& in_;
  LineLexer lexer_;
  std::string line_;
  int line_number_ = 0;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_LEXER_H_
