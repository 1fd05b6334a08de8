// Frames through the software mlx5 device's verbs data path, beside the software NIC driven directly, on
// the same rules and the same frames:
//   BM_VerbsPath/R/B        bursts of B frames: ibv_post_recv of B receives (one list), ibv_post_send of B
//                           send WRs (one list, the last signaled), ibv_poll_cq in batches of 32 until
//                           the B receives completed. The device comes from ibv_get_device_list and
//                           ibv_open_device (DRSIM_WIRE unset: the loopback wire), so each frame goes out
//                           through the PF's NIC_TX (no rules: it passes) and the eSwitch to the wire, and
//                           comes back through NIC_RX, where R exact-match rules steer it to the
//                           receiving QP
//   BM_DirectPath/R/B       the same frames in bursts of B through sim::Worker::ReceiveFromWire on a NIC of
//                           its own holding the same rules, each burst's completions taken off the queue
//                           (sim::RxQueue: a copy of each frame in a vector of its own, as drsim_recv_qp's
//                           queues keep them)
//   BM_DirectToBuffers/R/B  the same, into a queue whose sim::RxSink copies each frame into a fixed buffer,
//                           as the verbs path's posted receives take them: no allocation a frame
//   BM_DirectRoundTrip/R/B  the same as BM_DirectPath, the frames first sent by the PF and taken off the
//                           wire: the verbs path's whole way through the NIC, without the verbs
//   BM_VerbsOverDirect/R/B  the four, alternated a trace (4096 frames) at a time in one run: counters
//                           verbs_fps, direct_fps, to_buffers_fps and round_trip_fps (frames a second of the
//                           thread's CPU time), ratio (verbs/direct: bench/README.md's target is at least
//                           0.5), ratio_to_buffers (verbs/direct to buffers) and ratio_round_trip
//                           (verbs/round trip)
// The rules: a root table whose one rule jumps to a level-1 table, as an application's tables sit behind
// the kernel's root, holding one matcher on UDP over IPv4 and both ports with R rules. Every frame of the
// trace (bench/flows.h: 4096 frames drawn from the R flows) hits one; a frame that does not arrive, or
// arrives out of order or with another length, stops the run with an error, as does one whose bytes differ
// from those sent in a burst checked after the timed loop.
//
//   bazel run --config=opt //bench:verbs_bench -- --benchmark_counters_tabular=true
#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "bench/flows.h"
#include "bench/thread_cpu.h"
#include "benchmark/benchmark.h"
#include "capi/drsim.h"
#include "dr/dr.h"
#include "hw/match_params.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"

namespace drsim {
namespace {

using hw::kOuter;

constexpr size_t kTrace = bench::kTraceLength;  // frames a round of the trace; a multiple of every burst
constexpr int kPollBatch = 32;                  // completions an ibv_poll_cq asks for
constexpr size_t kSlot = 2048;                  // bytes a receive buffer, as an MTU-sized ring's
constexpr size_t kSendStride = 128;             // bytes between the frames of the send buffer

// The flows the rules match: the shared flows' addresses and destination ports, each a source port of its
// own, so that no two rules have the same ports.
std::vector<bench::Flow> RuleFlows(size_t rules) {
  std::vector<bench::Flow> flows = bench::Flows(rules, bench::kRuleSeed);
  for (size_t i = 0; i < flows.size(); ++i) flows[i].sport = static_cast<uint16_t>(16384 + i);
  return flows;
}

// UDP over IPv4 with both ports, all bits (a matcher on L4 ports names the IP version and protocol too).
hw::MatchParams PortsMask() {
  return *hw::MatchBuilder()
              .IpVersion(kOuter, 4)
              .IpProtocol(kOuter, 0xff)
              .UdpSport(kOuter, 0xffff)
              .UdpDport(kOuter, 0xffff)
              .Build();
}
hw::MatchParams PortsValue(const bench::Flow& f) {
  return *hw::MatchBuilder()
              .IpVersion(kOuter, 4)
              .IpProtocol(kOuter, sim::kIpProtoUdp)
              .UdpSport(kOuter, f.sport)
              .UdpDport(kOuter, f.dport)
              .Build();
}

// What both paths send: the trace's frames, and what each rule matches.
struct Traffic {
  explicit Traffic(size_t rules) : flows(RuleFlows(rules)) {
    for (size_t i : bench::Trace(flows.size(), kTrace, bench::kTraceSeed)) {
      const bench::Flow& f = flows[i];
      sim::FrameSpec s;
      s.ipv4_src = {f.src};
      s.ipv4_dst = {f.dst};
      s.sport = f.sport;
      s.dport = f.dport;
      frames.push_back(sim::BuildFrame(s));
    }
    views.assign(frames.begin(), frames.end());
  }
  std::vector<bench::Flow> flows;
  std::vector<std::vector<uint8_t>> frames;
  std::vector<sim::Frame> views;
};

// The software mlx5 device as a program sees it: a context, a sending and a receiving raw-packet QP, their
// CQs and memory regions, and the NIC_RX rules steering the trace to the receiving QP.
class VerbsPath {
 public:
  VerbsPath(const Traffic& traffic, size_t burst) : traffic_(traffic), burst_(burst) {}
  ~VerbsPath() { TearDown(); }

