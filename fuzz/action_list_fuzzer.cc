// libFuzzer target: action lists on the dr:: API in NIC_RX, NIC_TX and FDB domains. The input creates up
// to eight actions — drop, tag, dest QP (this function's, another function's, any number), dest table (level
// 1 or 2, the root, another domain's), default miss, dest vport, flow counter, modify header (raw 8-byte
// set/add/copy words with any field id, offset and length, or arbitrary words), packet reformat (any type
// and flags; a VXLAN or GRE encapsulation header, a 14- or 18-byte L2 header, or arbitrary bytes), push
// VLAN (any TPID and TCI), pop VLAN, dest root table, dest TIR — then up to four rules in a root or a
// level-1 matcher, each with a list of those actions in any order and with repetitions, then frames from
// the wire, from the PF and from a VF. Invalid input must be rejected with an error that has a message,
// never a crash or undefined behaviour (AddressSanitizer under --config=fuzz, and the replay test under
// --config=asan and --config=ubsan); a rejected rule insert leaves its matcher's rule count (its
// dr::DumpMatcher rule records) unchanged and an accepted one adds one; every verdict names a fate and,
// when the frame was delivered, a queue or function that exists; destroying every rule, matcher, action,
// table and domain then succeeds, and nothing leaks (LeakSanitizer).
//
// Decoding (fuzz/fuzz_input.h; zeros past the end), one byte per item unless said:
//   setup:    domain type (bits 0-1 % 3: NIC_RX, NIC_TX, FDB; bit 2: NIC domains on VF1 rather than the
//             PF), mask (% 4: empty, ip_version, source_port, ethertype; empty when the domain rejects it)
//   actions:  a count (% 9), then each action: a kind (% 13) and its operands (DecodeAction)
//   rules:    a count (% 5), then each rule: matcher (bit 0: level 1), value (a byte: DecodeValue), a list
//             length (% 8) and that many action indices (modulo the actions created)
//   frames:   a count (% 5), then each frame (DecodeFrame)
#include <arpa/inet.h>
#include <infiniband/mlx5dv.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dr/dr.h"
#include "dr/dump.h"
#include "fuzz/fuzz_input.h"
#include "hw/match_params.h"
#include "hw/modify_header.h"
#include "sim/frame_builder.h"
#include "sim/nic.h"
#include "sim/rx_queue.h"
#include "tests/differential_model.h"

namespace drsim::fuzz {
namespace {

using hw::kOuter;

constexpr int kCounterBulk = 4;

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "action_list_fuzzer: %s\n", what.c_str());
  std::abort();
}

// A status the API returned for bad input: it must be an error with a message.
void CheckRejected(const absl::Status& status, const std::string& what) {
  if (status.ok() || status.message().empty()) {
    Fail(absl::StrFormat("%s: rejected without a message (%s)", what, status.ToString()));
  }
}

void CheckOk(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Fail(absl::StrFormat("%s failed: %s", what, status.ToString()));
}

// The modify-header field ids software steering accepts (hw::FindModifyField).
const std::vector<uint16_t>& KnownModifyFields() {
  static const auto* ids = [] {
    auto* v = new std::vector<uint16_t>;
    for (uint16_t id = 0; id < 0x1000; ++id) {
      if (hw::FindModifyField(id) != nullptr) v->push_back(id);
    }
    return v;
  }();
  return *ids;
}

// A modify-header field id: mostly a known one, else any 12-bit id.
hw::ModifyField DecodeModifyField(FuzzInput& in) {
  const uint8_t b = in.Byte();
  const std::vector<uint16_t>& known = KnownModifyFields();
  return static_cast<hw::ModifyField>(b < 0xc0 ? known[b % known.size()] : in.U16() & 0xfff);
}

