// The process's software mlx5 device, and each NIC's frame movement between the NIC, the wire and the
// buffers programs posted.
#include "soft_mlx5/device.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "capi/drsim.h"
#include "capi/errors.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"
#include "soft_mlx5/verbs_objects.h"
#include "soft_mlx5/verbs_ops.h"

namespace drsim::soft_mlx5 {
namespace {

// How many rounds Pump makes before it leaves frames for the next call: a loop between the wire and the
// NIC (a hairpin rule on a loopback wire) must not hold the caller forever.
constexpr int kMaxPumpRounds = 64;
constexpr size_t kWireBurst = 256;

const char* EnvOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

SoftDevice* MakeDevice();

}  // namespace

SoftDevice* SoftDevice::Get() {
  static SoftDevice* device = MakeDevice();
  return device;
}

SoftDevice* SoftDevice::Of(const ibv_device* device) {
  if (device == nullptr || !capi::Registry::Get().Is(device, capi::Kind::kDevice)) return nullptr;
  return reinterpret_cast<const SoftIbvDevice*>(device)->owner;
}

namespace {

SoftDevice* MakeDevice() {
  const char* name = EnvOr("DRSIM_DEVICE", "mlx5_0");
  uint32_t vfs = 0;
  if (!absl::SimpleAtoi(EnvOr("DRSIM_VFS", "0"), &vfs)) {
    std::fprintf(stderr, "drsim: DRSIM_VFS='%s' is not a number; the software mlx5 device is off\n",
                 std::getenv("DRSIM_VFS"));
    return nullptr;
  }
  const char* wire_spec = EnvOr("DRSIM_WIRE", "loopback");
  absl::StatusOr<std::unique_ptr<Wire>> wire = OpenWire(wire_spec);
  if (!wire.ok()) {
    std::fprintf(stderr, "drsim: DRSIM_WIRE: %s; the software mlx5 device is off\n",
                 std::string(wire.status().message()).c_str());
    return nullptr;
  }
  const std::string encap = EnvOr("DRSIM_ESWITCH_ENCAP", "none");
  if (encap != "none" && encap != "basic") {
    std::fprintf(
        stderr,
        "drsim: DRSIM_ESWITCH_ENCAP='%s': the eSwitch encap mode is none or basic; the software mlx5 "
        "device is off\n",
        encap.c_str());
    return nullptr;
  }
  ibv_context* pf = drsim_open(vfs);
  if (pf == nullptr) {
    std::fprintf(stderr, "drsim: cannot open the software NIC: %s\n", drsim_last_error());
    return nullptr;
  }
  sim::Nic& nic = *capi::FunctionOf(pf)->owner->nic;
  nic.set_eswitch_encap(encap == "basic" ? hw::EswitchEncap::kBasic : hw::EswitchEncap::kNone);
  nic.set_time_ns(MonotonicNs());  // the NIC's clock follows CLOCK_MONOTONIC from the start
  return SoftDevice::Create(name, capi::FunctionOf(pf)->owner, *std::move(wire));
}

}  // namespace

SoftDevice* SoftDevice::Create(const std::string& name, capi::Context* ctx, std::unique_ptr<Wire> wire) {
  auto* d = new SoftDevice;  // lives as long as the process: programs may call into it during exit
  d->name_ = name;
  d->ctx_ = ctx;
  NicState::Of(*ctx).set_wire(std::move(wire));
  ibv_device& dev = d->ibv_device_.device;
  dev.node_type = IBV_NODE_CA;
  dev.transport_type = IBV_TRANSPORT_IB;
  absl::SNPrintF(dev.name, sizeof dev.name, "%s", name);
  absl::SNPrintF(dev.dev_name, sizeof dev.dev_name, "uverbs_drsim");
  absl::SNPrintF(dev.dev_path, sizeof dev.dev_path, "/sys/class/infiniband_verbs/uverbs_drsim");
  absl::SNPrintF(dev.ibdev_path, sizeof dev.ibdev_path, "/sys/class/infiniband/%s", name);
  d->ibv_device_.owner = d;
  capi::Registry::Get().Add(&dev, capi::Kind::kDevice, ctx);
  return d;
}

ibv_context* SoftDevice::Open(uint16_t vport) {
  std::lock_guard<std::recursive_mutex> lock(ctx_->mu);
  if (vport >= ctx_->functions.size()) {
    capi::RecordFailure("ibv_open_device", EINVAL,
                        absl::StrFormat("vport %d: the NIC has %d functions", vport, ctx_->functions.size()));
    return nullptr;
  }
  // The C API's context set-up installs the verbs operations (InstallVerbsOps) as well.
  drsim_function_context* f = capi::NewFunctionContext(ctx_, vport).release();
  f->vctx.context.device = device();
  user_contexts_.insert(f);
  return &f->vctx.context;
}

int SoftDevice::Close(ibv_context* ibctx) {
  std::lock_guard<std::recursive_mutex> lock(ctx_->mu);
  drsim_function_context* f = capi::FunctionOf(ibctx);
  if (f == nullptr || !user_contexts_.contains(f)) {
    return capi::RecordFailure("ibv_close_device", EINVAL, "not a context ibv_open_device returned");
  }
  capi::Registry::Get().Remove(ibctx);
  user_contexts_.erase(f);
  pthread_mutex_destroy(&f->vctx.context.mutex);
  delete f;
  return 0;
}

NicState& NicState::Of(capi::Context& ctx) {
  if (ctx.extension == nullptr) ctx.extension = std::make_unique<NicState>(&ctx);
  return static_cast<NicState&>(*ctx.extension);
}

void Complete(SoftCq& cq, const Completion& c) {
  if (cq.done.size() >= static_cast<size_t>(cq.cq.cqe)) {
    ++cq.overruns;
    return;
  }
  cq.done.push_back(c);
  if (cq.armed && cq.cq.channel != nullptr) {
    cq.armed = false;
    auto* channel = reinterpret_cast<SoftCompChannel*>(cq.cq.channel);
    channel->notified.push_back(&cq);
    const uint64_t one = 1;
    (void)!write(channel->channel.fd, &one, sizeof one);
  }
}

bool PostedReceiveSink::Take(const uint8_t* frame, size_t len, bool has_tag, uint32_t tag,
                             uint32_t /*flow_table_metadata*/) {
  Lock lock(ctx_->mu);
  if (rq_ == nullptr) return false;  // its QP or WQ is gone
  return NicState::Of(*ctx_).DeliverToPosted(*rq_, frame, len, has_tag, tag);
}

NicState::NicState(capi::Context* ctx)
    : ctx_(ctx), debug_(std::getenv("DRSIM_DEBUG") != nullptr) {}  // read once, as capi/errors.cc does

bool NicState::DeliverToPosted(ReceiveQueue& rq, const uint8_t* frame, size_t len, bool has_tag,
                               uint32_t tag) {
  if (!rq.ready || rq.posted.empty()) {
    ++ctx_->rx_out_of_buffer[rq.vport];
    if (debug_) {
      std::fprintf(stderr, "drsim: queue 0x%x: a %zu-byte frame found no posted receive; dropped\n",
                   rq.number, len);
    }
    return false;
  }
  const PostedReceive& wqe = rq.posted.front();
  Completion done;
  done.wr_id = wqe.wr_id;
  done.opcode = IBV_WC_RECV;
  done.qp_num = rq.number;
  done.byte_len = static_cast<uint32_t>(len);
  done.flow_tag = has_tag ? tag : 0;  // 0 when no tag action ran, as a CQE reports it
  done.timestamp_ns = CompletionTime();
  // Scatter the frame over the receive's SGEs; a frame longer than they hold completes in error.
  size_t off = 0;
  for (const ibv_sge& sge : wqe.sges) {
    if (off == len) break;
    const size_t n = std::min<size_t>(sge.length, len - off);
    std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(sge.addr)), frame + off, n);
    off += n;
  }
  if (off < len) done.status = IBV_WC_LOC_LEN_ERR;
  rq.posted.pop_front();
  if (rq.cq != nullptr) Complete(*rq.cq, done);
  return true;
}