  // Empty, or what failed.
  std::string SetUp() {
    if (const char* wire = std::getenv("DRSIM_WIRE");
        wire != nullptr && *wire != '\0' && std::strcmp(wire, "loopback") != 0) {
      return absl::StrFormat("DRSIM_WIRE=%s: the bench needs the loopback wire (DRSIM_WIRE unset)", wire);
    }
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    if (list == nullptr || n == 0) return "ibv_get_device_list found no device";
    ctx_ = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    if (ctx_ == nullptr) return Failed("ibv_open_device");
    if ((pd_ = ibv_alloc_pd(ctx_)) == nullptr) return Failed("ibv_alloc_pd");
    if ((send_cq_ = ibv_create_cq(ctx_, static_cast<int>(kTrace), nullptr, nullptr, 0)) == nullptr ||
        (recv_cq_ = ibv_create_cq(ctx_, static_cast<int>(kTrace), nullptr, nullptr, 0)) == nullptr) {
      return Failed("ibv_create_cq");
    }
    if ((tx_ = MakeQp()) == nullptr || (rx_ = MakeQp()) == nullptr)
      return Failed("ibv_create_qp/ibv_modify_qp");
    // The send buffer holds the trace, one frame every kSendStride bytes; the receive buffer a burst's slots.
    send_buf_.assign(kTrace * kSendStride, 0);
    recv_buf_.assign(burst_ * kSlot, 0);
    if ((send_mr_ = ibv_reg_mr(pd_, send_buf_.data(), send_buf_.size(), 0)) == nullptr ||
        (recv_mr_ = ibv_reg_mr(pd_, recv_buf_.data(), recv_buf_.size(), IBV_ACCESS_LOCAL_WRITE)) == nullptr) {
      return Failed("ibv_reg_mr");
    }
    for (size_t i = 0; i < kTrace; ++i) {
      const std::vector<uint8_t>& f = traffic_.frames[i];
      std::memcpy(&send_buf_[i * kSendStride], f.data(), f.size());
    }
    // One list of B send WRs, reused from burst to burst as a program reuses its own; its end signaled.
    send_sges_.resize(burst_);
    send_wrs_.resize(burst_);
    for (size_t i = 0; i < burst_; ++i) {
      ibv_send_wr& wr = send_wrs_[i];
      wr = {};
      wr.sg_list = &send_sges_[i];
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND;
      wr.next = i + 1 < burst_ ? &send_wrs_[i + 1] : nullptr;
      wr.send_flags = i + 1 < burst_ ? 0 : IBV_SEND_SIGNALED;
    }
    recv_sges_.resize(burst_);
    recv_wrs_.resize(burst_);
    for (size_t i = 0; i < burst_; ++i) {
      recv_sges_[i] = {reinterpret_cast<uintptr_t>(&recv_buf_[i * kSlot]), kSlot, recv_mr_->lkey};
      ibv_recv_wr& wr = recv_wrs_[i];
      wr = {};
      wr.wr_id = i;
      wr.sg_list = &recv_sges_[i];
      wr.num_sge = 1;
      wr.next = i + 1 < burst_ ? &recv_wrs_[i + 1] : nullptr;
    }
    return SetUpRules();
  }

