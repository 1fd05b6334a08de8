#include "dr/dump.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "dr/dump_encoding.h"
#include "dr/objects.h"
#include "dr/status_errno.h"
#include "hw/action_program.h"
#include "hw/device.h"
#include "hw/match_layout.h"
#include "hw/match_table.h"

namespace drsim::dr {

using actions::ActionType;
using internal::ActionObj;
using internal::DomainObj;
using internal::MatcherObj;
using internal::RuleObj;
using internal::TableObj;

namespace {

// Record type ids (rdma-core's enum dr_dump_rec_type).
enum Record : int {
  kDomain = 3000,
  kDomainInfoFlexParser = 3001,
  kDomainInfoDevAttr = 3002,
  kDomainInfoVport = 3003,
  kDomainInfoCaps = 3004,
  kTable = 3100,
  kTableRx = 3101,
  kTableTx = 3102,
  kMatcher = 3200,
  kMatcherRx = 3202,
  kMatcherTx = 3203,
  kMatcherBuilder = 3204,
  kMatcherMask = 3205,
  kRule = 3300,
  kRuleRxEntryV1 = 3303,
  kRuleTxEntryV1 = 3304,
  kActionEncapL2 = 3400,
  kActionEncapL3 = 3401,
  kActionModifyHdr = 3402,
  kActionDrop = 3403,
  kActionQp = 3404,
  kActionFt = 3405,
  kActionCtr = 3406,
  kActionTag = 3407,
  kActionVport = 3408,
  kActionDecapL2 = 3409,
  kActionDecapL3 = 3410,
  kActionDevxTir = 3411,
  kActionPushVlan = 3412,
  kActionPopVlan = 3413,
  kActionMeter = 3414,
  kActionSampler = 3415,
  kActionDestArray = 3416,
  kActionAsoFirstHit = 3417,
  kActionAsoFlowMeter = 3418,
  kActionAsoCt = 3419,
  kActionMiss = 3423,
  kActionRootFt = 3424,
};

// The modelled device (docs/semantics.md): a ConnectX-6 Dx, steering format v1.
constexpr unsigned kSwFormatVersion = 1;
// MLX5_FLEX_PARSER_*_ENABLED of the flex parsers it has: GENEVE (1 << 3), MPLS over GRE (1 << 4) and over
// UDP (1 << 5), VXLAN-GPE (1 << 7), GENEVE option 0 (1 << 10), GTP-U (1 << 11) and its DW2, first
// extension DW0, DW0 and TEID samples (1 << 16..19). v1 devices match ICMP without flex parsers.
constexpr uint32_t kFlexProtocols = 0xf0cb8;
constexpr const char* kFlexParserNames[] = {"icmp_dw0", "icmp_dw1", "icmpv6_dw0", "icmpv6_dw1"};
// Printed where rdma-core prints its PACKAGE_VERSION.
constexpr const char* kPackageVersion = "drsim";
// rdma-core's DR_DOMAIN_FLAG_DISABLE_DUPLICATE_RULES.
constexpr unsigned kFlagDisableDuplicateRules = 1 << 1;
// rdma-core's table_type (FS_FT_NIC_RX, FS_FT_NIC_TX, FS_FT_FDB) by domain type.
constexpr int kTableType[] = {0, 1, 4};

bool HasRxPipe(mlx5dv_dr_domain_type type) { return type != MLX5DV_DR_DOMAIN_TYPE_NIC_TX; }
bool HasTxPipe(mlx5dv_dr_domain_type type) { return type != MLX5DV_DR_DOMAIN_TYPE_NIC_RX; }

// Buffers records and writes them in chunks. The first failed write ends the output and is kept.
class Writer {
 public:
  explicit Writer(std::FILE* out) : out_(out) {}

  template <typename... Args>
  void Add(const absl::FormatSpec<Args...>& format, const Args&... args) {
    if (!status_.ok()) return;
    absl::StrAppendFormat(&buffer_, format, args...);
    if (buffer_.size() >= kChunk) Write();
  }

