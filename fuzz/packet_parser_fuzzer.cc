// libFuzzer target: the packet parser on arbitrary bytes. It must never read outside the frame (ASan
// checks, the input is an exact-size heap buffer), and whatever it reports must lie inside the frame. The
// outer-headers parse must fill its words as the full parse does.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "hw/match_layout.h"
#include "sim/packet_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame(data, data + size);  // exactly `size` bytes on the heap
  drsim::hw::HeaderVector hv;
  drsim::sim::PacketLayers layers = drsim::sim::ParsePacket(frame.data(), frame.size(), 0xffff, &hv);
  const bool ordered = (layers.l4 == 0 || layers.l3 < layers.l4) &&
                       (layers.payload == 0 || layers.l4 < layers.payload) && layers.payload <= size;
  const uint32_t ip_version = drsim::hw::GetField(hv.bytes, drsim::hw::Field::kOuterIpVersion);
  if (!ordered || (ip_version != 0 && ip_version != 4 && ip_version != 6) ||
      (ip_version != 0) != (layers.l3 != 0)) {
    std::abort();
  }
  drsim::hw::HeaderVector outer;
  std::memset(outer.bytes, 0xa5, sizeof outer.bytes);
  drsim::sim::ParseOuterHeaders(frame.data(), frame.size(), 0xffff, &outer);
  for (size_t w = 0; w < drsim::hw::kMatchParamBytes; w += 4) {
    if (drsim::sim::FilledByOuterParse(w) && std::memcmp(hv.bytes + w, outer.bytes + w, 4) != 0) std::abort();
  }
  return 0;
}
