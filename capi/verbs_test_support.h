// Test support for the verbs flow tests: flow requests built as bytes (struct ibv_flow_attr, then specs),
// zeroed specs with their type and size set, frames, and a fixture owning a software NIC with QPs that
// checks everything can be torn down.
#ifndef DRSIM_CAPI_VERBS_TEST_SUPPORT_H_
#define DRSIM_CAPI_VERBS_TEST_SUPPORT_H_

#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "capi/drsim.h"
#include "gtest/gtest.h"
#include "sim/frame_builder.h"

namespace drsim::capi::testing {

// A spec of type `type` (any 32-bit value, written as bytes) and size sizeof(Spec), everything else zero.
template <typename Spec>
Spec NewSpec(uint32_t type) {
  Spec s;
  std::memset(&s, 0, sizeof s);
  std::memcpy(&s, &type, sizeof type);  // the enum member: C lets any value through
  s.size = sizeof s;
  return s;
}

// struct ibv_flow_attr followed by specs, as bytes; size and num_of_specs follow what was added.
class FlowAttr {
 public:
  explicit FlowAttr(uint32_t type = IBV_FLOW_ATTR_NORMAL, uint16_t priority = 0, uint32_t flags = 0)
      : bytes_(sizeof(ibv_flow_attr)) {
    Set(offsetof(ibv_flow_attr, type), type);
    Set(offsetof(ibv_flow_attr, priority), priority);
    Set(offsetof(ibv_flow_attr, flags), flags);
    Set(offsetof(ibv_flow_attr, port), uint8_t{1});
    Sync();
  }

  template <typename Spec>
  FlowAttr& Add(const Spec& spec) {
    const auto* p = reinterpret_cast<const uint8_t*>(&spec);
    bytes_.insert(bytes_.end(), p, p + sizeof spec);
    ++num_specs_;
    Sync();
    return *this;
  }
  // Overwrites bytes at `offset` (after Add, so size and num_of_specs can be made to lie).
  template <typename T>
  FlowAttr& Set(size_t offset, T value) {
    std::memcpy(bytes_.data() + offset, &value, sizeof value);
    return *this;
  }
  size_t size() const { return bytes_.size(); }
  // The request in a buffer of exactly its bytes, so that AddressSanitizer catches a read past them.
  ibv_flow_attr* get() {
    exact_ = std::make_unique<uint8_t[]>(bytes_.size());
    std::memcpy(exact_.get(), bytes_.data(), bytes_.size());
    return reinterpret_cast<ibv_flow_attr*>(exact_.get());
  }

 private:
  void Sync() {
    Set(offsetof(ibv_flow_attr, size), static_cast<uint16_t>(bytes_.size()));
    Set(offsetof(ibv_flow_attr, num_of_specs), num_specs_);
  }
  std::vector<uint8_t> bytes_;
  std::unique_ptr<uint8_t[]> exact_;
  uint8_t num_specs_ = 0;
};

inline hw::MacAddress Mac(const char* s) { return *hw::MacAddress::Parse(s); }
inline hw::Ipv4Address Ip4(const char* s) { return *hw::Ipv4Address::Parse(s); }
inline hw::Ipv6Address Ip6(const char* s) { return *hw::Ipv6Address::Parse(s); }

// A UDP (or `protocol`) frame over IPv4 between two fixed hosts.
inline sim::FrameSpec Udp4(uint16_t dport, uint8_t protocol = sim::kIpProtoUdp) {
  sim::FrameSpec s;
  s.dmac = Mac("02:00:00:00:00:0a");
  s.smac = Mac("02:00:00:00:00:0b");
  s.ipv4_src = Ip4("10.0.0.1");
  s.ipv4_dst = Ip4("10.0.0.2");
  s.protocol = protocol;
  s.sport = 1000;
  s.dport = dport;
  s.payload_len = 8;
  return s;
}

// A NIC with one VF, a QP on the PF (qp_) and one on VF1 (vf_qp_); flows, QPs and counters made through
// it are destroyed at the end, each expected to succeed, and the NIC closed.
class VerbsTest : public ::testing::Test {
 protected:
  VerbsTest() : ctx_(drsim_open(1)), vf_ctx_(drsim_vport_context(ctx_, 1)), qp_(Qp(0)), vf_qp_(Qp(1)) {}
  ~VerbsTest() override {
    for (auto it = flows_.rbegin(); it != flows_.rend(); ++it) EXPECT_EQ(ibv_destroy_flow(*it), 0);
    for (ibv_counters* c : counters_) EXPECT_EQ(ibv_destroy_counters(c), 0);
    for (ibv_qp* q : qps_) EXPECT_EQ(drsim_destroy_qp(q), 0);
    EXPECT_EQ(drsim_close(ctx_), 0) << drsim_last_error();
  }