  bool ok() const { return status_.ok(); }

  // Writes what is buffered and flushes the stream.
  absl::Status Finish() {
    Write();
    if (status_.ok()) {
      errno = 0;
      if (std::fflush(out_) != 0) Fail();
    }
    return status_;
  }

 private:
  static constexpr size_t kChunk = 64 * 1024;

  void Write() {
    if (!status_.ok() || buffer_.empty()) return;
    errno = 0;
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), out_) != buffer_.size()) Fail();
    buffer_.clear();
  }
  void Fail() { status_ = StatusFromErrno(errno != 0 ? errno : EIO, "writing the dump"); }

  std::FILE* out_;
  std::string buffer_;
  absl::Status status_;
};

// Writes the records of objects of one domain, whose lock the caller holds.
class Dumper {
 public:
  Dumper(std::FILE* out, const DumpOptions& options) : w_(out), stable_(options.stable_ids) {}

  void DomainRecords(const DomainObj& d);
  void TableRecords(const TableObj& t);
  void TableSubtree(const TableObj& t);
  void MatcherRecords(const MatcherObj& m);
  void MatcherSubtree(const MatcherObj& m);
  void RuleRecords(const RuleObj& r);
  absl::Status Finish() { return w_.Finish(); }

 private:
  static uint64_t Address(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  uint64_t Id(const DomainObj& d) const {
    const uint64_t base = stable_ ? d.id : static_cast<uint64_t>(getpid());
    return base << 8 | static_cast<uint64_t>(d.type);
  }
  uint64_t Id(const TableObj& t) const { return stable_ ? t.ft.id : Address(&t); }
  uint64_t Id(const MatcherObj& m) const { return stable_ ? m.hw.id : Address(&m); }
  uint64_t Id(const RuleObj& r) const { return stable_ ? internal::RuleId(r) : Address(&r); }
  uint64_t Id(const ActionObj& a) const { return stable_ ? a.id : Address(&a); }
  // rdma-core prints the address of the matcher's per-pipe part; drsim has none and prints the address
  // of the pipe's builder list (stable ids: the matcher's id).
  uint64_t PipeId(const MatcherObj& m, bool rx) const {
    return stable_ ? m.hw.id : Address(rx ? &m.compiled.rx_builders : &m.compiled.tx_builders);
  }

  void MaskRecord(const MatcherObj& m);
  void MatcherPipeRecords(const MatcherObj& m, bool rx);
  void ActionRecord(const ActionObj& a, uint64_t rule);

  Writer w_;
  bool stable_;
};

void Dumper::DomainRecords(const DomainObj& d) {
  const hw::DeviceInfo info = d.device->Describe();
  const uint64_t id = Id(d);
  const unsigned flags = d.allow_duplicates ? 0 : kFlagDisableDuplicateRules;
  // Supports SW steering; no ICM buddies (STE, modify action, modify pattern).
  w_.Add("%d,0x%x,%d,0%x,%d,%s,%s,%u,%u,%u,%u,%u\n", kDomain, id, static_cast<int>(d.type), info.vhca_id, 1,
         kPackageVersion, info.name, flags, 0u, 0u, 0u, kSwFormatVersion);
  w_.Add("%d,0x%x,%u,%s,%d\n", kDomainInfoDevAttr, id, unsigned{info.num_ports}, info.fw_version, 0);
  // No ICM: the NIC RX and TX drop addresses are 0.
  w_.Add("%d,0x%x,0x%x,0x%x,0x%x,0x%x,%d,%d\n", kDomainInfoCaps, id, info.vhca_id, 0, 0, kFlexProtocols,
         int{info.num_ports}, d.device->IsEswitchManager() ? 1 : 0);
  // The eSwitch's vports (FDB domains), then the wire; no ICM. The software NIC gives the function of
  // vport N the GVMI N; the wire has the eSwitch manager's, the PF's (vport 0).
  if (d.type == MLX5DV_DR_DOMAIN_TYPE_FDB) {
    for (uint32_t v = 0; v < hw::kWireVport && d.device->HasVport(v); ++v) {
      w_.Add("%d,0x%x,%d,0x%x,0x%x,0x%x\n", kDomainInfoVport, id, v, v, 0, 0);
    }
  }
  w_.Add("%d,0x%x,%d,0x%x,0x%x,0x%x\n", kDomainInfoVport, id, hw::kWireVport, 0, 0, 0);
  // v1 devices use no flex parser for ICMP: every id is 0.
  for (const char* name : kFlexParserNames) w_.Add("%d,0x%x,%s,0x%x\n", kDomainInfoFlexParser, id, name, 0);
}

void Dumper::TableRecords(const TableObj& t) {
  const mlx5dv_dr_domain_type type = t.domain->type;
  w_.Add("%d,0x%x,0x%x,%d,%d\n", kTable, Id(t), Id(*t.domain), kTableType[type], t.ft.level);
  if (t.ft.level == 0) return;  // a root table has no steering anchors
  // The start anchors' ICM indexes: the software NIC has no ICM.
  if (HasRxPipe(type)) w_.Add("%d,0x%x,0x%x\n", kTableRx, Id(t), 0);
  if (HasTxPipe(type)) w_.Add("%d,0x%x,0x%x\n", kTableTx, Id(t), 0);
}

void Dumper::TableSubtree(const TableObj& t) {
  TableRecords(t);
  for (const MatcherObj* m : t.matchers) {
    if (!w_.ok()) return;
    MatcherSubtree(*m);
  }
}

void Dumper::MaskRecord(const MatcherObj& m) {
  // rdma-core's section order, an empty field for a section the criteria leave out, and its trailing
  // empty field when misc5 is left out.
  static constexpr hw::Section kOrder[] = {hw::Section::kOuter, hw::Section::kInner, hw::Section::kMisc,
                                           hw::Section::kMisc2, hw::Section::kMisc3, hw::Section::kMisc4,
                                           hw::Section::kMisc5};
  std::string line = absl::StrFormat("%d,0x%x,", kMatcherMask, Id(m));
  for (hw::Section s : kOrder) {
    const bool enabled = m.compiled.criteria & hw::CriteriaBit(s);
    if (enabled) line += internal::HostLayoutSectionHex(m.compiled.mask.data(), s);
    if (s != hw::Section::kMisc5) {
      line += ",";
    } else {
      line += enabled ? "\n" : ",\n";
    }
  }
  w_.Add("%s", line);
}

void Dumper::MatcherPipeRecords(const MatcherObj& m, bool rx) {
  const std::vector<matcher::SteBuilder>& builders = rx ? m.compiled.rx_builders : m.compiled.tx_builders;
  const hw::MatchTable& table = m.hw.table;
  // A fixed-size matcher prints the log2 size of its match table (rounded up: buckets hold 10 slots);
  // there is no ICM (start table and end anchor indexes are 0).
  const int log_size = table.fixed_size() ? 64 - __builtin_clzll(table.slot_capacity() - 1) : -1;
  w_.Add("%d,0x%x,0x%x,%d,0x%x,0x%x,%d\n", rx ? kMatcherRx : kMatcherTx, PipeId(m, rx), Id(m),
         static_cast<int>(builders.size()), 0, 0, log_size);
  for (size_t i = 0; i < builders.size(); ++i) {
    // Legacy (STE builder) lookups: no definer format id.
    w_.Add("%d,0x%x,%d,%d,0x%x,%d\n", kMatcherBuilder, Id(m), static_cast<int>(i), rx ? 1 : 0,
           builders[i].lu_type, -1);
  }
}

void Dumper::MatcherRecords(const MatcherObj& m) {
  w_.Add("%d,0x%x,0x%x,%d\n", kMatcher, Id(m), Id(*m.table), m.hw.priority);
  MaskRecord(m);
  if (m.table->ft.level == 0) return;  // root matchers: no steering lookups of their own in rdma-core
  const mlx5dv_dr_domain_type type = m.table->domain->type;
  if (HasRxPipe(type)) MatcherPipeRecords(m, true);
  if (HasTxPipe(type)) MatcherPipeRecords(m, false);
}

void Dumper::MatcherSubtree(const MatcherObj& m) {
  MatcherRecords(m);
  for (const hw::MatchTable::Handle entry : m.hw.table.InInsertionOrder()) {
    if (!w_.ok()) return;
    RuleRecords(*static_cast<const RuleObj*>(m.hw.table.owner(entry)));
  }
}

void Dumper::RuleRecords(const RuleObj& r) {
  const MatcherObj& m = *r.matcher;
  const uint64_t id = Id(r);
  w_.Add("%d,0x%x,0x%x\n", kRule, id, Id(m));
  if (m.table->ft.level != 0) {
    // One entry per pipe the rule is in: its index in the match table and drsim's entry encoding.
    const mlx5dv_dr_domain_type type = m.table->domain->type;
    const std::string entry = internal::EntryHex(m.hw.definer, m.hw.table.key(r.entry));
    if (HasRxPipe(type) && !r.programs->skip_rx)
      w_.Add("%d,0x%x,0x%x,%s\n", kRuleRxEntryV1, hw::MatchTable::RecordNumber(r.entry), id, entry);
    if (HasTxPipe(type) && !r.programs->skip_tx)
      w_.Add("%d,0x%x,0x%x,%s\n", kRuleTxEntryV1, hw::MatchTable::RecordNumber(r.entry), id, entry);
  }
  for (const ActionObj* a : r.programs->actions) ActionRecord(a != nullptr ? *a : *r.own_tag, id);
}

void Dumper::ActionRecord(const ActionObj& a, uint64_t rule) {
  const actions::ActionSpec& s = a.spec;
  const uint64_t id = Id(a);
  // Hardware-only fields (ICM addresses, rewrite indexes, firmware reformat/table objects) print as 0.
  switch (s.type) {
    case ActionType::kTnlL2ToL2:
      w_.Add("%d,0x%x,0x%x\n", kActionDecapL2, id, rule);
      break;
    case ActionType::kL2ToTnlL2:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionEncapL2, id, rule, 0);
      break;
    case ActionType::kTnlL3ToL2:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionDecapL3, id, rule, 0);
      break;
    case ActionType::kL2ToTnlL3:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionEncapL3, id, rule, 0);
      break;
    case ActionType::kDrop:
      w_.Add("%d,0x%x,0x%x\n", kActionDrop, id, rule);
      break;
    case ActionType::kQp:
      if (s.is_tir) {
        w_.Add("%d,0x%x,0x%x,0x%x\n", kActionDevxTir, id, rule, s.tir);  // the TIR, not its ICM address
      } else {
        w_.Add("%d,0x%x,0x%x,0x%x\n", kActionQp, id, rule, s.qp_num);
      }
      break;
    case ActionType::kFt:
      w_.Add("%d,0x%x,0x%x,0x%x,0x%x\n", kActionFt, id, rule, a.referenced_table->ft.id,
             Id(*a.referenced_table));
      break;
    case ActionType::kCtr:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionCtr, id, rule, s.counter_id);
      break;
    case ActionType::kTag:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionTag, id, rule, s.tag);
      break;
    case ActionType::kModifyHdr:
      // rdma-core's form without a modify-header pattern: rewrite index, single-action optimisation,
      // then 0 for the pattern's action count, index and argument object.
      w_.Add("%d,0x%x,0x%x,0x%x,%d,0x%x,0x%x,0x%x\n", kActionModifyHdr, id, rule, 0, 0, 0, 0, 0);
      break;
    case ActionType::kVport:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionVport, id, rule, s.vport);
      break;
    case ActionType::kMeter:
      w_.Add("%d,0x%x,0x%x,0x%x,0x%x,0x%x,0x%x\n", kActionMeter, id, rule, Id(*a.referenced_table), s.meter,
             0, 0);
      break;
    case ActionType::kMiss:
      w_.Add("%d,0x%x,0x%x\n", kActionMiss, id, rule);
      break;
    case ActionType::kSampler:
      w_.Add("%d,0x%x,0x%x,0x%x,0x%x,0x%x,0x%x,0x%x\n", kActionSampler, id, rule, Id(*a.referenced_table), 0,
             s.sampler, 0, 0);
      break;
    case ActionType::kDestArray:
      w_.Add("%d,0x%x,0x%x,0x%x,0x%x,0x%x\n", kActionDestArray, id, rule, 0, 0, 0);
      break;
    case ActionType::kPopVlan:
      w_.Add("%d,0x%x,0x%x\n", kActionPopVlan, id, rule);
      break;
    case ActionType::kPushVlan:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionPushVlan, id, rule, s.vlan_header);
      break;
    case ActionType::kAsoFirstHit:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionAsoFirstHit, id, rule, a.aso_object);
      break;
    case ActionType::kAsoFlowMeter:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionAsoFlowMeter, id, rule, a.aso_object);
      break;
    case ActionType::kAsoCt:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionAsoCt, id, rule, a.aso_object);
      break;
    case ActionType::kRootFt:
      w_.Add("%d,0x%x,0x%x,0x%x\n", kActionRootFt, id, rule, a.referenced_table->ft.id);
      break;
  }
}

