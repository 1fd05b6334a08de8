#include "testpmd/geneve_option.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "testpmd/source.h"

namespace drsim::testpmd {

// The NIC's object, destroyed with the last hold.
struct GeneveOptionResource::Object {
  Object(sim::Nic& nic, uint32_t id, sim::GeneveTlvOption option) : nic(nic), id(id), option(option) {}
  ~Object() { nic.DestroyGeneveTlvOption(id).IgnoreError(); }  // the flows' matchers are gone by now
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  sim::Nic& nic;
  uint32_t id;
  sim::GeneveTlvOption option;
};

absl::StatusOr<std::shared_ptr<const void>> GeneveOptionResource::Acquire(const GeneveOptionUse& use) {
  const sim::GeneveTlvOption option{use.option_class, use.type, use.length};
  if (std::shared_ptr<Object> held = object_.lock()) {
    if (held->option == option) return std::shared_ptr<const void>(held);
    return ErrorAt(use.pos, absl::StatusCode::kUnimplemented,
                   absl::StrFormat("geneve-opt class 0x%04x type 0x%02x length %d: only one GENEVE TLV option "
                                   "is supported per device, and flows use class 0x%04x type 0x%02x length %d",
                                   option.option_class, option.type, option.data_len,
                                   held->option.option_class, held->option.type, held->option.data_len));
  }
  absl::StatusOr<uint32_t> id = nic_.CreateGeneveTlvOption(option);
  if (!id.ok()) {
    return ErrorAt(use.pos, id.status().code(),
                   absl::StrFormat("geneve-opt: failed to create the GENEVE TLV option object: %s",
                                   id.status().message()));
  }
  auto held = std::make_shared<Object>(nic_, *id, option);
  object_ = held;
  return std::shared_ptr<const void>(held);
}

std::optional<sim::GeneveTlvOption> GeneveOptionResource::current() const {
  if (std::shared_ptr<Object> held = object_.lock()) return held->option;
  return std::nullopt;
}

}  // namespace drsim::testpmd
