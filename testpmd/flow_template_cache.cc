#include "testpmd/flow_template_cache.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <variant>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/container/node_hash_map.h"
#include "absl/numeric/bits.h"
#include "absl/strings/str_split.h"
#include "testpmd/pattern_template.h"
#include "testpmd/schema.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

// What stands for a slot's value in a shape's key: a newline, which no line holds.
constexpr char kSlotMark = '\n';

// What a token is to TryLine's reading of slots: `is` or `spec` (an operator), the name of a field that can
// be a slot (a field: IsSlotFieldName), the words before a mark's id (`actions` or `/`, `mark`, `id`), or
// anything else.
enum WordKind : uint8_t { kOther, kOp, kField, kActions, kSlash, kMark, kId };
WordKind KindOf(absl::string_view word) {
  switch (word.size()) {
    case 1:
      return word[0] == '/' ? kSlash : kOther;
    case 2:
      if (word[0] == 'i' && word[1] == 's') return kOp;
      return word[0] == 'i' && word[1] == 'd' ? kId : kOther;
    case 4:
      if (std::memcmp(word.data(), "spec", 4) == 0) return kOp;
      return std::memcmp(word.data(), "mark", 4) == 0 ? kMark : kOther;
    case 7:
      return std::memcmp(word.data(), "actions", 7) == 0 ? kActions : kOther;
    default:
      return IsSlotFieldName(word) ? kField : kOther;
  }
}

// How a mark's id reads (the parser's `mark id` parameter).
const ParamDef& MarkIdParam() {
  static const ParamDef* const param = FindParam(*FindAction("mark"), "id");
  return *param;
}

}  // namespace

bool FlowTemplateCache::ReadShape(const CommandTokens& tokens) {
  const std::vector<Token>& t = tokens.tokens;
  const size_t n = t.size();
  slots_.clear();
  slot_tokens_.clear();
  // One line's `flow create` (a rule file's are; a command continued over lines is parsed).
  if (n < 4 || t.front().pos.line != t.back().pos.line || !SameWord(t[0].text, "flow") ||
      !SameWord(t[1].text, "create")) {
    return false;
  }
  mark_slot_ = false;
  size_t i = 2;
  while (i < n && !SameWord(t[i].text, "pattern")) ++i;
  ++i;
  for (uint16_t index = 0; i < n && !SameWord(t[i].text, "end"); ++index) {
    const ItemDef* item = FindItem(t[i].text);
    if (item == nullptr || !IsTemplateItem(item->type)) return false;
    for (++i; i < n && !SameWord(t[i].text, "/") && !SameWord(t[i].text, "end"); i += 3) {
      if (i + 2 >= n) return false;  // (the parser says what is missing)
      const absl::string_view op = t[i + 1].text;
      if (SameWord(op, "last")) return false;
      if (!SameWord(op, "is") && !SameWord(op, "spec")) continue;
      const FieldDef* field = FindField(*item, t[i].text);
      if (field == nullptr || !CanBeSlot(*item, *field)) continue;
      for (const PatternSlot& s : slots_) {
        if (s.item == index && s.field == field) return false;
      }
      slots_.push_back(PatternSlot{index, field});
      slot_tokens_.push_back(t[i + 2]);
    }
    if (i < n && SameWord(t[i].text, "/")) ++i;
  }
  // A mark's id: `mark id V` first in the actions or after a `/` there.
  while (i < n && !SameWord(t[i].text, "actions")) ++i;
  for (size_t j = i + 1; j + 2 < n; ++j) {
    if (SameWord(t[j].text, "mark") && SameWord(t[j + 1].text, "id") &&
        (j == i + 1 || SameWord(t[j - 1].text, "/"))) {
      slot_tokens_.push_back(t[j + 2]);
      mark_slot_ = true;
      break;
    }
  }
  if (slot_tokens_.empty()) return false;
  KeyOf(t.front().text.data(), t.back().text.data() + t.back().text.size());
  return true;
}

