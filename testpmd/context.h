// Internal to the engine: everything FlowEngine keeps between commands — the DR objects, the ports' queues
// and flows, testpmd's `set` state (raw encap/decap buffers, vxlan/nvgre outer headers, sample action lists)
// and the meters. Member order makes destruction safe: flows go first, then what they shared.
//
// Not thread-safe.
#ifndef DRSIM_TESTPMD_CONTEXT_H_
#define DRSIM_TESTPMD_CONTEXT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/nic.h"
#include "testpmd/ast.h"
#include "testpmd/dr_objects.h"
#include "testpmd/engine.h"
#include "testpmd/flow_objects.h"
#include "testpmd/meters.h"

namespace drsim::testpmd {

struct Flow {
  FlowInfo info;
  FlowObjects objects;
};

class EngineContext {
 public:
  EngineContext(sim::Nic& nic, const EngineOptions& options);
  ~EngineContext();  // destroys the flows, then the queues it made

  sim::Nic& nic;
  const EngineOptions options;
  DrObjects objects;
  MeterBook meters;
  std::map<uint32_t, std::vector<uint8_t>> raw_encap, raw_decap;  // set raw_encap / raw_decap buffers
  SetTunnelCmd vxlan, nvgre;
  std::map<uint32_t, std::vector<Action>> sample_actions;
  std::map<uint16_t, std::map<uint32_t, std::unique_ptr<Flow>>> flows;  // by port, by id

  int num_ports() const { return nic.num_vfs() + 1; }
  uint16_t uplink_port() const { return static_cast<uint16_t>(num_ports()); }
  // InvalidArgument unless `port` is a function's port.
  absl::Status CheckPort(uint32_t port) const;
  // The vport of `port` for port_id / represented_port: the function's, or the uplink's (0xffff).
  absl::StatusOr<uint16_t> VportOfPort(uint32_t port) const;
  // The QP number of queue `index` of `port`, creating the port's queues on first use.
  absl::StatusOr<uint32_t> QueueNumber(uint16_t port, uint32_t index);
  const std::map<uint16_t, std::vector<uint32_t>>& queues() const { return queues_; }

 private:
  std::map<uint16_t, std::vector<uint32_t>> queues_;  // QP numbers by port
};

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_CONTEXT_H_
