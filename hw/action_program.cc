#include "hw/action_program.h"

namespace drsim::hw {

ProgramShape ShapeOf(const ActionProgram& program) {
  if (!program.ops.empty()) return ProgramShape::kOther;
  switch (program.destination) {
    case Destination::kNone:
    case Destination::kDefaultMiss:
    case Destination::kDrop:
    case Destination::kQueue:
    case Destination::kTir:
    case Destination::kVport:
      return ProgramShape::kSendsOn;
    case Destination::kTable:
      return ProgramShape::kOnlyJumps;
    default:
      return ProgramShape::kOther;
  }
}

}  // namespace drsim::hw
