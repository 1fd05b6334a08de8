#include "testpmd/parse_elements.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

std::string FieldNames(const ItemDef& def) {
  std::vector<absl::string_view> names;
  for (const FieldDef& f : def.fields) names.push_back(f.name);
  return absl::StrJoin(names, ", ");
}

std::string ParamNames(const ActionDef& def) {
  std::vector<absl::string_view> names;
  for (const ParamDef& p : def.params) names.push_back(p.name);
  return absl::StrJoin(names, ", ");
}

// Whether an op (is, spec, last, mask, prefix) has set a word of `item`.
bool HasOp(const Item& item) {
  for (const ItemWord& w : item.words) {
    if (w.spec_set || w.last_set || w.mask_set) return true;
  }
  return false;
}

// How an item field is given: testpmd's is, spec, last, mask and prefix.
enum class FieldOp : uint8_t { kIs, kSpec, kLast, kMask, kPrefix, kUnknown };

FieldOp FieldOpOf(absl::string_view word) {
  if (SameWord(word, "is")) return FieldOp::kIs;
  if (SameWord(word, "spec")) return FieldOp::kSpec;
  if (SameWord(word, "last")) return FieldOp::kLast;
  if (SameWord(word, "mask")) return FieldOp::kMask;
  if (SameWord(word, "prefix")) return FieldOp::kPrefix;
  return FieldOp::kUnknown;
}

// ApplyFieldOp in steps of `Bits`: uint64_t for a field in the low half of its word (most are: 64-bit steps
// cost a fraction of 128-bit ones; the high half is kept), absl::uint128 for the others.
template <typename Bits>
void ApplyFieldOpIn(Item& item, const FieldDef& field, FieldOp op, Bits value, SourcePos pos) {
  ItemWord& w = item.words[field.storage];
  const Bits ones = OnesIn<Bits>(field.width);
  const Bits bits = ones << field.shift;
  auto put = [&](absl::uint128& dst, Bits v) {
    const Bits placed = (static_cast<Bits>(dst) & ~bits) | ((v << field.shift) & bits);
    if constexpr (std::is_same_v<Bits, uint64_t>) {
      dst = absl::MakeUint128(absl::Uint128High64(dst), placed);
    } else {
      dst = placed;
    }
  };
  switch (op) {
    case FieldOp::kIs:
      put(w.spec, value);
      put(w.mask, ones);
      w.spec_set = w.mask_set = true;
      item.mask_given = true;
      break;
    case FieldOp::kSpec:
      put(w.spec, value);
      w.spec_set = true;
      break;
    case FieldOp::kLast:
      put(w.last, value);
      w.last_set = true;
      break;
    case FieldOp::kMask:
      put(w.mask, value);
      w.mask_set = true;
      item.mask_given = true;
      break;
    case FieldOp::kPrefix:
    case FieldOp::kUnknown: {  // prefix: `value` leading ones (ParseItem refuses unknown ops)
      const int n = static_cast<int>(static_cast<uint64_t>(value));
      put(w.mask, ones ^ OnesIn<Bits>(field.width - n));
      w.mask_set = true;
      item.mask_given = true;
      break;
    }
  }
  w.pos = pos;
}

void ApplyFieldOp(Item& item, const FieldDef& field, FieldOp op, absl::uint128 value, SourcePos pos) {
  if (field.shift + field.width <= 64) {
    ApplyFieldOpIn<uint64_t>(item, field, op, absl::Uint128Low64(value), pos);
  } else {
    ApplyFieldOpIn<absl::uint128>(item, field, op, value, pos);
  }
}

// A hex item field's value: its bytes from the field's most significant end (the first byte of the
// structure's buffer), and the bits they cover.
struct HexField {
  absl::uint128 value = 0;
  absl::uint128 given = 0;
};

absl::StatusOr<HexField> ParseHexField(const Token& token, const FieldDef& field, absl::string_view what) {
  DRSIM_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, ParseHex(token, what));
  const size_t room = field.width / 8;
  if (bytes.size() > room) {
    return ErrorAt(token.pos, StatusCode::kUnimplemented,
                   absl::StrFormat("%s: %d bytes; only the first %d can be matched (the match layout holds "
                                   "%d bits of it)",
                                   what, bytes.size(), room, field.width));
  }
  HexField h;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const int shift = static_cast<int>(8 * (room - 1 - i));
    h.value |= absl::uint128(bytes[i]) << shift;
    h.given |= absl::uint128(0xff) << shift;
  }
  return h;
}