// One action word (__be64): a form byte (% 4: set, add, copy, 8 arbitrary bytes) and its operands.
uint64_t DecodeModifyWord(FuzzInput& in) {
  switch (in.Below(4)) {
    case 0: {
      const hw::ModifyField field = DecodeModifyField(in);
      const uint8_t offset = in.Byte(), length = in.Byte();
      return hw::ModifySetWord(field, offset, length, in.U32());
    }
    case 1: {
      const hw::ModifyField field = DecodeModifyField(in);
      return hw::ModifyAddWord(field, in.U32());
    }
    case 2: {
      const hw::ModifyField src = DecodeModifyField(in);
      const uint8_t src_offset = in.Byte();
      const hw::ModifyField dst = DecodeModifyField(in);
      const uint8_t dst_offset = in.Byte(), length = in.Byte();
      return hw::ModifyCopyWord(src, src_offset, dst, dst_offset, length);
    }
    default: {
      uint64_t word;
      const std::vector<uint8_t> bytes = in.Bytes(sizeof(word));
      std::memcpy(&word, bytes.data(), sizeof(word));
      return word;
    }
  }
}

// The outer headers of a tunnel frame: what an encapsulation pushes.
std::vector<uint8_t> TunnelHeader(sim::Encap kind) {
  sim::TunnelFrameSpec t;
  t.outer.ipv4_src = {0xc0a80001};
  t.outer.ipv4_dst = {0xc0a80002};
  t.tunnel.kind = kind;
  t.tunnel.vni = 100;
  const std::vector<uint8_t> frame = sim::BuildFrame(t);
  // Ethernet, IPv4 and UDP plus VXLAN (8 + 8), or GRE without options (4).
  const size_t size = 14 + 20 + (kind == sim::Encap::kVxlan ? 16 : 4);
  return {frame.begin(), frame.begin() + size};
}

// Reformat data: a kind (% 6: none, a VXLAN header, a GRE header, a 14-byte L2 header, an 18-byte one with
// a VLAN tag, arbitrary bytes of a length byte) and its bytes.
std::vector<uint8_t> DecodeReformatData(FuzzInput& in) {
  switch (in.Below(6)) {
    case 0:
      return {};
    case 1:
      return TunnelHeader(sim::Encap::kVxlan);
    case 2:
      return TunnelHeader(sim::Encap::kGre);
    case 3:
    case 4: {
      const bool vlan = in.Byte() & 1;
      std::vector<uint8_t> l2 = in.Bytes(12);  // DMAC, SMAC
      if (vlan) {
        const uint16_t tci = in.U16();
        l2.insert(l2.end(), {0x81, 0x00, static_cast<uint8_t>(tci >> 8), static_cast<uint8_t>(tci)});
      }
      const uint16_t type = in.Byte() & 1 ? 0x86dd : 0x0800;
      l2.insert(l2.end(), {static_cast<uint8_t>(type >> 8), static_cast<uint8_t>(type)});
      return l2;
    }
    default:
      return in.Bytes(in.Byte());
  }
}

// A frame: a kind (% 6: TCP over IPv4, C-tagged when the source port is odd; UDP over IPv6; VXLAN; GRE;
// ARP; arbitrary bytes of a length byte), then the ports (2 bytes each) and a payload length (% 64), or
// the length and the bytes.
std::vector<uint8_t> DecodeFrame(FuzzInput& in) {
  const int kind = in.Below(6);
  if (kind == 5) return in.Bytes(in.Byte());
  sim::TunnelFrameSpec t;
  t.outer.ipv4_src = {0x0a000001};
  t.outer.ipv4_dst = {0x0a000002};
  t.outer.protocol = sim::kIpProtoTcp;
  t.outer.sport = in.U16();
  t.outer.dport = in.U16();
  switch (kind) {
    case 0:
      if (t.outer.sport & 1) t.outer.vlans = {{0x8100, static_cast<uint16_t>(t.outer.dport & 0xfff)}};
      break;
    case 1:
      t.outer.l3 = sim::L3Kind::kIpv6;
      t.outer.protocol = sim::kIpProtoUdp;
      break;
    case 2:
      t.inner = t.outer;
      t.tunnel.kind = sim::Encap::kVxlan;
      t.tunnel.vni = 100;
      break;
    case 3:
      t.inner = t.outer;
      t.tunnel.kind = sim::Encap::kGre;
      break;
    default:
      t.outer.l3 = sim::L3Kind::kNone;
      t.outer.ethertype = 0x0806;
      break;
  }
  t.outer.payload_len = in.Below(64);
  return sim::BuildFrame(t);
}