uint64_t NicState::CompletionTime() {
  if (!pumping_) return MonotonicNs();
  if (pump_time_ == 0) pump_time_ = MonotonicNs();
  return pump_time_;
}

size_t NicState::ReceiveWireFrames() {
  const size_t n = wire_in_.size();
  // What the wire brought goes into the NIC as one burst, whose lookups overlap.
  if (n != 0) (void)ctx_->nic->ReceiveFromWire(wire_in_);
  wire_in_.clear();
  return n;
}

void NicState::Pump() {
  pumping_ = true;
  pump_time_ = 0;
  for (int round = 0; round < kMaxPumpRounds; ++round) {
    size_t moved = 0;
    if (wire_ != nullptr) {
      wire_out_.clear();
      moved += ctx_->nic->TakeWireFrames(wire_out_);
      for (std::vector<uint8_t>& frame : wire_out_) wire_->Transmit(std::move(frame));
      std::vector<std::vector<uint8_t>> in = wire_->Poll(kWireBurst);
      // The NIC's clock is when they arrived: now, or for a pcap wire each frame's due time (runs of
      // frames due at once go in together; a time behind the clock, as after a send, is the clock's).
      const absl::Span<const int64_t> arrived = wire_->last_arrivals();
      if (arrived.empty() && !in.empty()) ctx_->nic->set_time_ns(MonotonicNs());
      wire_in_.clear();
      for (size_t i = 0; i < in.size(); ++i) {
        const std::vector<uint8_t>& frame = in[i];
        if (frame.size() < 14 || frame.size() > 65535) continue;  // not an Ethernet frame the NIC can take
        if (!arrived.empty() && static_cast<uint64_t>(arrived[i]) > ctx_->nic->time_ns()) {
          moved += ReceiveWireFrames();
          ctx_->nic->set_time_ns(static_cast<uint64_t>(arrived[i]));
        }
        wire_in_.emplace_back(frame.data(), frame.size());
      }
      moved += ReceiveWireFrames();
      // The loopback wire's frames are the NIC's own buffers: handed back, the next ones reuse them.
      ctx_->nic->RecycleWireBuffers(in);
    }
    if (moved == 0) break;
  }
  pumping_ = false;
}

}  // namespace drsim::soft_mlx5