  // Sends the trace's next burst and receives it; false when a post failed or a frame did not come back as
  // sent (its bytes compared too with `check_bytes`).
  bool Burst(bool check_bytes = false) {
    ibv_recv_wr* bad_recv = nullptr;
    if (ibv_post_recv(rx_, recv_wrs_.data(), &bad_recv) != 0) return false;
    for (size_t i = 0; i < burst_; ++i) {
      const size_t frame = at_ + i;
      send_wrs_[i].wr_id = frame;
      send_sges_[i] = {reinterpret_cast<uintptr_t>(&send_buf_[frame * kSendStride]),
                       static_cast<uint32_t>(traffic_.frames[frame].size()), send_mr_->lkey};
    }
    ibv_send_wr* bad_send = nullptr;
    if (ibv_post_send(tx_, send_wrs_.data(), &bad_send) != 0) return false;
    ibv_wc wc[kPollBatch];
    size_t received = 0;
    int idle = 0;
    while (received < burst_) {
      const int n = ibv_poll_cq(recv_cq_, kPollBatch, wc);
      if (n < 0 || (n == 0 && ++idle > 2)) return false;  // the data path is synchronous: nothing is late
      for (int i = 0; i < n; ++i, ++received) {
        const std::vector<uint8_t>& sent = traffic_.frames[at_ + received];
        if (wc[i].status != IBV_WC_SUCCESS || wc[i].wr_id != received || wc[i].byte_len != sent.size() ||
            (check_bytes && std::memcmp(&recv_buf_[received * kSlot], sent.data(), sent.size()) != 0)) {
          return false;
        }
      }
    }
    if (ibv_poll_cq(send_cq_, 1, wc) != 1 || wc[0].status != IBV_WC_SUCCESS ||
        wc[0].wr_id != at_ + burst_ - 1) {
      return false;
    }
    at_ = (at_ + burst_) % kTrace;
    return true;
  }

 private:
  std::string Failed(const char* what) { return absl::StrFormat("%s: %s", what, drsim_last_error()); }

  ibv_qp* MakeQp() {
    ibv_qp_init_attr attr = {};
    attr.send_cq = send_cq_;
    attr.recv_cq = recv_cq_;
    attr.cap.max_send_wr = static_cast<uint32_t>(burst_);
    attr.cap.max_recv_wr = static_cast<uint32_t>(burst_);
    attr.cap.max_send_sge = 1;
    attr.cap.max_recv_sge = 1;
    attr.qp_type = IBV_QPT_RAW_PACKET;
    ibv_qp* qp = ibv_create_qp(pd_, &attr);
    if (qp == nullptr) return nullptr;
    qps_.push_back(qp);
    ibv_qp_attr a = {};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT) != 0) return nullptr;
    a.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE) != 0) return nullptr;
    a.qp_state = IBV_QPS_RTS;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE) != 0) return nullptr;
    return qp;
  }

  std::string SetUpRules() {
    if ((domain_ = mlx5dv_dr_domain_create(ctx_, MLX5DV_DR_DOMAIN_TYPE_NIC_RX)) == nullptr) {
      return Failed("mlx5dv_dr_domain_create");
    }
    if ((root_ = mlx5dv_dr_table_create(domain_, 0)) == nullptr ||
        (table_ = mlx5dv_dr_table_create(domain_, 1)) == nullptr) {
      return Failed("mlx5dv_dr_table_create");
    }
    hw::MatchParams all;  // the root's one rule matches every frame
    hw::MatchParams mask = PortsMask();
    if ((root_matcher_ = mlx5dv_dr_matcher_create(root_, 0, 0, all.get())) == nullptr ||
        (matcher_ = mlx5dv_dr_matcher_create(table_, 0, mask.criteria(), mask.get())) == nullptr) {
      return Failed("mlx5dv_dr_matcher_create");
    }
    if ((jump_ = mlx5dv_dr_action_create_dest_table(table_)) == nullptr) {
      return Failed("mlx5dv_dr_action_create_dest_table");
    }
    if ((to_qp_ = mlx5dv_dr_action_create_dest_ibv_qp(rx_)) == nullptr) {
      return Failed("mlx5dv_dr_action_create_dest_ibv_qp");
    }
    mlx5dv_dr_rule* root_rule = mlx5dv_dr_rule_create(root_matcher_, all.get(), 1, &jump_);
    if (root_rule == nullptr) return Failed("mlx5dv_dr_rule_create (root)");
    rules_.push_back(root_rule);
    for (const bench::Flow& f : traffic_.flows) {
      hw::MatchParams value = PortsValue(f);
      mlx5dv_dr_rule* rule = mlx5dv_dr_rule_create(matcher_, value.get(), 1, &to_qp_);
      if (rule == nullptr) return Failed("mlx5dv_dr_rule_create");
      rules_.push_back(rule);
    }
    return "";
  }

  void TearDown() {
    for (auto it = rules_.rbegin(); it != rules_.rend(); ++it) mlx5dv_dr_rule_destroy(*it);
    if (to_qp_ != nullptr) mlx5dv_dr_action_destroy(to_qp_);
    if (jump_ != nullptr) mlx5dv_dr_action_destroy(jump_);
    if (matcher_ != nullptr) mlx5dv_dr_matcher_destroy(matcher_);
    if (root_matcher_ != nullptr) mlx5dv_dr_matcher_destroy(root_matcher_);
    if (table_ != nullptr) mlx5dv_dr_table_destroy(table_);
    if (root_ != nullptr) mlx5dv_dr_table_destroy(root_);
    if (domain_ != nullptr) mlx5dv_dr_domain_destroy(domain_);
    for (ibv_qp* qp : qps_) ibv_destroy_qp(qp);
    if (send_mr_ != nullptr) ibv_dereg_mr(send_mr_);
    if (recv_mr_ != nullptr) ibv_dereg_mr(recv_mr_);
    if (send_cq_ != nullptr) ibv_destroy_cq(send_cq_);
    if (recv_cq_ != nullptr) ibv_destroy_cq(recv_cq_);
    if (pd_ != nullptr) ibv_dealloc_pd(pd_);
    if (ctx_ != nullptr) ibv_close_device(ctx_);
  }

  const Traffic& traffic_;
  const size_t burst_;
  size_t at_ = 0;  // the next burst's first frame in the trace
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  ibv_qp* tx_ = nullptr;
  ibv_qp* rx_ = nullptr;
  std::vector<uint8_t> send_buf_, recv_buf_;
  ibv_mr* send_mr_ = nullptr;
  ibv_mr* recv_mr_ = nullptr;
  std::vector<ibv_sge> send_sges_, recv_sges_;
  std::vector<ibv_send_wr> send_wrs_;
  std::vector<ibv_recv_wr> recv_wrs_;
  mlx5dv_dr_domain* domain_ = nullptr;
  mlx5dv_dr_table* root_ = nullptr;
  mlx5dv_dr_table* table_ = nullptr;
  mlx5dv_dr_matcher* root_matcher_ = nullptr;
  mlx5dv_dr_matcher* matcher_ = nullptr;
  mlx5dv_dr_action* jump_ = nullptr;
  mlx5dv_dr_action* to_qp_ = nullptr;
  std::vector<mlx5dv_dr_rule*> rules_;
};