constexpr absl::string_view kNullStream = "dump: the output stream is null";

}  // namespace

absl::Status DumpDomain(const Domain& domain, std::FILE* out, const DumpOptions& options) {
  DomainObj* d = domain.obj();
  if (d == nullptr) return absl::InvalidArgumentError("dump: domain handle is empty");
  if (out == nullptr) return absl::InvalidArgumentError(kNullStream);
  std::lock_guard<std::recursive_mutex> lock(d->mu);  // the caller's handle keeps the domain alive
  Dumper dumper(out, options);
  dumper.DomainRecords(*d);
  for (const TableObj* t : d->tables) dumper.TableSubtree(*t);
  return dumper.Finish();
}

absl::Status DumpTable(const Table& table, std::FILE* out, const DumpOptions& options) {
  const TableObj* t = table.obj();
  if (t == nullptr) return absl::InvalidArgumentError("dump: table handle is empty");
  if (out == nullptr) return absl::InvalidArgumentError(kNullStream);
  internal::DomainLock lock(t->domain);
  Dumper dumper(out, options);
  dumper.DomainRecords(*t->domain);
  dumper.TableSubtree(*t);
  return dumper.Finish();
}

absl::Status DumpMatcher(const Matcher& matcher, std::FILE* out, const DumpOptions& options) {
  const MatcherObj* m = matcher.obj();
  if (m == nullptr) return absl::InvalidArgumentError("dump: matcher handle is empty");
  if (out == nullptr) return absl::InvalidArgumentError(kNullStream);
  internal::DomainLock lock(m->table->domain);
  Dumper dumper(out, options);
  dumper.DomainRecords(*m->table->domain);
  dumper.TableRecords(*m->table);
  dumper.MatcherSubtree(*m);
  return dumper.Finish();
}

absl::Status DumpRule(const Rule& rule, std::FILE* out, const DumpOptions& options) {
  const RuleObj* r = rule.obj();
  if (r == nullptr) return absl::InvalidArgumentError("dump: rule handle is empty");
  if (out == nullptr) return absl::InvalidArgumentError(kNullStream);
  const MatcherObj* m = r->matcher;
  internal::DomainLock lock(m->table->domain);
  Dumper dumper(out, options);
  dumper.DomainRecords(*m->table->domain);
  dumper.TableRecords(*m->table);
  dumper.MatcherRecords(*m);
  dumper.RuleRecords(*r);
  return dumper.Finish();
}

}  // namespace drsim::dr