// The rules in `matcher`: its dump's rule records (3300).
int RuleCount(const dr::Matcher& matcher) {
  char* text = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&text, &size);
  if (out == nullptr) Fail("open_memstream failed");
  const absl::Status s = dr::DumpMatcher(matcher, out);
  std::fclose(out);
  const std::string dump(text, size);
  std::free(text);
  CheckOk(s, "DumpMatcher");
  int rules = 0;
  for (absl::string_view line : absl::StrSplit(dump, '\n')) rules += absl::StartsWith(line, "3300,");
  return rules;
}

class ActionListRun {
 public:
  ActionListRun(const uint8_t* data, size_t size) : in_(data, size), nic_(/*num_vfs=*/2) {}

  void Run() {
    SetUp();
    for (int n = in_.Below(9); n > 0; --n) CreateAction();
    for (int n = in_.Below(5); n > 0; --n) InsertRule();
    for (int n = in_.Below(5); n > 0; --n) SendFrame(DecodeFrame(in_));
    TearDown();
  }

 private:
  // The domain, its tables (0, 1, 2), a level-1 table of another domain on the same function, queues, a
  // TIR, counters, and a matcher in the root and one at level 1.
  void SetUp() {
    static constexpr mlx5dv_dr_domain_type kTypes[] = {
        MLX5DV_DR_DOMAIN_TYPE_NIC_RX, MLX5DV_DR_DOMAIN_TYPE_NIC_TX, MLX5DV_DR_DOMAIN_TYPE_FDB};
    const uint8_t setup = in_.Byte();
    type_ = kTypes[(setup & 3) % 3];
    function_ = type_ != MLX5DV_DR_DOMAIN_TYPE_FDB && (setup & 4) ? nic_.function(1) : &nic_.pf();
    absl::StatusOr<dr::Domain> domain = dr::Domain::Create(*function_, type_);
    CheckOk(domain.status(), "Domain::Create");
    domain_ = *std::move(domain);
    const mlx5dv_dr_domain_type other =
        type_ == MLX5DV_DR_DOMAIN_TYPE_NIC_RX ? MLX5DV_DR_DOMAIN_TYPE_NIC_TX : MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
    other_domain_ = *dr::Domain::Create(*function_, other);
    for (uint32_t level : {0, 1, 2}) tables_.push_back(*dr::Table::Create(domain_, level));
    other_table_ = *dr::Table::Create(other_domain_, 1);
    for (sim::Function* f : {function_, function_ == &nic_.pf() ? nic_.function(1) : &nic_.pf(), function_}) {
      queues_.push_back({f, f->CreateQueue()});
    }
    tir_ = *function_->CreateTir({queues_[0].qp, queues_[2].qp}, IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4);
    counters_ = *nic_.AllocateCounters(kCounterBulk);
    mask_kind_ = in_.Below(4);
    // A mask the domain type cannot match on (source_port outside FDB) must be rejected with a message: at
    // level 1 by the STE builders' checks; a root matcher goes through the kernel's path, which stores any
    // mask, and its rules are refused instead (InsertRule checks that they are, with a message). When
    // either matcher is rejected, both take the empty mask.
    absl::StatusOr<dr::Matcher> root = dr::Matcher::Create(tables_[0], 0, Mask());
    absl::StatusOr<dr::Matcher> level1 = dr::Matcher::Create(tables_[1], 0, Mask());
    if (!root.ok() || !level1.ok()) {
      for (absl::StatusOr<dr::Matcher>* m : {&root, &level1}) {
        if (!m->ok()) {
          CheckRejected(m->status(),
                        absl::StrFormat("a %s matcher of mask kind %d", DomainName(), mask_kind_));
        } else {
          CheckOk((*m)->Destroy(), "Matcher::Destroy of a matcher left for the empty mask");
        }
      }
      mask_kind_ = 0;
      root = dr::Matcher::Create(tables_[0], 0, Mask());
      level1 = dr::Matcher::Create(tables_[1], 0, Mask());
    }
    CheckOk(root.status(), "Matcher::Create in the root");
    CheckOk(level1.status(), "Matcher::Create at level 1");
    matchers_.push_back(*std::move(root));
    matchers_.push_back(*std::move(level1));
  }