// Where DirectPath's frames end up.
enum class Delivery {
  kQueue,      // a sim::RxQueue's ring, polled
  kToBuffers,  // fixed buffers, through a sim::RxSink
  kRoundTrip,  // a ring too, the frames first sent by the PF and taken off the wire
};

// Copies each frame into the next of `burst` fixed slots, as posted receives take them.
class SlotSink : public sim::RxSink {
 public:
  explicit SlotSink(size_t burst) : slots_(burst * kSlot), lengths_(burst) {}
  bool Take(const uint8_t* frame, size_t len, bool, uint32_t, uint32_t) override {
    if (taken_ == lengths_.size() || len > kSlot) return false;
    std::memcpy(&slots_[taken_ * kSlot], frame, len);
    lengths_[taken_++] = len;
    return true;
  }
  // The frames taken since the last call, as spans valid until the next Take.
  size_t TakeAll() { return std::exchange(taken_, 0); }
  absl::Span<const uint8_t> frame(size_t i) const { return {&slots_[i * kSlot], lengths_[i]}; }

 private:
  std::vector<uint8_t> slots_;
  std::vector<size_t> lengths_;
  size_t taken_ = 0;
};

// The same rules on a sim::Nic of its own, driven through a sim::Worker: frames from the wire, delivered
// as `delivery` says. A round trip takes the verbs path's whole way instead: sent by the PF (its NIC_TX,
// the eSwitch, out of the uplink), taken off the wire (Nic::TakeWireFrames, the buffers handed back as
// the device hands them) and received back.
class DirectPath {
 public:
  DirectPath(const Traffic& traffic, size_t burst, Delivery delivery)
      : traffic_(traffic), burst_(burst), delivery_(delivery) {}