void FlowTemplateCache::KeyOf(const char* begin, const char* end) {
  // Sized first, then written in place (the key's room is kept from line to line).
  size_t bytes = static_cast<size_t>(end - begin);
  for (const Token& slot : slot_tokens_) bytes -= slot.text.size() - 1;
  key_.resize(bytes);
  char* to = key_.data();
  const char* from = begin;
  for (const Token& slot : slot_tokens_) {
    const size_t piece = static_cast<size_t>(slot.text.data() - from);
    std::memcpy(to, from, piece);
    to[piece] = kSlotMark;
    to += piece + 1;
    from = slot.text.data() + slot.text.size();
  }
  std::memcpy(to, from, static_cast<size_t>(end - from));
}

void FlowTemplateCache::Clear() {
  recent_.fill(nullptr);
  shapes_.clear();
  templates_ = 0;
}

const FlowTemplateCache::Shape* FlowTemplateCache::FindTemplated() {
  auto found = shapes_.find(key_);
  if (found == shapes_.end() || found->second.flow == nullptr) return nullptr;
  NoteRecent(&found->second);
  return &found->second;
}

void FlowTemplateCache::NoteRecent(const Shape* shape) {
  if (std::find(recent_.begin(), recent_.end(), shape) == recent_.end()) {
    std::copy_backward(recent_.begin(), recent_.end() - 1, recent_.end());
    recent_[0] = shape;
  }
}

bool FlowTemplateCache::EndsAlike(const Shape& shape, absl::string_view line) {
  const absl::string_view tail = shape.segments.back();
  return line.size() >= tail.size() &&
         std::memcmp(line.data() + line.size() - tail.size(), tail.data(), tail.size()) == 0;
}

bool FlowTemplateCache::Matches(const Shape& shape, absl::string_view line, int line_number) {
  const std::vector<absl::string_view>& segments = shape.segments;
  slot_tokens_.clear();
  size_t at = 0;
  for (size_t i = 0; i < segments.size(); ++i) {
    const absl::string_view segment = segments[i];
    if (line.size() - at < segment.size() ||
        std::memcmp(line.data() + at, segment.data(), segment.size()) != 0) {
      return false;
    }
    at += segment.size();
    if (i + 1 == segments.size()) break;
    // A slot: one token (the next segment starts with a blank), not a comment.
    const size_t end = TokenEnd(line, at);
    if (end == at || line[at] == '#') return false;
    slot_tokens_.push_back(
        Token{line.substr(at, end - at), SourcePos{line_number, static_cast<int>(at) + 1}});
    at = end;
  }
  return at == line.size();
}

bool FlowTemplateCache::CreateFrom(const Shape& shape, int line_number) {
  values_.clear();
  for (size_t i = 0; i < shape.values.size(); ++i) {
    const SlotValue& slot = shape.values[i];
    absl::StatusOr<absl::uint128> value = ParseScalar(slot_tokens_[i], slot.kind, slot.width, "");
    if (!value.ok()) return false;  // (the parser names the field)
    values_.push_back(*value);
  }
  return engine_.CreateFromTemplate(*shape.flow, values_, line_number).ok();
}

const FlowTemplateCache::Shape* FlowTemplateCache::TemplatedShapeOfLine(absl::string_view line) {
  KeyOf(line.data(), line.data() + line.size());
  const Shape* shape = FindTemplated();
  return shape != nullptr && shape->values.size() == slot_tokens_.size() ? shape : nullptr;
}

bool FlowTemplateCache::SpacedSlots(absl::string_view line, int line_number) {
  using Word = uint64_t;
  slot_tokens_.clear();
  if (line.size() > kPlainLineBytes) return false;
  // Bit k of word k / 64: byte k is a ' ' (spaces), an 's' (esses); 16 bytes a step, the line padded with
  // NULs to whole words, and a word of zeros after them for the shifts below.
  const size_t words = (line.size() + 63) / 64;
  Word spaces[kPlainLineWords + 1], esses[kPlainLineWords + 1];
  alignas(16) char padded[16];
  for (size_t w = 0; w < words; ++w) {
    Word space = 0, s = 0;
    for (size_t q = 0; q < 4; ++q) {
      const size_t at = 64 * w + 16 * q;
      const char* bytes = line.data() + at;
      if (at + 16 > line.size()) {
        std::memset(padded, 0, sizeof padded);
        if (at < line.size()) std::memcpy(padded, bytes, line.size() - at);
        bytes = padded;
      }
#if defined(__SSE2__)
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
      space |= Word{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(' '))))}
               << (16 * q);
      s |= Word{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('s'))))} << (16 * q);