  // The matchers' mask: empty, ip_version 4, source_port or ethertype, by mask_kind_.
  hw::MatchParams Mask() const {
    hw::MatchBuilder mask;
    switch (mask_kind_) {
      case 1:
        mask.IpVersion(kOuter, 4);
        break;
      case 2:
        mask.SourcePort(0xffff);
        break;
      case 3:
        mask.Ethertype(kOuter, 0xffff);
        break;
      default:
        break;
    }
    return *mask.Build();
  }

  // Creates one action from the input; a rejected one must come with a message.
  void CreateAction() {
    const int kind = in_.Below(13);
    absl::StatusOr<dr::Action> a = DecodeAction(kind);
    if (!a.ok()) {
      CheckRejected(a.status(), absl::StrFormat("action kind %d", kind));
      return;
    }
    actions_.push_back(*std::move(a));
  }

  // The action of `kind` (0 drop, 1 tag, 2 dest QP, 3 dest table, 4 default miss, 5 dest vport, 6 flow
  // counter, 7 modify header, 8 packet reformat, 9 push VLAN, 10 pop VLAN, 11 dest root table, 12 dest
  // TIR) from its operands. Flags are a byte's bits 0 (ROOT_LEVEL) and 7 (no such flag).
  absl::StatusOr<dr::Action> DecodeAction(int kind) {
    switch (kind) {
      case 0:
        return dr::Action::Drop();
      case 1:
        return dr::Action::Tag(in_.U32());
      case 2: {  // this function's queue, another function's (for another device), or any number
        const Queue& q = queues_[in_.Byte() % 2];
        const uint8_t which = in_.Byte();
        return dr::Action::DestQp(*q.function, which < 0xf0 ? q.qp : in_.U32());
      }
      case 3: {  // level 1 or 2, the root, another domain's table
        const uint8_t which = in_.Byte() % 4;
        return dr::Action::DestTable(which == 3 ? other_table_ : tables_[(which + 1) % 3]);
      }
      case 4:
        return dr::Action::DefaultMiss();
      case 5: {
        static constexpr uint32_t kVports[] = {0, 1, 2, 0xffff, 3};
        const uint8_t which = in_.Byte();
        return dr::Action::DestVport(domain_, which < 250 ? kVports[which % 5] : in_.U32());
      }
      case 6:
        return dr::Action::FlowCounter(*function_, counters_, in_.Below(kCounterBulk + 2));
      case 7: {
        const uint32_t flags = in_.Byte() & 0x81;
        std::vector<uint64_t> words(in_.Below(5));
        for (uint64_t& w : words) w = DecodeModifyWord(in_);
        return dr::Action::ModifyHeader(domain_, flags, words);
      }
      case 8: {
        const uint32_t flags = in_.Byte() & 0x81;
        // Types past L2_TO_L3_TUNNEL are not values of the enum in C++ (the C API's tests pass them).
        const auto type = static_cast<mlx5dv_flow_action_packet_reformat_type>(in_.Below(4));
        const std::vector<uint8_t> data = DecodeReformatData(in_);
        return dr::Action::PacketReformat(domain_, flags, type, data);
      }
      case 9: {  // a C-tag, an S-tag or any TPID, and any TCI
        const uint8_t which = in_.Byte();
        const uint32_t tpid = which < 0x80 ? 0x8100 : which < 0xf0 ? 0x88a8 : in_.U16();
        return dr::Action::PushVlan(domain_, htonl(tpid << 16 | in_.U16()));
      }
      case 10:
        return dr::Action::PopVlan();
      case 11: {  // the root, or a level-1 table
        const uint8_t which = in_.Byte();
        return dr::Action::DestRootTable(tables_[which & 1], in_.U16());
      }
      default: {
        const uint8_t which = in_.Byte();
        return dr::Action::DestTir(*function_, which < 0xf0 ? tir_ : in_.U32());
      }
    }
  }

