// testpmd meter profiles -> the PRM flow_meter_parameters a DR flow meter runs with (sim/meter.h), as the
// mlx5 PMD fills them on a ConnectX-6 Dx (ASO meter semantics):
//
//   srtcm_rfc2697 cir cbs ebs    CIR/CBS, EBS with EIR 0; committed tokens overflow into the excess bucket
//                                (bucket_overflow) when EBS is set
//   trtcm_rfc2698 cir pir cbs pbs  CIR/CBS and PIR/PBS as EIR/EBS, both_buckets_on_green (the peak bucket
//                                pays for green too); PIR >= CIR and PBS >= CBS
//   trtcm_rfc4115 cir eir cbs ebs  CIR/CBS, EIR/EBS, bucket_overflow (MEF coupling: yellow may use unused
//                                green tokens, as mlx5's documentation says)
//
// Rates are bytes (packet_mode: packets) per second; mlx5's conversion picks the mantissa (8 bits) and
// exponent (5 bits) whose 10^9 * m / 2^e is nearest the rate, and bursts are m * 2^e rounded up. Byte mode
// meters the IP length (meter_mode 0, mlx5's default); packet mode counts packets (meter_mode 3). Unlike
// the PMD, packet-mode values are not scaled by 128: the software NIC's packet mode counts whole packets.
//
// Pure functions; thread-safe.
#ifndef DRSIM_TESTPMD_METER_PROFILE_H_
#define DRSIM_TESTPMD_METER_PROFILE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sim/meter.h"
#include "testpmd/ast.h"

namespace drsim::testpmd {

// The parameters of `profile` (valid, green start colour). InvalidArgument for an RFC 2698 profile whose
// peak is below its committed rate or burst, or a burst too large for the PRM's 5-bit exponent.
absl::StatusOr<sim::MeterParams> MeterProfileParams(const AddMeterProfileCmd& profile);

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_METER_PROFILE_H_
