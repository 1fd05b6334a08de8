// Internal to the runner: a rule file's `flow create` commands of a shape seen before, installed from a
// flow template (engine.h) without being parsed, translated or lowered.
//
// What
//   A command's shape is its tokens with its slots' values left out: the values given with `is` or `spec`
//   to the addresses, ports, VLAN ids, VNIs, TOS and TTL of template items (pattern_template.h's
//   CanBeSlot), and a mark action's id (a flow's mark is mostly its own). The second time a shape runs, the
//   cache asks the engine for the template of the flow it made; from then on TryCreate installs commands of
//   that shape: it reads their slot values as the parser reads them and has FlowEngine::CreateFromTemplate
//   make the flow. Flows so made equal, byte for byte, those the commands would have made (runner_stream_test
//   and drctl_differential_test hold the two ways equal).
//
// How
//   A command TryCreate does not install (no template for its shape, a value that does not read, DR
//   refusing the rule) is left to the caller, who parses and executes it as any other and then tells
//   Ran what it was, so that its errors read as always. A command other than a flow create, validate, list
//   or query drops every template: it may change what later commands mean (a set raw_encap, a destroyed
//   flow's shared objects). At most kMaxShapes shapes are kept; past that, those without a template are
//   forgotten. A shape is a byte string: the command's line from its first token to its last, each slot's
//   value cut out. TryLine reads it from a plain line (lexer.h) before the line is lexed, taking as slots
//   the values given to a slot field's name (`src`, `dst`, `vid`, ...) with `is` or `spec`, and the value
//   after `mark id` first in the actions or after a `/` there; a line so read
//   whose shape has a template is the same tokens as the command that made it but for the slot values, which
//   are single tokens, so it is made as TryCreate would make it. Before that, TryLine tries the line as the
//   key, with a value in each slot, of the newest of the last few shapes found whose last part (where action
//   lists differ) it ends with: that needs no tokens at all. Then, as many shapes take turns in files whose
//   rules spread over many queues and marks, it finds the slots of a line spaced as rule files are (single
//   spaces around a field's name and `is` or `spec`) from maps of its bytes, and looks its key up; only a
//   line that neither way finds has its tokens read. A key so found is the shape's key with a single token in
//   each slot, as Matches requires.
//
// Thread-safety
//   One reader's, as the engine is.
#ifndef DRSIM_TESTPMD_FLOW_TEMPLATE_CACHE_H_
#define DRSIM_TESTPMD_FLOW_TEMPLATE_CACHE_H_

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/strings/string_view.h"
#include "testpmd/ast.h"
#include "testpmd/engine.h"
#include "testpmd/lexer.h"
#include "testpmd/schema.h"

namespace drsim::testpmd {

class FlowTemplateCache {
 public:
  static constexpr size_t kMaxShapes = 16384;  // (a template takes about 1.5 KB)

  explicit FlowTemplateCache(FlowEngine& engine) : engine_(engine) {}
  // Drops the templates first: they hold the engine's objects.
  ~FlowTemplateCache() { Clear(); }

  // Installs the command of plain line `line` (lexer.h) from its shape's template, before it is lexed:
  // true when it did (the command ran), false when the caller must lex it (and go on to TryCreate).
  bool TryLine(absl::string_view line, int line_number);
  // Installs `tokens` from its shape's template: true when it did (the command ran), false when the
  // caller must parse and execute it.
  bool TryCreate(const CommandTokens& tokens);
  // After the caller executed the command TryCreate last declined: `command` as parsed, `result` its
  // result when it ran (nullptr when it failed).
  void Ran(const Command& command, const CommandResult* result);
  // Drops every shape and template.
  void Clear();

 private:
  // How a slot's value reads: its field's or parameter's kind and width.
  struct SlotValue {
    ValueKind kind;
    int width;
  };
  struct Shape {
    int runs = 0;          // commands of the shape that ran
    bool refused = false;  // the engine made no template of it
    std::shared_ptr<const FlowTemplate> flow;
    // With a template: how its slots' values read (the mark's last), and its key's parts around the slots
    // (views of the key).
    std::vector<SlotValue> values;
    std::vector<absl::string_view> segments;
  };

  // Reads `tokens`' shape into key_, slots_, mark_slot_ and slot_tokens_; false when it has no slots or is
  // not a `flow create` whose items can all be a template's.
  bool ReadShape(const CommandTokens& tokens);
  // Makes key_ the line's text from `begin` to `end` with each of slot_tokens_ (views of it) cut out.
  void KeyOf(const char* begin, const char* end);
  // The shape of key_ with a template, or nullptr; recent_ remembers it.
  const Shape* FindTemplated();
  // Makes `shape` the newest of recent_ unless recent_ holds it.
  void NoteRecent(const Shape* shape);
  // Reads into slot_tokens_ the token after each " src is ", " dst is ", " src spec " and " dst spec " of
  // `line` (single spaces), from maps of its bytes, and after its " actions mark id " or " / mark id " past
  // " actions ": the slots ReadShape would read where a line is spaced so (one of kPlainLineBytes at most,
  // lexer.h). False when it finds none, or one that Matches would refuse.
  bool SpacedSlots(absl::string_view line, int line_number);
  // Adds to slot_tokens_ the token after `line`'s spaced " actions mark id " or " / mark id " from `from`
  // on, if any; false if that token is none Matches would take.
  bool SpacedMarkSlot(absl::string_view line, size_t from, int line_number);
  // The shape with a template whose key is `line` with slot_tokens_ (views of it) cut out, or nullptr.
  const Shape* TemplatedShapeOfLine(absl::string_view line);
  // Whether `line` ends with `shape`'s key's last part.
  static bool EndsAlike(const Shape& shape, absl::string_view line);
  // Whether `line` is `shape`'s key with a single token in each slot (into slot_tokens_).
  bool Matches(const Shape& shape, absl::string_view line, int line_number);
  // Makes the flow of `shape` with the values of slot_tokens_; true when it did.
  bool CreateFrom(const Shape& shape, int line_number);

  FlowEngine& engine_;
  // By key; a node map, so that recent_ and segments stay put as shapes come.
  absl::node_hash_map<std::string, Shape> shapes_;
  size_t templates_ = 0;  // shapes with a template
  // The shapes FindTemplated found last, newest first: a file's next command is mostly of one of them
  // (rules spread over a few queues take turns).
  static constexpr size_t kRecent = 8;
  std::array<const Shape*, kRecent> recent_{};
  // The last command's shape (ReadShape, TryLine), its room kept from command to command: its key, the
  // tokens of its slot values (views of its line) and, from ReadShape, the slots.
  bool has_shape_ = false;
  std::string key_;
  std::vector<PatternSlot> slots_;
  bool mark_slot_ = false;  // the last of slot_tokens_ is the mark's id
  std::vector<Token> slot_tokens_;
  std::vector<absl::uint128> values_;
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_FLOW_TEMPLATE_CACHE_H_
