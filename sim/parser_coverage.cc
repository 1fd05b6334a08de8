#include "sim/parser_coverage.h"

#include "hw/match_layout.h"

namespace drsim::sim {
namespace {

using hw::Field;
using hw::Section;

bool Fills(Field f) {
  switch (f) {
    case Field::kOuterL3Ok:
    case Field::kOuterL4Ok:
    case Field::kOuterIpv4ChecksumOk:
    case Field::kOuterL4ChecksumOk:
    case Field::kInnerL3Ok:
    case Field::kInnerL4Ok:
    case Field::kInnerIpv4ChecksumOk:
    case Field::kInnerL4ChecksumOk:
    case Field::kSourceVhcaPort:
    case Field::kSourceEswitchOwnerVhcaId:
    case Field::kOuterEmdTag:
    case Field::kInnerEspSpi:
    case Field::kOuterEspSpi:
    case Field::kInnerFirstMplsLabel:
    case Field::kInnerFirstMplsExp:
    case Field::kInnerFirstMplsSBos:
    case Field::kInnerFirstMplsTtl:
      return false;
    default:
      break;
  }
  switch (hw::Info(f).section) {
    case Section::kOuter:
    case Section::kMisc:
    case Section::kInner:
    case Section::kMisc2:  // the registers are metadata: zero until an action sets them
    case Section::kMisc3:
      return true;
    case Section::kMisc4:
      return false;
    case Section::kMisc5:
      return f >= Field::kTunnelHeader0 && f <= Field::kTunnelHeader3;
  }
  return false;
}

hw::ParsedFields Build() {
  hw::ParsedFields parsed = hw::ParsedFields::All("software NIC");
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    if (!Fills(hw::FieldAt(i))) parsed.Remove(hw::FieldAt(i));
  }
  parsed.set_limits("it parses one tunnel level, so no MPLS inside a tunnel's inner frame");
  return parsed;
}

}  // namespace

const hw::ParsedFields& SoftwareParserFields() {
  static const hw::ParsedFields* const parsed = new hw::ParsedFields(Build());
  return *parsed;
}

}  // namespace drsim::sim