  std::string SetUp() {
    absl::StatusOr<dr::Domain> domain = dr::Domain::Create(nic_.pf(), MLX5DV_DR_DOMAIN_TYPE_NIC_RX);
    if (!domain.ok()) return std::string(domain.status().message());
    domain_ = *std::move(domain);
    if (delivery_ == Delivery::kToBuffers) {
      auto sink = std::make_unique<SlotSink>(burst_);
      sink_ = sink.get();
      qp_num_ = nic_.pf().CreateQueue(kTrace, std::move(sink));
    } else {
      qp_num_ = nic_.pf().CreateQueue(kTrace);
    }
    queue_ = nic_.pf().queue(qp_num_);
    absl::StatusOr<dr::Table> root = dr::Table::Create(domain_, 0);
    absl::StatusOr<dr::Table> table = dr::Table::Create(domain_, 1);
    if (!root.ok()) return std::string(root.status().message());
    if (!table.ok()) return std::string(table.status().message());
    root_ = *std::move(root);
    table_ = *std::move(table);
    absl::StatusOr<dr::Matcher> root_matcher = dr::Matcher::Create(root_, 0, hw::MatchParams());
    absl::StatusOr<dr::Matcher> matcher = dr::Matcher::Create(table_, 0, PortsMask());
    if (!root_matcher.ok()) return std::string(root_matcher.status().message());
    if (!matcher.ok()) return std::string(matcher.status().message());
    root_matcher_ = *std::move(root_matcher);
    matcher_ = *std::move(matcher);
    absl::StatusOr<dr::Action> jump = dr::Action::DestTable(table_);
    absl::StatusOr<dr::Action> to_qp = dr::Action::DestQp(nic_.pf(), qp_num_);
    if (!jump.ok()) return std::string(jump.status().message());
    if (!to_qp.ok()) return std::string(to_qp.status().message());
    jump_ = *std::move(jump);
    to_qp_ = *std::move(to_qp);
    absl::StatusOr<dr::Rule> root_rule = dr::Rule::Create(root_matcher_, hw::MatchParams(), {&jump_});
    if (!root_rule.ok()) return std::string(root_rule.status().message());
    rules_.push_back(*std::move(root_rule));
    for (const bench::Flow& f : traffic_.flows) {
      absl::StatusOr<dr::Rule> rule = dr::Rule::Create(matcher_, PortsValue(f), {&to_qp_});
      if (!rule.ok()) return std::string(rule.status().message());
      rules_.push_back(*std::move(rule));
    }
    absl::StatusOr<std::unique_ptr<sim::Worker>> worker = sim::Worker::Create(nic_);
    if (!worker.ok()) return std::string(worker.status().message());
    worker_ = *std::move(worker);
    return "";
  }

  // As VerbsPath::Burst.
  bool Burst(bool check_bytes = false) {
    absl::Span<const sim::Frame> frames = absl::MakeConstSpan(traffic_.views).subspan(at_, burst_);
    if (delivery_ == Delivery::kRoundTrip) {
      if (!worker_->Send(nic_.pf(), frames).ok()) return false;
      if (nic_.TakeWireFrames(wire_) != burst_) return false;
      wire_views_.assign(wire_.begin(), wire_.end());
      frames = wire_views_;
    }
    if (!worker_->ReceiveFromWire(frames).ok()) return false;
    if (delivery_ == Delivery::kRoundTrip) nic_.RecycleWireBuffers(wire_);
    if (delivery_ == Delivery::kToBuffers) {
      if (sink_->TakeAll() != burst_) return false;
      for (size_t i = 0; i < burst_; ++i) {
        const std::vector<uint8_t>& sent = traffic_.frames[at_ + i];
        if (sink_->frame(i).size() != sent.size() ||
            (check_bytes && std::memcmp(sink_->frame(i).data(), sent.data(), sent.size()) != 0)) {
          return false;
        }
      }
      at_ = (at_ + burst_) % kTrace;
      return true;
    }
    size_t received = 0;
    while (std::optional<sim::RxCompletion> c = queue_->Poll()) {
      if (received == burst_ || c->byte_len != traffic_.frames[at_ + received].size() ||
          (check_bytes && c->frame != traffic_.frames[at_ + received])) {
        return false;
      }
      ++received;
    }
    if (received != burst_) return false;
    at_ = (at_ + burst_) % kTrace;
    return true;
  }

