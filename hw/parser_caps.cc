#include "hw/parser_caps.h"

namespace drsim::hw {

bool SoftwareNicParses(Field f) {
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
  switch (Info(f).section) {
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

}  // namespace drsim::hw