absl::StatusOr<ParamValue> ParseParamValue(Cursor& c, const ActionDef& action, const ParamDef& param) {
  // (The names in messages are formatted only for an error.)
  auto what = [&action, &param] { return absl::StrFormat("%s parameter '%s'", action.name, param.name); };
  ParamValue v;
  switch (param.kind) {
    case ValueKind::kKeyword: {
      const std::string choices =
          absl::StrFormat("one of %s for %s", absl::StrJoin(param.keywords, ", "), what());
      DRSIM_ASSIGN_OR_RETURN(const Token* t, c.Next(choices));
      if (std::find(param.keywords.begin(), param.keywords.end(), t->text) == param.keywords.end()) {
        return ErrorAt(t->pos, StatusCode::kInvalidArgument,
                       absl::StrFormat("expected %s, found '%s'", choices, t->text));
      }
      v.pos = t->pos;
      v.text.assign(t->text.data(), t->text.size());
      return v;
    }
    case ValueKind::kKeywordList:
    case ValueKind::kUnsignedList: {
      const bool keywords = param.kind == ValueKind::kKeywordList;
      const std::string expected = keywords ? absl::StrFormat("a value of %s (%s) or 'end'", what(),
                                                              absl::StrJoin(param.keywords, ", "))
                                            : absl::StrFormat("a number for %s or 'end'", what());
      while (true) {
        DRSIM_ASSIGN_OR_RETURN(const Token* t, c.Next(expected));
        if (!v.pos.known()) v.pos = t->pos;
        if (t->text == "end") return v;
        ParamValue element;
        element.pos = t->pos;
        element.text.assign(t->text.data(), t->text.size());
        if (keywords) {
          if (std::find(param.keywords.begin(), param.keywords.end(), t->text) == param.keywords.end()) {
            return ErrorAt(t->pos, StatusCode::kInvalidArgument,
                           absl::StrFormat("expected %s, found '%s'", expected, t->text));
          }
        } else {
          DRSIM_ASSIGN_OR_RETURN(uint64_t n, ParseUnsigned(*t, param.width, what()));
          element.number = n;
        }
        v.list.push_back(std::move(element));
      }
    }
    case ValueKind::kHex: {
      DRSIM_ASSIGN_OR_RETURN(const Token* t, c.Next(absl::StrFormat("a hex string for %s", what())));
      DRSIM_ASSIGN_OR_RETURN(v.bytes, ParseHex(*t, what()));
      v.pos = t->pos;
      v.text.assign(t->text.data(), t->text.size());
      return v;
    }
    default: {
      if (c.AtEnd()) return c.Expected(absl::StrFormat("a value for %s", what()));
      const Token* t = &c.Take();
      DRSIM_ASSIGN_OR_RETURN(v.number, ParseScalarNamed(*t, param.kind, param.width, what));
      v.pos = t->pos;
      v.text.assign(t->text.data(), t->text.size());
      return v;
    }
  }
}