 private:
  const Traffic& traffic_;
  const size_t burst_;
  const Delivery delivery_;
  size_t at_ = 0;
  std::vector<std::vector<uint8_t>> wire_;  // round trip: the burst as it left by the uplink
  std::vector<sim::Frame> wire_views_;
  sim::Nic nic_;
  uint32_t qp_num_ = 0;
  sim::RxQueue* queue_ = nullptr;
  SlotSink* sink_ = nullptr;  // kToBuffers: owned by the queue
  dr::Domain domain_;
  dr::Table root_, table_;
  dr::Matcher root_matcher_, matcher_;
  dr::Action jump_, to_qp_;
  std::vector<dr::Rule> rules_;  // destroyed before what they use
  std::unique_ptr<sim::Worker> worker_;
};

// Runs bursts of `path` while `state` runs.
template <typename Path>
void RunBursts(benchmark::State& state, Path& path, size_t burst) {
  if (std::string error = path.SetUp(); !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  bool ok = true;
  for (auto _ : state) ok &= path.Burst();
  ok &= path.Burst(/*check_bytes=*/true);
  state.SetItemsProcessed(state.iterations() * burst);
  if (!ok) state.SkipWithError("a burst failed, or a frame did not come back as sent");
}

void BM_VerbsPath(benchmark::State& state) {
  const Traffic traffic(state.range(0));
  VerbsPath path(traffic, state.range(1));
  RunBursts(state, path, state.range(1));
}

template <Delivery delivery>
void BM_Direct(benchmark::State& state) {
  const Traffic traffic(state.range(0));
  DirectPath path(traffic, state.range(1), delivery);
  RunBursts(state, path, state.range(1));
}

// The four paths, a trace each in turn, so that all see the machine at the same speed.
void BM_VerbsOverDirect(benchmark::State& state) {
  const size_t burst = state.range(1);
  const Traffic traffic(state.range(0));
  VerbsPath verbs(traffic, burst);
  DirectPath direct(traffic, burst, Delivery::kQueue);
  DirectPath to_buffers(traffic, burst, Delivery::kToBuffers);
  DirectPath round_trip(traffic, burst, Delivery::kRoundTrip);
  for (const std::string& error : {verbs.SetUp(), direct.SetUp(), to_buffers.SetUp(), round_trip.SetUp()}) {
    if (!error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
  }
  const auto burst_of = [&](int path, bool check_bytes) {
    switch (path) {
      case 0:
        return verbs.Burst(check_bytes);
      case 1:
        return direct.Burst(check_bytes);
      case 2:
        return to_buffers.Burst(check_bytes);
      default:
        return round_trip.Burst(check_bytes);
    }
  };
  double seconds[4] = {};
  bool ok = true;
  for (auto _ : state) {
    double at = bench::ThreadCpuSeconds();
    for (int path = 0; path < 4; ++path) {
      for (size_t i = 0; i < kTrace / burst; ++i) ok &= burst_of(path, false);
      const double now = bench::ThreadCpuSeconds();
      seconds[path] += now - at;
      at = now;
    }
  }
  for (int path = 0; path < 4; ++path) ok &= burst_of(path, /*check_bytes=*/true);
  if (!ok) {
    state.SkipWithError("a burst failed, or a frame did not come back as sent");
    return;
  }
  const double frames = static_cast<double>(state.iterations() * kTrace);
  state.counters["verbs_fps"] = frames / seconds[0];
  state.counters["direct_fps"] = frames / seconds[1];
  state.counters["to_buffers_fps"] = frames / seconds[2];
  state.counters["round_trip_fps"] = frames / seconds[3];
  state.counters["ratio"] = seconds[1] / seconds[0];
  state.counters["ratio_to_buffers"] = seconds[2] / seconds[0];
  state.counters["ratio_round_trip"] = seconds[3] / seconds[0];
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t rules : {1, 1000})
    for (int64_t burst : {32, 256}) b->Args({rules, burst});
  b->ArgNames({"rules", "burst"});
}

BENCHMARK(BM_VerbsPath)->Apply(Shapes);
BENCHMARK_TEMPLATE(BM_Direct, Delivery::kQueue)->Name("BM_DirectPath")->Apply(Shapes);
BENCHMARK_TEMPLATE(BM_Direct, Delivery::kToBuffers)->Name("BM_DirectToBuffers")->Apply(Shapes);
BENCHMARK_TEMPLATE(BM_Direct, Delivery::kRoundTrip)->Name("BM_DirectRoundTrip")->Apply(Shapes);
BENCHMARK(BM_VerbsOverDirect)->Apply(Shapes)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace drsim
