#include "sim/geneve_option.h"

#include "absl/strings/str_format.h"

namespace drsim::sim {

absl::StatusOr<uint32_t> GeneveOptionParser::Create(const GeneveTlvOption& option) {
  if (option.data_len > kMaxDataWords) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GENEVE TLV option data length %d words exceeds the device's %d "
                        "(max_geneve_tlv_option_data_len)",
                        option.data_len, kMaxDataWords));
  }
  if (objects_.size() >= kMaxOptions) {
    const auto& [id, held] = *objects_.begin();
    return absl::ResourceExhaustedError(absl::StrFormat(
        "GENEVE TLV option class 0x%04x type 0x%02x: the device parses %d option (max_geneve_tlv_options) "
        "and object %d already holds class 0x%04x type 0x%02x length %d",
        option.option_class, option.type, kMaxOptions, id, held.option_class, held.type, held.data_len));
  }
  const uint32_t id = next_id_++;
  objects_[id] = option;
  return id;
}

absl::StatusOr<GeneveTlvOption> GeneveOptionParser::Query(uint32_t object) const {
  auto it = objects_.find(object);
  if (it == objects_.end()) {
    return absl::NotFoundError(absl::StrFormat("GENEVE TLV option object %d does not exist", object));
  }
  return it->second;
}

absl::Status GeneveOptionParser::Destroy(uint32_t object) {
  auto it = objects_.find(object);
  if (it == objects_.end()) {
    return absl::NotFoundError(absl::StrFormat("GENEVE TLV option object %d does not exist", object));
  }
  if (matchers_ > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "GENEVE TLV option object %d is in use: %d matcher(s) match on misc.geneve_tlv_option_0_exist or "
        "misc3.geneve_tlv_option_0_data; destroy them first",
        object, matchers_));
  }
  objects_.erase(it);
  return absl::OkStatus();
}

GeneveOptionSelector GeneveOptionParser::selector() const {
  if (objects_.empty()) return {};
  const GeneveTlvOption& o = objects_.begin()->second;
  return GeneveOptionSelector::For(o.option_class, o.type);
}

}  // namespace drsim::sim
