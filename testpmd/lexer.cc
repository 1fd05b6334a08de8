#include "testpmd/lexer.h"

#include <cstdint>
#include <cstring>

#include "absl/base/config.h"
#include "absl/numeric/bits.h"
#include "absl/strings/str_split.h"

namespace drsim::testpmd {
namespace {

constexpr absl::string_view kPrompt = "testpmd>";

// ' ', '\t', '\v', '\f', '\r' (the control characters 9 to 13 but '\n').
bool IsBlank(char c) { return c == ' ' || (static_cast<unsigned char>(c - '\t') <= 4 && c != '\n'); }

// The index of the first blank of `line` from `i` on, or its size. Eight bytes at a time where it can: a
// byte below '!' is flagged exactly when it is the lowest such byte of the word (the subtraction borrows
// only upwards), and only such a byte can be a blank.
size_t TokenEnd(absl::string_view line, size_t i) {
#ifdef ABSL_IS_LITTLE_ENDIAN
  constexpr uint64_t kOnes = 0x0101010101010101u, kHighBits = 0x8080808080808080u;
  while (i + 8 <= line.size()) {
    uint64_t word;
    std::memcpy(&word, line.data() + i, sizeof(word));
    const uint64_t below = (word - kOnes * '!') & ~word & kHighBits;
    if (below == 0) {
      i += 8;
      continue;
    }
    i += absl::countr_zero(below) / 8;
    if (IsBlank(line[i])) return i;
    ++i;
  }
#endif
  while (i < line.size() && !IsBlank(line[i])) ++i;
  return i;
}

}  // namespace

bool LineLexer::Take(absl::string_view line, int line_number, CommandTokens* out) {
  bool continued = false;
  size_t i = 0;
  size_t end = 0;  // just past the line's last token (0: no token)
  while (i < line.size()) {
    if (IsBlank(line[i])) {
      ++i;
      continue;
    }
    if (line[i] == '#') break;  // a comment to the end of the line
    const size_t start = i;
    i = TokenEnd(line, i);
    absl::string_view word = line.substr(start, i - start);
    if (current_.tokens.empty() && word == kPrompt) continue;  // a line pasted from a testpmd session
    // A lone backslash, or one ending the line's last token, joins the next line.
    if (word.back() == '\\') {
      size_t rest = i;
      while (rest < line.size() && IsBlank(line[rest])) ++rest;
      if (rest == line.size()) {
        continued = true;
        word.remove_suffix(1);
        if (word.empty()) break;
      }
    }
    Token& token = current_.tokens.emplace_back();  // (filled in place: a token built aside and copied
    token.text = word;                              // stalls on its store to load forwarding)
    token.pos = SourcePos{line_number, static_cast<int>(start) + 1};
    end = start + word.size();
  }
  if (end != 0) current_.end = SourcePos{line_number, static_cast<int>(end) + 1};
  if (continued || current_.tokens.empty()) return false;
  return Finish(out);
}

bool LineLexer::Finish(CommandTokens* out) {
  if (current_.tokens.empty()) return false;
  std::swap(*out, current_);  // `out`'s old tokens lend their room to the next command
  current_.tokens.clear();
  return true;
}

std::vector<CommandTokens> Lex(absl::string_view text) {
  std::vector<CommandTokens> commands;
  LineLexer lexer;
  CommandTokens command;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (lexer.Take(line, ++line_number, &command)) commands.push_back(command);
  }
  if (lexer.Finish(&command)) commands.push_back(command);
  return commands;
}

bool CommandStream::Next(CommandTokens* out) {
  size_t used = 0;  // lines of the open command (the last command's lines are free again)
  while (true) {
    if (used == lines_.size()) lines_.emplace_back();
    std::string& line = lines_[used];
    if (!std::getline(in_, line)) break;
    if (lexer_.Take(line, ++line_number_, out)) return true;
    used = lexer_.open() ? used + 1 : 0;
  }
  return lexer_.Finish(out);
}

}  // namespace drsim::testpmd