// modify_field's parameters come in testpmd's order: op, dst_type, dst_* options, src_type, src_* options
// (src_value among them), width last.
absl::Status CheckModifyFieldOrder(const Action& a) {
  enum Stage { kOp, kDstType, kDst, kSrc, kWidth } stage = kOp;
  static constexpr absl::string_view kExpected[] = {"'op'", "'dst_type'", "dst_* options or 'src_type'",
                                                    "src_* options or 'width'", "'/'"};
  for (const ActionArg& arg : a.args) {
    absl::string_view n = arg.def->name;
    bool ok = false;
    switch (stage) {
      case kOp:
        ok = n == "op";
        break;
      case kDstType:
        ok = n == "dst_type";
        break;
      case kDst:
        ok = n == "src_type" || (absl::StartsWith(n, "dst_") && n != "dst_type");
        break;
      case kSrc:
        ok = n == "width" || (absl::StartsWith(n, "src_") && n != "src_type");
        break;
      case kWidth:
        break;
    }
    if (!ok) {
      return ErrorAt(arg.pos, StatusCode::kInvalidArgument,
                     absl::StrFormat("expected %s in modify_field, found '%s'", kExpected[stage], n));
    }
    if (n == "op") {
      stage = kDstType;
    } else if (n == "dst_type") {
      stage = kDst;
    } else if (n == "src_type") {
      stage = kSrc;
    } else if (n == "width") {
      stage = kWidth;
    }
  }
  if (stage != kWidth) {
    return ErrorAt(a.pos, StatusCode::kInvalidArgument,
                   absl::StrFormat("modify_field needs op, dst_type, src_type and width, in that order; "
                                   "expected %s next",
                                   kExpected[stage]));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseItem(Cursor& c, absl::string_view end_word, Item* out) {
  // (Messages are formatted only on the way to an error: a rule file's items are mostly right.)
  auto expected_item = [end_word] { return absl::StrFormat("a pattern item or '%s'", end_word); };
  if (c.AtEnd()) return c.Expected(expected_item());
  const Token* name = &c.Take();
  const ItemDef* def = FindItem(name->text);
  if (def == nullptr) {
    if (const char* reason = UnsupportedItemReason(name->text)) {
      return ErrorAt(name->pos, StatusCode::kUnimplemented,
                     absl::StrFormat("pattern item '%s' is not supported: %s", name->text, reason));
    }
    return ErrorAt(name->pos, StatusCode::kInvalidArgument,
                   absl::StrFormat("expected %s, found '%s'", expected_item(), name->text));
  }
  ResetAllBut(out, &Item::words);
  Item& item = *out;
  item.def = def;
  item.pos = name->pos;
  item.words.assign(def->storage.size(), ItemWord{});
  // testpmd writes the conntrack item's one field bare and once: `conntrack OP FLAGS /` (ITEM_CONNTRACK: the
  // op stands where a name would, and '/' must follow the value).
  const bool bare = def->type == ItemType::kConntrack;
  while (!c.AtEnd() && !c.PeekIs("/") && !c.PeekIs(end_word)) {
    if (bare && (HasOp(item) || !c.PeekIsAny({"is", "spec", "last", "mask", "prefix"}))) {
      const std::string expected =
          HasOp(item) ? "'/' after the conntrack flags" : "is, spec, last, mask or prefix after 'conntrack'";
      return ErrorAt(
          c.Peek().pos, StatusCode::kInvalidArgument,
          absl::StrFormat("expected %s, found '%s' (testpmd's item is 'conntrack is|spec|last|mask|"
                          "prefix FLAGS': one op, no field name)",
                          expected, c.Peek().text));
    }
    const Token& fname = bare ? c.Peek() : c.Take();
    const FieldDef* field = bare ? &def->fields.front() : FindField(*def, fname.text);
    if (field == nullptr) {
      return ErrorAt(fname.pos, StatusCode::kInvalidArgument,
                     def->fields.empty()
                         ? absl::StrFormat("expected '/' after item '%s', found '%s'", def->name, fname.text)
                         : absl::StrFormat("expected a field of item '%s' (%s) or '/', found '%s'", def->name,
                                           FieldNames(*def), fname.text));
    }
    auto after = [field] {
      return absl::StrFormat("%s after '%s'", field->is_only ? "'is'" : "is, spec, last, mask or prefix",
                             field->name);
    };
    if (c.AtEnd()) return c.Expected(after());
    const Token* op = &c.Take();
    const FieldOp field_op = FieldOpOf(op->text);
    const bool known_op = field_op == FieldOp::kIs || (!field->is_only && field_op != FieldOp::kUnknown);
    if (!known_op) {
      return ErrorAt(op->pos, StatusCode::kInvalidArgument,
                     absl::StrFormat("expected %s, found '%s'", after(), op->text));
    }
    auto what = [def, field] { return absl::StrFormat("%s field '%s'", def->name, field->name); };
    if (c.AtEnd()) return c.Expected(absl::StrFormat("a value for %s", what()));
    const Token* value_token = &c.Take();
    absl::uint128 value;
    if (field_op == FieldOp::kPrefix) {
      DRSIM_ASSIGN_OR_RETURN(uint64_t n,
                             ParseUnsigned(*value_token, 8, absl::StrCat("the prefix of ", what())));
      if (n > field->width) {
        return ErrorAt(value_token->pos, StatusCode::kInvalidArgument,
                       absl::StrFormat("prefix %d is longer than %s (%d bits)", n, what(), field->width));
      }
      value = n;
    } else if (field->kind == ValueKind::kHex) {
      DRSIM_ASSIGN_OR_RETURN(HexField hex, ParseHexField(*value_token, *field, what()));
      ApplyFieldOp(item, *field, field_op, hex.value, fname.pos);
      // `is` masks the bytes given (testpmd sets the mask of an arbitrary-length field as long as its value).
      if (field_op == FieldOp::kIs) {
        ItemWord& w = item.words[field->storage];
        w.mask &= ~(Ones(field->width) << field->shift) | (hex.given << field->shift);
      }
      continue;
    } else {
      DRSIM_ASSIGN_OR_RETURN(value, ParseScalarNamed(*value_token, field->kind, field->width, what));
    }
    ApplyFieldOp(item, *field, field_op, value, fname.pos);
  }
  return absl::OkStatus();
}

absl::Status ParseAction(Cursor& c, absl::string_view end_word, Action* out) {
  auto expected_action = [end_word] { return absl::StrFormat("an action or '%s'", end_word); };
  if (c.AtEnd()) return c.Expected(expected_action());
  const Token* name = &c.Take();
  const ActionDef* def = FindAction(name->text);
  if (def == nullptr) {
    if (const char* reason = UnsupportedActionReason(name->text)) {
      return ErrorAt(name->pos, StatusCode::kUnimplemented,
                     absl::StrFormat("action '%s' is not supported: %s", name->text, reason));
    }
    return ErrorAt(name->pos, StatusCode::kInvalidArgument,
                   absl::StrFormat("expected %s, found '%s'", expected_action(), name->text));
  }
  ResetAllBut(out, &Action::args);
  Action& a = *out;
  a.def = def;
  a.pos = name->pos;
  a.args.clear();
  if (def->type == ActionType::kIndirect) {  // testpmd writes its one parameter bare: `indirect 5`
    DRSIM_ASSIGN_OR_RETURN(const Token* id, c.Next("the indirect action id"));
    ParamValue value;
    value.pos = id->pos;
    value.text.assign(id->text.data(), id->text.size());
    DRSIM_ASSIGN_OR_RETURN(value.number, ParseUnsigned(*id, 32, "the indirect action id"));
    a.args.push_back(ActionArg{&def->params.front(), id->pos, std::move(value)});
  }
  while (!c.AtEnd() && !c.PeekIs("/") && !c.PeekIs(end_word)) {
    const Token& pname = c.Take();
    const ParamDef* param = FindParam(*def, pname.text);
    if (param != nullptr &&
        def->type == ActionType::kConntrackUpdate) {  // bare flags: `conntrack_update dir`
      ParamValue value;
      value.pos = pname.pos;
      value.text.assign(pname.text.data(), pname.text.size());
      value.number = 1;
      a.args.push_back(ActionArg{param, pname.pos, std::move(value)});
      continue;
    }
    if (param == nullptr) {
      return ErrorAt(
          pname.pos, StatusCode::kInvalidArgument,
          def->params.empty()
              ? absl::StrFormat("expected '/' after action '%s', found '%s'", def->name, pname.text)
              : absl::StrFormat("expected a parameter of action '%s' (%s) or '/', found '%s'", def->name,
                                ParamNames(*def), pname.text));
    }
    DRSIM_ASSIGN_OR_RETURN(ParamValue value, ParseParamValue(c, *def, *param));
    a.args.push_back(ActionArg{param, pname.pos, std::move(value)});
  }
  if (def->type == ActionType::kModifyField) {
    DRSIM_RETURN_IF_ERROR(CheckModifyFieldOrder(a));
  }
  return absl::OkStatus();
}

}  // namespace drsim::testpmd