  // A value for the matcher's mask from one byte: mostly one the mask takes, sometimes one it rejects
  // (ip_version 6 under 4, a bit outside the mask).
  hw::MatchParams DecodeValue() {
    const uint8_t b = in_.Byte();
    hw::MatchBuilder value;
    switch (mask_kind_) {
      case 1:
        value.IpVersion(kOuter, b < 0xf0 ? 4 : 6);
        break;
      case 2: {
        static constexpr uint32_t kPorts[] = {0xffff, 0, 1, 2};
        value.SourcePort(kPorts[b % 4]);
        break;
      }
      case 3: {
        static constexpr uint32_t kTypes[] = {0x0800, 0x86dd, 0x0806, 0x8100};
        value.Ethertype(kOuter, kTypes[b % 4]);
        break;
      }
      default:
        break;
    }
    if (b >= 0xf8) value.Dscp(kOuter, 1);  // outside every mask
    return *value.Build();
  }

  void InsertRule() {
    const int level = in_.Byte() & 1;
    dr::Matcher& matcher = matchers_[level];
    const hw::MatchParams value = DecodeValue();
    std::vector<const dr::Action*> list(in_.Below(8));
    for (const dr::Action*& a : list) {
      const uint8_t i = in_.Byte();
      if (!actions_.empty()) a = &actions_[i % actions_.size()];
    }
    if (actions_.empty()) list.clear();
    std::vector<std::string> names;
    for (const dr::Action* a : list) names.push_back(a->Describe());
    const std::string what =
        absl::StrFormat("rule in the level-%d matcher of a %s domain, value {%s}, actions [%s]", level,
                        DomainName(), testing::DescribeFields(value), absl::StrJoin(names, ", "));
    const int before = RuleCount(matcher);
    absl::StatusOr<dr::Rule> rule = dr::Rule::Create(matcher, value, list);
    const int after = RuleCount(matcher);
    if (!rule.ok()) {
      CheckRejected(rule.status(), what);
      if (after != before) {
        Fail(absl::StrFormat("%s: rejected (%s) but the matcher's rules went from %d to %d", what,
                             rule.status().ToString(), before, after));
      }
      return;
    }
    if (after != before + 1) {
      Fail(absl::StrFormat("%s: accepted but the matcher's rules went from %d to %d", what, before, after));
    }
    rules_.push_back(*std::move(rule));
  }

  const char* DomainName() const {
    return type_ == MLX5DV_DR_DOMAIN_TYPE_NIC_RX   ? "NIC_RX"
           : type_ == MLX5DV_DR_DOMAIN_TYPE_NIC_TX ? "NIC_TX"
                                                   : "FDB";
  }

