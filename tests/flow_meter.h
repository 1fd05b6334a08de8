// The flow meter tests configure, and the PRM flow_meter_parameters bytes the meter verbs take.
//
// What: TestFlowMeter is rdma-core's test_flow_meter meter (valid, bucket_overflow, start green, cir 1 x
// 2^6: 15.625 MB/s) with a 4 KiB committed burst (cbs 1 x 2^12) and no excess bucket. MeterPrm writes
// parameters (TestFlowMeter's by default) as the 32 PRM bytes.
// How: MeterPrm is sim::MeterParams::Serialize; a test of the encoder itself checks bytes of its own.
// Thread-safety: pure functions.
#ifndef DRSIM_TESTS_FLOW_METER_H_
#define DRSIM_TESTS_FLOW_METER_H_

#include <cstdint>
#include <vector>

#include "sim/meter.h"

namespace drsim::tests {

inline sim::MeterParams TestFlowMeter() {
  sim::MeterParams p;
  p.valid = true;
  p.bucket_overflow = true;
  p.start_color = sim::MeterColor::kGreen;
  p.cir_mantissa = 1;
  p.cir_exponent = 6;
  p.cbs_mantissa = 1;
  p.cbs_exponent = 12;
  return p;
}

inline std::vector<uint8_t> MeterPrm(const sim::MeterParams& p = TestFlowMeter()) {
  std::vector<uint8_t> prm(32);
  p.Serialize(prm.data());
  return prm;
}

}  // namespace drsim::tests

#endif  // DRSIM_TESTS_FLOW_METER_H_