  ibv_qp* Qp(uint16_t vport) {
    qps_.push_back(drsim_create_qp(ctx_, vport));
    return qps_.back();
  }
  // A flow expected to be created; kept for the teardown.
  ibv_flow* Flow(ibv_qp* qp, FlowAttr& attr) {
    ibv_flow* f = ibv_create_flow(qp, attr.get());
    EXPECT_NE(f, nullptr) << drsim_last_error();
    if (f != nullptr) flows_.push_back(f);
    return f;
  }
  // Destroys a flow made by Flow().
  void Drop(ibv_flow* f) {
    EXPECT_EQ(ibv_destroy_flow(f), 0);
    flows_.erase(std::find(flows_.begin(), flows_.end(), f));
  }
  // The errno of a flow expected to fail, with drsim_last_error() in *message.
  int Error(ibv_qp* qp, FlowAttr& attr, std::string* message = nullptr) {
    errno = 0;
    ibv_flow* f = ibv_create_flow(qp, attr.get());
    EXPECT_EQ(f, nullptr);
    if (f != nullptr) flows_.push_back(f);
    if (message != nullptr) *message = drsim_last_error();
    return errno;
  }
  // A counters object with a packets point at index 0 and a bytes point at index 1.
  ibv_counters* Counters() {
    ibv_counters_init_attr init{};
    ibv_counters* c = ibv_create_counters(ctx_, &init);
    ibv_counter_attach_attr packets{IBV_COUNTER_PACKETS, 0, 0}, bytes{IBV_COUNTER_BYTES, 1, 0};
    EXPECT_EQ(ibv_attach_counters_point_flow(c, &packets, nullptr), 0);
    EXPECT_EQ(ibv_attach_counters_point_flow(c, &bytes, nullptr), 0);
    counters_.push_back(c);
    return c;
  }

  // Sends a frame from the wire (from_vport -1) or from a function.
  void Send(const std::vector<uint8_t>& frame, int from_vport = -1) {
    ASSERT_EQ(drsim_send(ctx_, from_vport, frame.data(), frame.size()), 0) << drsim_last_error();
  }
  void Send(const sim::FrameSpec& spec, int from_vport = -1) { Send(sim::BuildFrame(spec), from_vport); }
  // The next frame waiting in `qp`, with its flow tag.
  struct Received {
    std::vector<uint8_t> frame;
    uint32_t tag;
  };
  std::optional<Received> Recv(ibv_qp* qp) {
    Received r{std::vector<uint8_t>(2048), 0};
    const int n = drsim_recv_qp(qp, r.frame.data(), r.frame.size(), &r.tag);
    EXPECT_GE(n, 0);
    if (n <= 0) return std::nullopt;
    r.frame.resize(n);
    return r;
  }
  // How many frames wait in `qp` (taking them).
  int Count(ibv_qp* qp) {
    int n = 0;
    while (Recv(qp).has_value()) ++n;
    return n;
  }
  // How many frames left by the wire (taking them).
  int Wire() {
    uint8_t buf[2048];
    int n = 0;
    while (drsim_recv_port(ctx_, -1, buf, sizeof buf) > 0) ++n;
    return n;
  }
  // How many frames reached the interface of function `vport` (taking them).
  int Port(int vport) {
    uint8_t buf[2048];
    int n = 0;
    while (drsim_recv_port(ctx_, vport, buf, sizeof buf) > 0) ++n;
    return n;
  }

  ibv_context* ctx_;
  ibv_context* vf_ctx_;
  std::vector<ibv_qp*> qps_;
  ibv_qp* qp_;
  ibv_qp* vf_qp_;
  std::vector<ibv_flow*> flows_;
  std::vector<ibv_counters*> counters_;
};

}  // namespace drsim::capi::testing

#endif  // DRSIM_CAPI_VERBS_TEST_SUPPORT_H_
