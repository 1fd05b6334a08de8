#include "hw/parser_caps.h"

namespace drsim::hw {

bool SoftwareNicParses(Field f) {
  const FieldInfo& fi = Info(f);
  switch (fi.section) {
    case Section::kOuter:
      return true;
    case Section::kInner:
    case Section::kMisc4:
    case Section::kMisc5:
      return false;
    case Section::kMisc2:
      // The registers are metadata (zero until an action sets them); MPLS is not parsed yet.
      return f >= Field::kMetadataRegC7 && f <= Field::kMetadataRegA;
    case Section::kMisc:
      switch (f) {
        case Field::kSourcePort:
        case Field::kSourceSqn:
        case Field::kOuterSecondPrio:
        case Field::kOuterSecondCfi:
        case Field::kOuterSecondVid:
        case Field::kOuterSecondCvlanTag:
        case Field::kOuterSecondSvlanTag:
        case Field::kOuterIpv6FlowLabel:
          return true;
        default:
          return false;
      }
    case Section::kMisc3:
      switch (f) {
        case Field::kOuterTcpSeqNum:
        case Field::kOuterTcpAckNum:
        case Field::kIcmpHeaderData:
        case Field::kIcmpv6HeaderData:
        case Field::kIcmpType:
        case Field::kIcmpCode:
        case Field::kIcmpv6Type:
        case Field::kIcmpv6Code:
          return true;
        default:
          return false;
      }
  }
  return false;
}

}  // namespace drsim::hw
