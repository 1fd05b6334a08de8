// sim::GeneveOptionParser: the GENEVE TLV option parser objects of the software NIC.
//
// What
//   mlx5's GENEVE_TLV_OPTION general object (obj_type 0xb) tells the firmware's flex parser which GENEVE
//   option to sample: a class, a type and the option's data length in 4-byte words. Packets then report
//   the first option of that class and type, wherever it sits among their options, as "option 0":
//   misc.geneve_tlv_option_0_exist and misc3.geneve_tlv_option_0_data (sim/packet_parser.h).
//
// How
//   The limits are the public ones (DPDK's mlx5 guide for SW steering; the capability page reports them):
//   one option per device (kMaxOptions, max_geneve_tlv_options), data of at most kMaxDataWords words
//   (max_geneve_tlv_option_data_len). A second object fails with ResourceExhausted (ENOSPC) whatever its
//   class and type. An object cannot be destroyed (FailedPrecondition, EBUSY) while matchers read the
//   option 0 fields: the lookups they compiled sample the parser it set up. The packet parser matches
//   an option by class and type; the configured length is kept and read back (a packet's own length
//   field says where its option ends).
//
// Thread-safety
//   Not thread-safe: the NIC calls it under its control lock and publishes selector() to its workers.
#ifndef DRSIM_SIM_GENEVE_OPTION_H_
#define DRSIM_SIM_GENEVE_OPTION_H_

#include <cstdint>
#include <map>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sim/packet_parser.h"

namespace drsim::sim {

// One option as the object names it.
struct GeneveTlvOption {
  uint16_t option_class = 0;
  uint8_t type = 0;       // the whole byte: its top bit is the critical bit
  uint8_t data_len = 0;   // 4-byte words of data after the option header (0..kMaxDataWords)

  friend bool operator==(const GeneveTlvOption& a, const GeneveTlvOption& b) {
    return a.option_class == b.option_class && a.type == b.type && a.data_len == b.data_len;
  }
};

class GeneveOptionParser {
 public:
  static constexpr uint32_t kMaxOptions = 1;
  static constexpr uint8_t kMaxDataWords = 7;

  // A new object for `option`; returns its id (never 0). InvalidArgument for a data length over
  // kMaxDataWords, ResourceExhausted when kMaxOptions objects exist.
  absl::StatusOr<uint32_t> Create(const GeneveTlvOption& option);
  // The object's option; NotFound for an unknown id.
  absl::StatusOr<GeneveTlvOption> Query(uint32_t object) const;
  // NotFound for an unknown id; FailedPrecondition while matchers read the option 0 fields.
  absl::Status Destroy(uint32_t object);

  // A matcher reading misc.geneve_tlv_option_0_exist or misc3.geneve_tlv_option_0_data came or went.
  void RetainMatcher() { ++matchers_; }
  void ReleaseMatcher() { --matchers_; }

  // What the packet parser samples: the configured option's class and type, or none.
  GeneveOptionSelector selector() const;

 private:
  std::map<uint32_t, GeneveTlvOption> objects_;  // by id
  uint32_t next_id_ = 1;
  int matchers_ = 0;
};

}  // namespace drsim::sim

#endif  // DRSIM_SIM_GENEVE_OPTION_H_
