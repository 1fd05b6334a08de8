#include "testpmd/context.h"

#include "absl/strings/str_format.h"
#include "testpmd/encap.h"

namespace drsim::testpmd {

EngineContext::EngineContext(sim::Nic& nic, const EngineOptions& options)
    : nic(nic),
      options(options),
      objects(nic, options.fdb_default_rule),
      vxlan(DefaultVxlanConf()),
      nvgre(DefaultNvgreConf()) {}

EngineContext::~EngineContext() {
  flows.clear();
  for (const auto& [port, qps] : queues_) {
    for (uint32_t qp : qps) nic.function(port)->DestroyQueue(qp).IgnoreError();  // nothing targets them now
  }
}

absl::Status EngineContext::CheckPort(uint32_t port) const {
  if (port < static_cast<uint32_t>(num_ports())) return absl::OkStatus();
  return absl::InvalidArgumentError(
      port == uplink_port()
          ? absl::StrFormat("port %d is the uplink: it takes no flow rules and has no queues (use it in "
                            "port_id / represented_port of transfer rules)",
                            port)
          : absl::StrFormat("no port %d: the NIC has ports 0..%d (PF and VFs) and the uplink %d", port,
                            num_ports() - 1, uplink_port()));
}

absl::StatusOr<uint16_t> EngineContext::VportOfPort(uint32_t port) const {
  if (port == uplink_port()) return sim::Nic::kWirePort;
  if (absl::Status s = CheckPort(port); !s.ok()) return s;
  return static_cast<uint16_t>(port);
}

absl::StatusOr<uint32_t> EngineContext::QueueNumber(uint16_t port, uint32_t index) {
  if (absl::Status s = CheckPort(port); !s.ok()) return s;
  if (index >= options.rx_queues) {
    return absl::InvalidArgumentError(
        absl::StrFormat("queue index %d is out of range: port %d has %d Rx queues (EngineOptions::rx_queues)",
                        index, port, options.rx_queues));
  }
  std::vector<uint32_t>& qps = queues_[port];
  if (qps.empty()) {
    for (int i = 0; i < options.rx_queues; ++i) {
      qps.push_back(nic.function(port)->CreateQueue(options.rx_queue_capacity));
    }
  }
  return qps[index];
}

}  // namespace drsim::testpmd
