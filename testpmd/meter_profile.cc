#include "testpmd/meter_profile.h"

#include <cstdlib>

#include "absl/strings/str_format.h"

namespace drsim::testpmd {
namespace {

// The (mantissa, exponent) whose 10^9 * m / 2^e is nearest `rate` (0 -> 0, 0).
void RateToPrm(uint64_t rate, uint8_t* mantissa, uint8_t* exponent) {
  *mantissa = *exponent = 0;
  if (rate == 0) return;
  double best = -1;
  for (int m = 1; m <= 255; ++m) {
    for (int e = 0; e <= 31; ++e) {
      const double candidate = 1e9 * m / static_cast<double>(uint64_t{1} << e);
      const double delta = candidate > rate ? candidate - rate : rate - candidate;
      if (best < 0 || delta < best) {
        best = delta;
        *mantissa = static_cast<uint8_t>(m);
        *exponent = static_cast<uint8_t>(e);
      }
    }
  }
}

// The smallest exponent with a mantissa of at most 255 covering `burst` (rounded up); false when the
// exponent would exceed 31.
bool BurstToPrm(uint64_t burst, uint8_t* mantissa, uint8_t* exponent) {
  *mantissa = *exponent = 0;
  if (burst == 0) return true;
  for (int e = 0; e <= 31; ++e) {
    const uint64_t unit = uint64_t{1} << e;
    const uint64_t m = (burst + unit - 1) / unit;
    if (m <= 255) {
      *mantissa = static_cast<uint8_t>(m);
      *exponent = static_cast<uint8_t>(e);
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<sim::MeterParams> MeterProfileParams(const AddMeterProfileCmd& profile) {
  if (profile.algorithm == MeterAlgorithm::kTrTcmRfc2698 &&
      (profile.eir < profile.cir || profile.ebs < profile.cbs)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "trtcm_rfc2698: the peak rate %d and burst %d must not be below the committed rate %d and burst %d",
        profile.eir, profile.ebs, profile.cir, profile.cbs));
  }
  sim::MeterParams p;
  p.valid = true;
  p.start_color = sim::MeterColor::kGreen;
  p.meter_mode = profile.packet_mode ? 3 : 0;
  switch (profile.algorithm) {
    case MeterAlgorithm::kSrTcmRfc2697:
      p.bucket_overflow = profile.ebs != 0;
      break;
    case MeterAlgorithm::kTrTcmRfc2698:
      p.both_buckets_on_green = true;
      break;
    case MeterAlgorithm::kTrTcmRfc4115:
      p.bucket_overflow = true;
      break;
  }
  RateToPrm(profile.cir, &p.cir_mantissa, &p.cir_exponent);
  RateToPrm(profile.algorithm == MeterAlgorithm::kSrTcmRfc2697 ? 0 : profile.eir, &p.eir_mantissa,
            &p.eir_exponent);
  if (!BurstToPrm(profile.cbs, &p.cbs_mantissa, &p.cbs_exponent)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cbs %d is too large for the PRM's burst encoding", profile.cbs));
  }
  if (!BurstToPrm(profile.ebs, &p.ebs_mantissa, &p.ebs_exponent)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ebs %d is too large for the PRM's burst encoding", profile.ebs));
  }
  return p;
}

}  // namespace drsim::testpmd