  // Every copy of a frame ends somewhere that exists.
  void CheckDelivery(const sim::Delivery& d, const char* from) {
    sim::Function* f = nic_.function(d.vport);
    switch (d.fate) {
      case sim::Fate::kQueued:
      case sim::Fate::kQueueFull:
        if (f == nullptr || f->queue(d.qp_num) == nullptr) {
          Fail(absl::StrFormat("a frame %s went to queue 0x%x of vport %d, which does not exist", from,
                               d.qp_num, d.vport));
        }
        return;
      case sim::Fate::kPort:
        if (f == nullptr)
          Fail(absl::StrFormat("a frame %s went to vport %d, which does not exist", from, d.vport));
        return;
      case sim::Fate::kDropped:
      case sim::Fate::kDomainDefault:
      case sim::Fate::kTableLoop:
      case sim::Fate::kWire:
      case sim::Fate::kNoTunnel:
        return;
    }
    Fail(absl::StrFormat("a frame %s has no fate (%d)", from, static_cast<int>(d.fate)));
  }

  void CheckVerdict(const sim::Verdict& v, const char* from) {
    CheckDelivery(v, from);
    for (const sim::Delivery& copy : v.copies) CheckDelivery(copy, from);
  }

  // The frame from the wire, from the PF and from VF1, then everything delivered is taken off the NIC.
  void SendFrame(const std::vector<uint8_t>& frame) {
    CheckVerdict(nic_.ReceiveFromWire(frame), "from the wire");
    CheckVerdict(nic_.pf().Send(frame), "from the PF");
    CheckVerdict(nic_.function(1)->Send(frame), "from VF1");
    for (const Queue& q : queues_) {
      while (q.function->queue(q.qp)->Poll()) {
      }
    }
    for (int vport = 0; vport <= nic_.num_vfs(); ++vport) {
      while (nic_.function(vport)->PollPort()) {
      }
    }
    while (nic_.PollWire()) {
    }
  }

  // Everything goes, in dependency order, and each destroy succeeds: no reference was lost or leaked.
  void TearDown() {
    for (dr::Rule& r : rules_) CheckOk(r.Destroy(), "Rule::Destroy");
    for (dr::Matcher& m : matchers_) {
      if (const int n = RuleCount(m); n != 0) Fail(absl::StrFormat("%d rules left after destroying all", n));
      CheckOk(m.Destroy(), "Matcher::Destroy");
    }
    for (dr::Action& a : actions_)
      CheckOk(a.Destroy(), absl::StrFormat("Action::Destroy (%s)", a.Describe()));
    for (dr::Table& t : tables_) CheckOk(t.Destroy(), "Table::Destroy");
    CheckOk(other_table_.Destroy(), "Table::Destroy (the other domain's)");
    CheckOk(domain_.Destroy(), "Domain::Destroy");
    CheckOk(other_domain_.Destroy(), "Domain::Destroy (the other domain)");
    CheckOk(function_->DestroyTir(tir_), "DestroyTir");
    for (const Queue& q : queues_) CheckOk(q.function->DestroyQueue(q.qp), "DestroyQueue");
    CheckOk(nic_.FreeCounters(counters_), "FreeCounters");
  }

  struct Queue {
    sim::Function* function;
    uint32_t qp;
  };

  FuzzInput in_;
  sim::Nic nic_;  // before the objects on it: it outlives them
  mlx5dv_dr_domain_type type_ = MLX5DV_DR_DOMAIN_TYPE_NIC_RX;
  sim::Function* function_ = nullptr;  // the domain's
  std::vector<Queue> queues_;          // this function's first queue, another function's, this one's second
  uint32_t tir_ = 0;                   // over this function's two queues
  uint32_t counters_ = 0;
  int mask_kind_ = 0;
  dr::Domain domain_;
  dr::Domain other_domain_;
  std::vector<dr::Table> tables_;  // levels 0, 1, 2
  dr::Table other_table_;
  std::vector<dr::Matcher> matchers_;  // in tables 0 and 1
  std::vector<dr::Action> actions_;
  std::vector<dr::Rule> rules_;
};

}  // namespace
}  // namespace drsim::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  drsim::fuzz::ActionListRun(data, size).Run();
  return 0;
}
