// hw::ParsedFields: the match-layout fields a device's packet parser fills.
//
// What
//   A device reports the set through hw::Device::parsed_fields(). The matcher compiler refuses a mask on a
//   field outside it: a rule on such a field would be accepted and never match, where rdma-core refuses
//   fields a device's flex parsers lack. On root tables the set is the device's flow-table field support:
//   the matcher is accepted and its rules refused, as the firmware refuses their flow group.
//
// How
//   One bit per field of the layout (hw/match_layout.h). The set also names its parser and says in one
//   phrase what the parser leaves out, so the compiler's error can tell the user why.
#ifndef DRSIM_HW_PARSED_FIELDS_H_
#define DRSIM_HW_PARSED_FIELDS_H_

#include <bitset>
#include <string>
#include <utility>

#include "hw/match_layout.h"

namespace drsim::hw {

class ParsedFields {
 public:
  // Every field of the layout; `parser` names the parser in errors.
  static ParsedFields All(std::string parser) {
    ParsedFields p(std::move(parser));
    p.fields_.set();
    return p;
  }

  bool Contains(Field field) const { return fields_.test(static_cast<size_t>(field)); }
  ParsedFields& Remove(Field field) {
    fields_.reset(static_cast<size_t>(field));
    return *this;
  }
  // What the parser leaves out, in one phrase for error messages ("" when nothing is worth saying).
  ParsedFields& set_limits(std::string limits) {
    limits_ = std::move(limits);
    return *this;
  }

  const std::string& parser() const { return parser_; }
  const std::string& limits() const { return limits_; }

 private:
  explicit ParsedFields(std::string parser) : parser_(std::move(parser)) {}

  std::bitset<kNumFields> fields_;
  std::string parser_;
  std::string limits_;
};

}  // namespace drsim::hw

#endif  // DRSIM_HW_PARSED_FIELDS_H_
