// Program shapes: what the data path's shortcuts may take without walking.
#include "hw/action_program.h"

#include "gtest/gtest.h"

namespace drsim::hw {
namespace {

ActionProgram To(Destination d) {
  ActionProgram p;
  p.destination = d;
  return p;
}

TEST(ProgramShapeTest, TerminalDestinationsWithoutOpsSendOn) {
  for (Destination d : {Destination::kNone, Destination::kDefaultMiss, Destination::kDrop,
                        Destination::kQueue, Destination::kTir, Destination::kVport}) {
    EXPECT_EQ(ShapeOf(To(d)), ProgramShape::kSendsOn) << static_cast<int>(d);
  }
  EXPECT_EQ(ShapeOf(To(Destination::kTable)), ProgramShape::kOnlyJumps);
  for (Destination d :
       {Destination::kRootTable, Destination::kMeter, Destination::kSampler, Destination::kReplicate}) {
    EXPECT_EQ(ShapeOf(To(d)), ProgramShape::kOther) << static_cast<int>(d);
  }
}

TEST(ProgramShapeTest, AnyOpMakesItOther) {
  for (Destination d : {Destination::kDrop, Destination::kQueue, Destination::kTable}) {
    ActionProgram p = To(d);
    p.ops.push_back({OpCode::kCounter, 7});
    EXPECT_EQ(ShapeOf(p), ProgramShape::kOther) << static_cast<int>(d);
  }
}

TEST(ProgramShapeTest, RecordsCarryTheShapeOfEachPipe) {
  PipePrograms programs;
  programs[kRxPipe] = To(Destination::kTable);
  programs[kTxPipe] = To(Destination::kVport);
  programs[kTxPipe].ops.push_back({OpCode::kPopVlan});
  const RuleRecord r = RuleRecord::Of(&programs, 9);
  EXPECT_EQ(r.programs, &programs);
  EXPECT_EQ(r.rule_id, 9u);
  EXPECT_EQ(r.shape(kRxPipe), ProgramShape::kOnlyJumps);
  EXPECT_EQ(r.shape(kTxPipe), ProgramShape::kOther);
  EXPECT_EQ(r.tag(), 0u);
}

TEST(ProgramShapeTest, ATagLeavesTheShapesAndKeepsItsLow24Bits) {
  PipePrograms programs;
  programs[kRxPipe] = To(Destination::kQueue);
  programs[kTxPipe] = To(Destination::kTable);
  RuleRecord r = RuleRecord::Of(&programs, 3);
  for (uint32_t tag : {0xffffffu, 0x5abcdefu, 0u, 1u}) {
    r.set_tag(tag);
    EXPECT_EQ(r.tag(), tag & 0xffffff);
    EXPECT_EQ(r.shape(kRxPipe), ProgramShape::kSendsOn);
    EXPECT_EQ(r.shape(kTxPipe), ProgramShape::kOnlyJumps);
  }
}

}  // namespace
}  // namespace drsim::hw