#else
      for (size_t k = 0; k < 16; ++k) {
        space |= Word{bytes[k] == ' '} << (16 * q + k);
        s |= Word{bytes[k] == 's'} << (16 * q + k);
      }
#endif
    }
    spaces[w] = space;
    esses[w] = s;
  }
  spaces[words] = esses[words] = 0;
  // Word `w` of `map` moved down by `k` bytes.
  auto down = [](const Word* map, int k, size_t w) { return map[w] >> k | map[w + 1] << (64 - k); };
  size_t past_value = 0;  // the end of the last slot value taken
  for (size_t w = 0; w < words; ++w) {
    // Where " ?s " and " s??? " start: " is " and " spec " among them, checked below.
    const Word is = spaces[w] & down(esses, 2, w) & down(spaces, 3, w);
    const Word spec = spaces[w] & down(esses, 1, w) & down(spaces, 5, w);
    for (Word at = is | spec; at != 0; at &= at - 1) {
      const size_t k = w * 64 + static_cast<size_t>(absl::countr_zero(at));
      if (k < 4 || k < past_value) continue;
      const char* op = line.data() + k;  // (at least 4 bytes, then a space)
      size_t value;
      if (std::memcmp(op, " is ", 4) == 0) {
        value = k + 4;
      } else if (k + 6 <= line.size() && std::memcmp(op, " spec ", 6) == 0) {
        value = k + 6;
      } else {
        continue;
      }
      // The word before the operator names a slot's field (src, dst, vid, ...: IsSlotFieldName; k >= 4).
      const size_t field = k - kSlotFieldNameBytes;
      if (line[field - 1] != ' ' || !IsSlotFieldName(line.substr(field, kSlotFieldNameBytes))) continue;
      const size_t end = value < line.size() ? TokenEnd(line, value) : value;
      if (end == value || line[value] == '#') return false;  // (as Matches refuses the line)
      slot_tokens_.push_back(
          Token{line.substr(value, end - value), SourcePos{line_number, static_cast<int>(value) + 1}});
      past_value = end;
    }
  }
  if (!SpacedMarkSlot(line, past_value, line_number)) return false;
  return !slot_tokens_.empty();
}

bool FlowTemplateCache::SpacedMarkSlot(absl::string_view line, size_t from, int line_number) {
  constexpr absl::string_view kActions = " actions ", kMarkId = " mark id ";
  const size_t actions = line.find(kActions, from);
  if (actions == absl::string_view::npos) return true;
  const size_t mark = line.find(kMarkId, actions + kActions.size() - 1);
  if (mark == absl::string_view::npos) return true;
  // First in the actions (its leading blank is the actions' trailing one), or after a `/`.
  if (mark != actions + kActions.size() - 1 && !(line[mark - 1] == '/' && line[mark - 2] == ' ')) return true;
  const size_t value = mark + kMarkId.size();
  const size_t end = value < line.size() ? TokenEnd(line, value) : value;
  if (end == value || line[value] == '#') return false;  // (as Matches refuses the line)
  slot_tokens_.push_back(
      Token{line.substr(value, end - value), SourcePos{line_number, static_cast<int>(value) + 1}});
  return true;
}

