#include "testpmd/lexer.h"

#include <cerrno>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/base/config.h"
#include "absl/numeric/bits.h"
#include "absl/strings/str_split.h"

namespace drsim::testpmd {
namespace {

constexpr absl::string_view kPrompt = "testpmd>";

// ' ', '\t', '\v', '\f', '\r' (the control characters 9 to 13 but '\n').
bool IsBlank(char c) { return c == ' ' || (static_cast<unsigned char>(c - '\t') <= 4 && c != '\n'); }

// Whether `line`'s last byte but blanks is a backslash, which may join the next line to it.
bool MayContinue(absl::string_view line) {
  size_t end = line.size();
  while (end > 0 && IsBlank(line[end - 1])) --end;
  return end > 0 && line[end - 1] == '\\';
}

}  // namespace

// Eight bytes at a time where it can: a byte below '!' is flagged exactly when it is the lowest such byte
// of the word (the subtraction borrows only upwards), and only such a byte can be a blank.
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

bool MapBlanks(absl::string_view line, uint64_t* blanks) {
  bool special = false;
  for (size_t at = 0; at < line.size(); at += 64) {
    // A word of the map from 64 bytes: the line's, or a copy of its tail padded with blanks.
    char tail[64];
    const char* bytes = line.data() + at;
    if (at + 64 > line.size()) {
      std::memset(tail, ' ', sizeof tail);
      std::memcpy(tail, bytes, line.size() - at);
      bytes = tail;
    }
    uint64_t word = 0;
#if defined(__SSE2__)
    const __m128i space = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t'), four = _mm_set1_epi8(4);
    const __m128i newline = _mm_set1_epi8('\n'), hash = _mm_set1_epi8('#'), backslash = _mm_set1_epi8('\\');
    __m128i specials = _mm_setzero_si128();
    for (int q = 0; q < 4; ++q) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 16 * q));
      const __m128i from_tab = _mm_sub_epi8(v, tab);  // '\t' to '\r': 0 to 4, unsigned
      const __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(from_tab, four), from_tab);
      const __m128i blank =
          _mm_or_si128(_mm_cmpeq_epi8(v, space), _mm_andnot_si128(_mm_cmpeq_epi8(v, newline), control));
      specials = _mm_or_si128(specials, _mm_or_si128(_mm_cmpeq_epi8(v, hash), _mm_cmpeq_epi8(v, backslash)));
      word |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(blank))} << (16 * q);
    }
    special |= _mm_movemask_epi8(specials) != 0;
#else
    for (int k = 0; k < 64; ++k) {
      special |= bytes[k] == '#' || bytes[k] == '\\';
      word |= uint64_t{IsBlank(bytes[k])} << k;
    }
#endif
    blanks[at / 64] = word;
  }
  if (line.size() % 64 == 0) blanks[line.size() / 64] = ~uint64_t{0};
  return !special;
}

bool LineLexer::Take(absl::string_view line, int line_number, CommandTokens* out) {
  size_t end = 0;  // just past the line's last token (0: no token)
  const bool plain = ForEachPlainToken(line, [&](size_t start, size_t past) {
    const absl::string_view word(line.data() + start, past - start);
    if (current_.tokens.empty() && word == kPrompt) return;  // a line pasted from a testpmd session
    Token& token = current_.tokens.emplace_back();  // (filled in place: a token built aside and copied
    token.text = word;                              // stalls on its store to load forwarding)
    token.pos = SourcePos{line_number, static_cast<int>(start) + 1};
    end = past;
  });
  if (!plain) return TakeByBytes(line, line_number, out);
  if (end != 0) current_.end = SourcePos{line_number, static_cast<int>(end) + 1};
  if (current_.tokens.empty()) return false;
  return Finish(out);
}

bool LineLexer::TakeByBytes(absl::string_view line, int line_number, CommandTokens* out) {
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

CommandStream::CommandStream(std::istream& in)
    : in_(in), chunk_(static_cast<char*>(hw::AllocateLookupMemory(kChunkBytes))) {}

CommandStream::~CommandStream() { hw::FreeLookupMemory(chunk_, kChunkBytes); }

bool CommandStream::ReadLine(absl::string_view* line) {
  long_line_.clear();
  while (true) {
    const char* from = chunk_ + begin_;
    const size_t unread = end_ - begin_;
    if (const void* newline = std::memchr(from, '\n', unread)) {
      const size_t bytes = static_cast<size_t>(static_cast<const char*>(newline) - from);
      begin_ += bytes + 1;
      if (long_line_.empty()) {
        *line = absl::string_view(from, bytes);
      } else {
        *line = long_line_.append(from, bytes);
      }
      return true;
    }
    if (at_end_) {  // the last line, if it has no newline
      begin_ = end_;
      if (long_line_.empty()) {
        *line = absl::string_view(from, unread);
        return unread != 0;
      }
      *line = long_line_.append(from, unread);
      return true;
    }
    // The line goes on past the chunk: keep its start (at the chunk's, or aside when it fills the chunk)
    // and read on after it.
    if (unread == kChunkBytes) {
      long_line_.append(from, unread);
      end_ = 0;
    } else {
      std::memmove(chunk_, from, unread);
      end_ = unread;
    }
    begin_ = 0;
    // (istream::read, not the buffer's sgetn: a read that fails sets badbit rather than throwing.)
    errno = 0;
    in_.read(chunk_ + end_, static_cast<std::streamsize>(kChunkBytes - end_));
    const std::streamsize got = in_.gcount();
    if (in_.bad()) {  // the line the failure cut short is not given
      read_error_ = errno != 0 ? errno : EIO;
      at_end_ = true;
      begin_ = end_ = 0;
      long_line_.clear();
      return false;
    }
    if (got <= 0) {
      at_end_ = true;
    } else {
      end_ += static_cast<size_t>(got);
    }
  }
}

bool CommandStream::Next(CommandTokens* out) {
  return Next(out, [](absl::string_view, int) { return false; });
}

bool CommandStream::Next(CommandTokens* out, absl::FunctionRef<bool(absl::string_view, int)> take_line) {
  size_t copies = 0;  // of the open command's lines (the last command's copies are free again)
  absl::string_view line;
  while (ReadLine(&line)) {
    ++line_number_;
    if (!lexer_.open() && take_line(line, line_number_)) continue;
    if (MayContinue(line)) {
      if (copies == continued_.size()) continued_.emplace_back();
      line = continued_[copies].assign(line.data(), line.size());
      ++copies;
    }
    if (lexer_.Take(line, line_number_, out)) return true;
    if (!lexer_.open()) copies = 0;
  }
  return read_error_ == 0 && lexer_.Finish(out);  // (a command the failure cut short is not given)
}

}  // namespace drsim::testpmd
