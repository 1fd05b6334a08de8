// Flow meters of the software NIC: the PRM flow_meter_parameters (32 bytes) and a two-bucket token meter
// run in the NIC's simulated time.
//
// Parameters (mlx5_ifc flow_meter_parameters): valid, bucket_overflow, start_color, both_buckets_on_green,
// meter_mode (0 IP length, 1 L2 length, 2 L2 length + 20 bytes of preamble and inter-packet gap,
// 3 packets), and CBS/CIR/EBS/EIR as mantissa and exponent: rate = 10^9 * mantissa / 2^exponent bytes
// (8 * that in bits) or packets per second, burst = mantissa * 2^exponent bytes or packets.
//
// Marking (colour blind when start_color is green, colour aware otherwise), buckets starting full:
//  - both_buckets_on_green = 0 (srTCM, RFC 2697, when EIR is 0; RFC 4115 otherwise): green if the
//    committed bucket holds the packet, else yellow if the excess bucket does, else red; with
//    bucket_overflow, committed tokens that overflow CBS go to the excess bucket;
//  - both_buckets_on_green = 1 (trTCM, RFC 2698, the excess bucket as the peak bucket at EIR = PIR):
//    red if the peak bucket cannot hold it, else yellow if the committed one cannot, else green; green
//    takes tokens from both buckets.
// Colours: red 0, yellow 1, green 2 (the PRM's values).
//
// Not thread-safe: a meter is updated by the thread processing its packets.
#ifndef DRSIM_SIM_METER_H_
#define DRSIM_SIM_METER_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace drsim::sim {

enum class MeterColor : uint8_t { kRed = 0, kYellow = 1, kGreen = 2 };

struct MeterParams {
  bool valid = false;
  bool bucket_overflow = false;
  MeterColor start_color = MeterColor::kGreen;
  bool both_buckets_on_green = false;
  uint8_t meter_mode = 0;
  uint8_t cbs_exponent = 0, cbs_mantissa = 0, cir_exponent = 0, cir_mantissa = 0;
  uint8_t ebs_exponent = 0, ebs_mantissa = 0, eir_exponent = 0, eir_mantissa = 0;

  // Parses the PRM bytes (up to 32; missing bytes are zero). InvalidArgument for more than 32 bytes, a
  // start colour of 3, or exponents above 31.
  static absl::StatusOr<MeterParams> Parse(absl::Span<const uint8_t> prm);
  // Writes the PRM bytes (32).
  void Serialize(uint8_t* prm) const;

  double cir_per_second() const;  // bytes (or packets) per second
  double eir_per_second() const;
  double cbs() const;  // bytes (or packets)
  double ebs() const;
};

// The modify_field_select bits of mlx5dv_dr_action_modify_flow_meter (PRM flow_meter modify fields).
inline constexpr uint64_t kMeterSelectActive = 1 << 0;
inline constexpr uint64_t kMeterSelectCbs = 1 << 1;
inline constexpr uint64_t kMeterSelectCir = 1 << 2;
inline constexpr uint64_t kMeterSelectEbs = 1 << 3;
inline constexpr uint64_t kMeterSelectEir = 1 << 4;

class TokenMeter {
 public:
  explicit TokenMeter(const MeterParams& params, bool active = true) { Configure(params, active); }

  // New parameters; the buckets are refilled to their new sizes.
  void Configure(const MeterParams& params, bool active);
  // Applies the selected fields of `params` (kMeterSelect* bits); the buckets keep their tokens (capped).
  void Modify(const MeterParams& params, bool active, uint64_t select);
  const MeterParams& params() const { return params_; }
  bool active() const { return active_; }

  // Colours a packet of `l2_bytes` (frame length) and `ip_bytes` (IP length) arriving at `now_ns`,
  // pre-coloured `pre` (the parameters' start colour when not given; green = colour blind). An inactive
  // meter passes everything green.
  MeterColor Mark(uint64_t now_ns, uint32_t l2_bytes, uint32_t ip_bytes, std::optional<MeterColor> pre = {});

 private:
  void Refill(uint64_t now_ns);

  MeterParams params_;
  bool active_ = true;
  double committed_ = 0, excess_ = 0;  // tokens
  uint64_t last_ns_ = 0;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_METER_H_
