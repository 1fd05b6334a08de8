#include "sim/meter.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"

namespace drsim::sim {
namespace {

double Rate(uint8_t mantissa, uint8_t exponent) { return 1e9 * mantissa / std::ldexp(1.0, exponent); }
double Burst(uint8_t mantissa, uint8_t exponent) { return mantissa * std::ldexp(1.0, exponent); }

}  // namespace

absl::StatusOr<MeterParams> MeterParams::Parse(absl::Span<const uint8_t> prm) {
  if (prm.size() > 32) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flow meter parameters: %d bytes; the PRM structure is 32", prm.size()));
  }
  uint8_t b[32] = {};
  if (!prm.empty()) std::memcpy(b, prm.data(), prm.size());
  MeterParams p;
  p.valid = b[0] & 0x80;
  p.bucket_overflow = b[0] & 0x40;
  const int start = (b[0] >> 4) & 3;
  if (start == 3) return absl::InvalidArgumentError("flow meter parameters: start_color 3 is not a colour");
  p.start_color = static_cast<MeterColor>(start);
  p.both_buckets_on_green = b[0] & 0x08;
  p.meter_mode = b[0] & 3;
  p.cbs_exponent = b[8] & 0x1f;
  p.cbs_mantissa = b[9];
  p.cir_exponent = b[10] & 0x1f;
  p.cir_mantissa = b[11];
  p.ebs_exponent = b[16] & 0x1f;
  p.ebs_mantissa = b[17];
  p.eir_exponent = b[18] & 0x1f;
  p.eir_mantissa = b[19];
  return p;
}

void MeterParams::Serialize(uint8_t* b) const {
  std::memset(b, 0, 32);
  b[0] = static_cast<uint8_t>((valid ? 0x80 : 0) | (bucket_overflow ? 0x40 : 0) |
                              static_cast<int>(start_color) << 4 | (both_buckets_on_green ? 0x08 : 0) |
                              (meter_mode & 3));
  b[8] = cbs_exponent;
  b[9] = cbs_mantissa;
  b[10] = cir_exponent;
  b[11] = cir_mantissa;
  b[16] = ebs_exponent;
  b[17] = ebs_mantissa;
  b[18] = eir_exponent;
  b[19] = eir_mantissa;
}

double MeterParams::cir_per_second() const { return Rate(cir_mantissa, cir_exponent); }
double MeterParams::eir_per_second() const { return Rate(eir_mantissa, eir_exponent); }
double MeterParams::cbs() const { return Burst(cbs_mantissa, cbs_exponent); }
double MeterParams::ebs() const { return Burst(ebs_mantissa, ebs_exponent); }

void TokenMeter::Configure(const MeterParams& params, bool active) {
  params_ = params;
  active_ = active;
  committed_ = params.cbs();
  excess_ = params.ebs();
}

void TokenMeter::Modify(const MeterParams& p, bool active, uint64_t select) {
  if (select & kMeterSelectActive) active_ = active;
  if (select & kMeterSelectCbs) {
    params_.cbs_exponent = p.cbs_exponent;
    params_.cbs_mantissa = p.cbs_mantissa;
  }
  if (select & kMeterSelectCir) {
    params_.cir_exponent = p.cir_exponent;
    params_.cir_mantissa = p.cir_mantissa;
  }
  if (select & kMeterSelectEbs) {
    params_.ebs_exponent = p.ebs_exponent;
    params_.ebs_mantissa = p.ebs_mantissa;
  }
  if (select & kMeterSelectEir) {
    params_.eir_exponent = p.eir_exponent;
    params_.eir_mantissa = p.eir_mantissa;
  }
  committed_ = std::min(committed_, params_.cbs());
  excess_ = std::min(excess_, params_.ebs());
}

void TokenMeter::Refill(uint64_t now_ns) {
  if (now_ns <= last_ns_) return;  // time only moves forward
  const double seconds = (now_ns - last_ns_) * 1e-9;
  last_ns_ = now_ns;
  const double committed = committed_ + params_.cir_per_second() * seconds;
  double overflow = std::max(0.0, committed - params_.cbs());
  committed_ = std::min(committed, params_.cbs());
  if (!params_.bucket_overflow || params_.both_buckets_on_green) overflow = 0;
  excess_ = std::min(excess_ + params_.eir_per_second() * seconds + overflow, params_.ebs());
}

MeterColor TokenMeter::Mark(uint64_t now_ns, uint32_t l2_bytes, uint32_t ip_bytes,
                            std::optional<MeterColor> pre_color) {
  if (!active_) return MeterColor::kGreen;
  Refill(now_ns);
  double size;
  switch (params_.meter_mode) {
    case 0:
      size = ip_bytes;
      break;
    case 1:
      size = l2_bytes;
      break;
    case 2:
      size = l2_bytes + 20.0;
      break;
    default:
      size = 1;
      break;
  }
  const MeterColor pre = pre_color.value_or(params_.start_color);
  if (params_.both_buckets_on_green) {
    // RFC 2698: the excess bucket is the peak bucket.
    if (pre == MeterColor::kRed || excess_ < size) return MeterColor::kRed;
    if (pre == MeterColor::kYellow || committed_ < size) {
      excess_ -= size;
      return MeterColor::kYellow;
    }
    excess_ -= size;
    committed_ -= size;
    return MeterColor::kGreen;
  }
  // RFC 2697 / RFC 4115.
  if (pre == MeterColor::kGreen && committed_ >= size) {
    committed_ -= size;
    return MeterColor::kGreen;
  }
  if (pre != MeterColor::kRed && excess_ >= size) {
    excess_ -= size;
    return MeterColor::kYellow;
  }
  return MeterColor::kRed;
}

}  // namespace drsim::sim
