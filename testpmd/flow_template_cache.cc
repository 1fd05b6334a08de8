#include "testpmd/flow_template_cache.h"

#include <utility>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "testpmd/pattern_template.h"
#include "testpmd/schema.h"
#include "testpmd/values.h"

namespace drsim::testpmd {
namespace {

// An item whose translation can be a template's (pattern_template.h), and its slot fields.
struct TemplateItem {
  const ItemDef* def;
  const FieldDef* src;  // nullptr: none (void)
  const FieldDef* dst;
};

TemplateItem MakeTemplateItem(absl::string_view name) {
  const ItemDef* def = FindItem(name);
  return TemplateItem{def, FindField(*def, "src"), FindField(*def, "dst")};
}

// The template item called `name`, or nullptr.
const TemplateItem* TemplateItemNamed(absl::string_view name) {
  static const TemplateItem kItems[] = {MakeTemplateItem("eth"),  MakeTemplateItem("ipv4"),
                                        MakeTemplateItem("ipv6"), MakeTemplateItem("tcp"),
                                        MakeTemplateItem("udp"),  MakeTemplateItem("void")};
  for (const TemplateItem& item : kItems) {
    if (SameWord(name, item.def->name)) return &item;
  }
  return nullptr;
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
  size_t i = 2;
  while (i < n && !SameWord(t[i].text, "pattern")) ++i;
  ++i;
  for (uint16_t index = 0; i < n && !SameWord(t[i].text, "end"); ++index) {
    const TemplateItem* item = TemplateItemNamed(t[i].text);
    if (item == nullptr) return false;
    for (++i; i < n && !SameWord(t[i].text, "/") && !SameWord(t[i].text, "end"); i += 3) {
      if (i + 2 >= n) return false;  // (the parser says what is missing)
      const absl::string_view name = t[i].text, op = t[i + 1].text;
      if (SameWord(op, "last")) return false;
      if (!SameWord(op, "is") && !SameWord(op, "spec")) continue;
      const FieldDef* field = SameWord(name, "src") ? item->src : SameWord(name, "dst") ? item->dst : nullptr;
      if (field == nullptr) continue;
      for (const PatternSlot& s : slots_) {
        if (s.item == index && s.field == field) return false;
      }
      slots_.push_back(PatternSlot{index, field});
      slot_tokens_.push_back(&t[i + 2]);
    }
    if (i < n && SameWord(t[i].text, "/")) ++i;
  }
  if (slots_.empty()) return false;
  // The key: the line from the first token to the last, each slot's value as \x01 (tokens are views of
  // the line; blanks are kept, so spacing tells shapes apart too).
  key_.clear();
  const char* from = t.front().text.data();
  for (const Token* slot : slot_tokens_) {
    key_.append(from, static_cast<size_t>(slot->text.data() - from));
    key_.push_back('\x01');
    from = slot->text.data() + slot->text.size();
  }
  key_.append(from, static_cast<size_t>(t.back().text.data() + t.back().text.size() - from));
  return true;
}

bool FlowTemplateCache::TryCreate(const CommandTokens& tokens) {
  has_shape_ = ReadShape(tokens);
  if (!has_shape_) return false;
  auto shape = shapes_.find(key_);
  if (shape == shapes_.end() || shape->second.flow == nullptr) return false;
  values_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) {
    const FieldDef& field = *slots_[i].field;
    absl::StatusOr<absl::uint128> value = ParseScalar(*slot_tokens_[i], field.kind, field.width, "");
    if (!value.ok()) return false;  // (the parser names the field)
    values_.push_back(*value);
  }
  return engine_.CreateFromTemplate(*shape->second.flow, values_, tokens.tokens.front().pos.line).ok();
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
  Shape& shape = shapes_[key_];
  if (shape.refused || shape.flow != nullptr || ++shape.runs < 2) return;
  absl::StatusOr<std::shared_ptr<const FlowTemplate>> flow =
      engine_.TemplateOfFlow(create->rule, *result->flow_id, slots_);
  if (flow.ok()) {
    shape.flow = *std::move(flow);
  } else {
    shape.refused = true;
  }
}

}  // namespace drsim::testpmd