bool FlowTemplateCache::TryLine(absl::string_view line, int line_number) {
  if (templates_ == 0) return false;
  // The recent shapes whose last part the line ends with (shapes taking turns mostly differ in their
  // actions, at the end); the first of those decides, as shapes that end alike differ before.
  for (const Shape* shape : recent_) {
    if (shape == nullptr) break;
    if (!EndsAlike(*shape, line)) continue;
    if (Matches(*shape, line, line_number)) return CreateFrom(*shape, line_number);
    break;
  }
  // The slots where the line is spaced as rule files are (more shapes take turns than recent_ holds: rules
  // over many queues and marks), found without reading its tokens.
  if (SpacedSlots(line, line_number)) {
    if (const Shape* shape = TemplatedShapeOfLine(line)) return CreateFrom(*shape, line_number);
  }
  // The slots: each token after a slot field's name and `is` or `spec`. The line must be its tokens, first to
  // last (no blank before or after, which no key holds).
  slot_tokens_.clear();
  // The kinds of the last three words, newest first; whether the words so far reached the actions, and
  // took a mark's id there.
  WordKind kinds[3] = {kOther, kOther, kOther};
  bool in_actions = false, mark_taken = false;
  size_t first = line.size(), past_last = 0;
  const bool plain = ForEachPlainToken(line, [&](size_t start, size_t past) {
    const absl::string_view word(line.data() + start, past - start);
    const bool field_slot = !in_actions && kinds[0] == kOp && kinds[1] == kField;
    const bool mark_slot = in_actions && !mark_taken && kinds[0] == kId && kinds[1] == kMark &&
                           (kinds[2] == kSlash || kinds[2] == kActions);
    if (field_slot || mark_slot) {
      slot_tokens_.push_back(Token{word, SourcePos{line_number, static_cast<int>(start) + 1}});
    }
    mark_taken |= mark_slot;
    if (first == line.size()) first = start;
    past_last = past;
    kinds[2] = kinds[1];
    kinds[1] = kinds[0];
    kinds[0] = KindOf(word);
    in_actions |= kinds[0] == kActions;
  });
  if (!plain || slot_tokens_.empty() || first != 0 || past_last != line.size()) return false;
  const Shape* shape = TemplatedShapeOfLine(line);
  return shape != nullptr && CreateFrom(*shape, line_number);
}

bool FlowTemplateCache::TryCreate(const CommandTokens& tokens) {
  has_shape_ = ReadShape(tokens);
  if (!has_shape_) return false;
  const Shape* shape = FindTemplated();
  return shape != nullptr && CreateFrom(*shape, tokens.tokens.front().pos.line);
}

void FlowTemplateCache::Ran(const Command& command, const CommandResult* result) {
  if (std::holds_alternative<FlowValidateCmd>(command.body) ||
      std::holds_alternative<FlowListCmd>(command.body) ||
      std::holds_alternative<FlowQueryCmd>(command.body)) {
    return;  // they change nothing
  }
  const auto* create = std::get_if<FlowCreateCmd>(&command.body);
  if (create == nullptr) {
    Clear();
    return;
  }
  if (result == nullptr || !has_shape_ || !result->flow_id) return;
  if (shapes_.size() >= kMaxShapes && !shapes_.contains(key_)) {
    absl::erase_if(shapes_, [](const auto& entry) { return entry.second.flow == nullptr; });
    if (shapes_.size() >= kMaxShapes) Clear();
  }
  auto entry = shapes_.try_emplace(key_).first;
  Shape& shape = entry->second;
  if (shape.refused || shape.flow != nullptr || ++shape.runs < 2) return;
  absl::StatusOr<std::shared_ptr<const FlowTemplate>> flow =
      engine_.TemplateOfFlow(create->rule, *result->flow_id, slots_, mark_slot_);
  if (flow.ok()) {
    shape.flow = *std::move(flow);
    for (const PatternSlot& slot : slots_) shape.values.push_back({slot.field->kind, slot.field->width});
    if (mark_slot_) shape.values.push_back({MarkIdParam().kind, MarkIdParam().width});
    shape.segments = absl::StrSplit(entry->first, kSlotMark);
    ++templates_;
  } else {
    shape.refused = true;
  }
}

}  // namespace drsim::testpmd
