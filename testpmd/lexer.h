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

#include <cstddef>
#include <cstdint>
#include <deque>
#include <istream>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/numeric/bits.h"
#include "absl/strings/string_view.h"
#include "hw/lookup_memory.h"
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

// The index of the first blank (' ', '\t', '\v', '\f', '\r') of `line` from `i` on, or its size.
size_t TokenEnd(absl::string_view line, size_t i);

// A plain line: at most kPlainLineBytes bytes, no '#' and no backslash. Its tokens are its runs of
// non-blanks (' ', '\t', '\v', '\f', '\r'), found from a map of its blanks: bit k of word k / 64 set when
// byte k is a blank or lies past the line's end.
inline constexpr size_t kPlainLineWords = 8;
inline constexpr size_t kPlainLineBytes = kPlainLineWords * 64 - 1;
// Fills `blanks` (kPlainLineWords words) for `line` (at most kPlainLineBytes long); false when the line
// holds a '#' or a backslash.
bool MapBlanks(absl::string_view line, uint64_t* blanks);
// Calls `on_token(start, past)` with the offsets of each token of `line`, in order, and returns true when
// the line is plain; returns false, calling nothing, when it is not.
template <typename OnToken>
bool ForEachPlainToken(absl::string_view line, OnToken&& on_token) {
  uint64_t blanks[kPlainLineWords];
  if (line.size() > kPlainLineBytes || !MapBlanks(line, blanks)) return false;
  const size_t words = line.size() / 64 + 1;
  uint64_t after_token = 0;  // 1: the last byte of the word before is no blank
  for (size_t w = 0; w < words; ++w) {
    const uint64_t inside = ~blanks[w];
    const uint64_t starts = inside & ~(inside << 1 | after_token);  // no blank, after one or first
    after_token = inside >> 63;
    for (uint64_t bits = starts; bits != 0; bits &= bits - 1) {
      const size_t start = w * 64 + static_cast<size_t>(absl::countr_zero(bits));
      size_t past_word = w;
      uint64_t blanks_after = blanks[w] & (~uint64_t{0} << (start % 64));
      while (blanks_after == 0) blanks_after = blanks[++past_word];  // (the map ends in a blank)
      on_token(start, past_word * 64 + static_cast<size_t>(absl::countr_zero(blanks_after)));
    }
  }
  return true;
}

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

// The commands of a stream, read one at a time. The stream is read in chunks into one huge page
// (hw/lookup_memory.h): a huge page faults in once, where a heap buffer so large faults in page by page. A
// line is lexed where it lies in the chunk. Only a line a backslash may continue is copied aside: its tokens
// must outlive the next read.
class CommandStream {
 public:
  explicit CommandStream(std::istream& in);
  ~CommandStream();
  CommandStream(const CommandStream&) = delete;
  CommandStream& operator=(const CommandStream&) = delete;

  // The next command; false at the end of the stream.
  bool Next(CommandTokens* out);
  // Next, offering each line that starts a command to `take_line` first (with its number): a line it
  // takes (returns true for) is a command of its own that was run, and is not lexed.
  bool Next(CommandTokens* out, absl::FunctionRef<bool(absl::string_view line, int line_number)> take_line);
  // After Next returned false: the errno of the read that failed (EIO when the stream gave none), or 0 when
  // the stream ended. The commands given are those of the lines before the failure.
  int read_error() const { return read_error_; }
  // The lines read so far.
  int lines() const { return line_number_; }

 private:
  static constexpr size_t kChunkBytes = hw::kHugePageBytes;
  // Sets `line` to the next line without its newline, a view valid until the next call; false at the end
  // of the stream.
  bool ReadLine(absl::string_view* line);

  std::istream& in_;
  char* chunk_;  // kChunkBytes, of which [begin_, end_) is read and not yet taken
  size_t begin_ = 0, end_ = 0;
  bool at_end_ = false;  // the stream has nothing more
  int read_error_ = 0;
  std::string long_line_;  // a line longer than the chunk, put together
  LineLexer lexer_;
  // Copies of the open command's lines (a deque: a new line moves none of the others, which its tokens
  // view); each keeps its room for the next command.
  std::deque<std::string> continued_;
  int line_number_ = 0;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_LEXER_H_
