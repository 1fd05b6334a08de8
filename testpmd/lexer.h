// The lexer of testpmd rule files: text becomes commands, each a list of tokens with positions.
//
// testpmd's command line splits a command on blanks; so does this. A token is a run of non-blank
// characters ("ipv4", "10.0.0.1", "00:11:22:33:44:55", "0x8100", "/", "vxlan-gpe"). One command is one
// line; a line ending in a backslash continues on the next one. A '#' that starts a token starts a comment
// running to the end of the line. Blank and comment-only lines hold no command. testpmd's prompt,
// "testpmd>" as a command's first token, is skipped, so lines pasted from a session read as typed.
//
// Lex takes a whole text; LineLexer and CommandStream take it a line at a time, so that a file of a million
// commands is never held whole (runner.h streams rule files through them). A line is split by a map of its
// blanks, a bit a byte (16 bytes a vector step), read where tokens start and end; a line with a '#' or a
// backslash, or over 511 bytes, a byte at a time (the tests hold the two ways equal). A token is a view of
// the text it was read from, not a copy: Lex's tokens live as long as the text, a CommandStream's until its
// next Next().
//
// Lex is a pure function of its input, thread-safe; a LineLexer or CommandStream is one reader's.
#ifndef DRSIM_TESTPMD_LEXER_H_
#define DRSIM_TESTPMD_LEXER_H_

#include <deque>
#include <istream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "testpmd/source.h"

namespace drsim::testpmd {

struct Token {
  absl::string_view text;  // a view of the lexed text
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
  // moved to `out`. The command's tokens are views of its lines, which must outlive their use.
  bool Take(absl::string_view line, int line_number, CommandTokens* out);
  // Whether a command is open: its tokens so far wait for the line that continues it.
  bool open() const { return !current_.tokens.empty(); }
  // At the end of the text: true when a command was left open (a backslash on the last line), moved to
  // `out`.
  bool Finish(CommandTokens* out);

 private:
  // Take for a line with a comment or a backslash, or a long one: a byte at a time.
  bool TakeByBytes(absl::string_view line, int line_number, CommandTokens* out);

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
  // The lines of the command being read (a deque: a new line moves none of the others, which its tokens
  // view); each keeps its room for the next command.
  std::deque<std::string> lines_;
  int line_number_ = 0;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_LEXER_H_
