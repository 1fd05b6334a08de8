// Internal to the parser: a read position in one command's tokens, and the parsers of pattern items,
// actions and `/`-separated lists that every command with items or actions shares (parser.h has the
// grammar).
//
// Pure functions over their arguments; thread-safe.
#ifndef DRSIM_TESTPMD_PARSE_ELEMENTS_H_
#define DRSIM_TESTPMD_PARSE_ELEMENTS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "testpmd/ast.h"
#include "testpmd/lexer.h"
#include "testpmd/values.h"

namespace drsim::testpmd {

// A read position in one command's tokens.
class Cursor {
 public:
  explicit Cursor(const CommandTokens& tokens) : tokens_(tokens) {}

  bool AtEnd() const { return i_ >= tokens_.tokens.size(); }
  bool PeekIs(absl::string_view word) const { return !AtEnd() && SameWord(tokens_.tokens[i_].text, word); }
  bool PeekIsAny(std::initializer_list<absl::string_view> words) const {
    for (absl::string_view w : words) {
      if (PeekIs(w)) return true;
    }
    return false;
  }
  bool PeekIsNumber() const { return !AtEnd() && absl::ascii_isdigit(tokens_.tokens[i_].text[0]); }
  // The next token, not taken; !AtEnd() is a precondition.
  const Token& Peek() const { return tokens_.tokens[i_]; }
  // The next token; !AtEnd() is a precondition.
  const Token& Take() { return tokens_.tokens[i_++]; }

  // An error at the current token (or the end of the line) saying what was expected there.
  absl::Status Expected(absl::string_view expected) const {
    if (AtEnd()) {
      return ErrorAt(tokens_.end, absl::StatusCode::kInvalidArgument,
                     absl::StrFormat("expected %s at end of line", expected));
    }
    const Token& t = tokens_.tokens[i_];
    return ErrorAt(t.pos, absl::StatusCode::kInvalidArgument,
                   absl::StrFormat("expected %s, found '%s'", expected, t.text));
  }
  // The next token, which must be `word`.
  absl::Status Expect(absl::string_view word) {
    if (!PeekIs(word)) return Expected(absl::StrCat("'", word, "'"));
    ++i_;
    return absl::OkStatus();
  }
  // The next token, whatever it is; an error naming `what` at the end of the line.
  absl::StatusOr<const Token*> Next(absl::string_view what) {
    if (AtEnd()) return Expected(what);
    return &tokens_.tokens[i_++];
  }
  // Skips to just past the next `/`, or to the next of `stops` (not consumed) or the end. True when it
  // stopped at a `/`.
  bool Recover(std::initializer_list<absl::string_view> stops) {
    while (!AtEnd()) {
      if (PeekIsAny(stops)) return false;
      if (SameWord(Take().text, "/")) return true;
    }
    return false;
  }

 private:
  const CommandTokens& tokens_;
  size_t i_ = 0;
};

// The next token as an unsigned number of at most `width` bits, named `what` in errors.
template <typename T>
absl::StatusOr<T> Number(Cursor& c, int width, absl::string_view what) {
  DRSIM_ASSIGN_OR_RETURN(const Token* t, c.Next(what));
  DRSIM_ASSIGN_OR_RETURN(uint64_t v, ParseUnsigned(*t, width, what));
  return static_cast<T>(v);
}

// Resets `*object` to a fresh T{} but for its members `kept`, which keep what they hold (and their room):
// a parser reused from command to command resets what it parses into from the type, so that no member is
// left over from the command before.
template <typename T, typename... Members>
void ResetAllBut(T* object, Members T::*... kept) {
  std::tuple<Members...> saved(std::move(object->*kept)...);
  *object = T{};
  std::apply([&](Members&... room) { ((object->*kept = std::move(room)), ...); }, saved);
}

// One pattern item into `out` (whatever it held before is overwritten; the room of its words is kept),
// stopping before `/`, `end_word` or the end of the tokens.
absl::Status ParseItem(Cursor& c, absl::string_view end_word, Item* out);

// One action into `out` likewise; modify_field's parameters must come in testpmd's order.
absl::Status ParseAction(Cursor& c, absl::string_view end_word, Action* out);

// A `/`-separated list ending in `end_word`, of elements parsed by `parse` into `out`, which then holds
// exactly the list's elements: the elements `out` held before are parsed into again, so a parser reused
// from command to command keeps their room. Errors inside an element are collected in `errors` and
// parsing resumes after the next `/`; a word of `stops` ends the list early (after an error). Returns
// false when the list could not be finished.
template <typename T, typename ParseFn>
bool ParseList(Cursor& c, absl::string_view end_word, std::initializer_list<absl::string_view> stops,
               ParseFn parse, std::vector<T>* out, std::vector<absl::Status>* errors) {
  size_t n = 0;
  while (true) {
    if (c.PeekIs(end_word)) {
      c.Take();
      out->resize(n);
      return true;
    }
    if (n == out->size()) out->emplace_back();
    absl::Status status = parse(c, end_word, &(*out)[n]);
    if (status.ok()) {
      ++n;
      if (c.PeekIs("/")) {
        c.Take();
        continue;
      }
      status = c.Expected("'/'");
    }
    errors->push_back(status);
    if (c.Recover(stops)) continue;
    out->resize(n);
    return !c.AtEnd();
  }
}

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_PARSE_ELEMENTS_H_
