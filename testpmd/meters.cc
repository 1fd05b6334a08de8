#include "testpmd/meters.h"

#include <array>

#include "absl/strings/str_format.h"
#include "sim/meter.h"
#include "testpmd/meter_profile.h"

namespace drsim::testpmd {
namespace {

using absl::StatusCode;

// The actions mlx5 accepts in green/yellow policy lists (its documentation's list, without nested meters).
bool PolicyAction(ActionType t) {
  switch (t) {
    case ActionType::kQueue:
    case ActionType::kRss:
    case ActionType::kPortId:
    case ActionType::kRepresentedPort:
    case ActionType::kJump:
    case ActionType::kDrop:
    case ActionType::kMark:
    case ActionType::kSetTag:
    case ActionType::kModifyField:
    case ActionType::kVoid:
      return true;
    default:
      return false;
  }
}

bool IsJustDrop(const std::vector<Action>& actions) {
  int drops = 0;
  for (const Action& a : actions) {
    if (a.def->type == ActionType::kDrop) {
      ++drops;
    } else if (a.def->type != ActionType::kVoid) {
      return false;
    }
  }
  return drops == 1;
}

}  // namespace

bool Meter::in_use() const {
  for (const auto& [type, instance] : instances) {
    if (!instance.expired()) return true;
  }
  return false;
}

absl::Status MeterBook::AddProfile(const AddMeterProfileCmd& cmd, SourcePos pos) {
  if (profiles_.count({cmd.port, cmd.profile_id})) {
    return ErrorAt(pos, StatusCode::kAlreadyExists,
                   absl::StrFormat("meter profile %d exists on port %d", cmd.profile_id, cmd.port));
  }
  absl::StatusOr<sim::MeterParams> params = MeterProfileParams(cmd);
  if (!params.ok()) return WithPos(params.status(), pos);
  profiles_[{cmd.port, cmd.profile_id}] = *params;
  return absl::OkStatus();
}

absl::Status MeterBook::AddPolicy(const AddMeterPolicyCmd& cmd, SourcePos pos) {
  if (policies_.count({cmd.port, cmd.policy_id})) {
    return ErrorAt(pos, StatusCode::kAlreadyExists,
                   absl::StrFormat("meter policy %d exists on port %d", cmd.policy_id, cmd.port));
  }
  if (!IsJustDrop(cmd.red)) {
    return ErrorAt(cmd.red_pos.known() ? cmd.red_pos : pos, StatusCode::kInvalidArgument,
                   "r_actions must be 'drop / end': mlx5 drops red packets");
  }
  for (const std::vector<Action>* colour : {&cmd.green, &cmd.yellow}) {
    for (const Action& a : *colour) {
      if (a.def->type == ActionType::kMeter) {
        return ErrorAt(a.pos, StatusCode::kUnimplemented,
                       "meter hierarchies (a meter in a policy) are not supported");
      }
      if (!PolicyAction(a.def->type)) {
        return ErrorAt(a.pos, StatusCode::kInvalidArgument,
                       absl::StrFormat("'%s' is not a meter policy action: mlx5 takes queue, rss, port_id, "
                                       "represented_port, jump, drop, mark, set_tag and modify_field",
                                       a.def->name));
      }
    }
  }
  MeterPolicy policy;
  policy.cmd = cmd;
  policy.default_policy = cmd.green.empty() && cmd.yellow.empty();
  policies_[{cmd.port, cmd.policy_id}] = std::move(policy);
  return absl::OkStatus();
}

absl::Status MeterBook::CreateMeter(const CreateMeterCmd& cmd, SourcePos pos) {
  if (meters_.count({cmd.port, cmd.meter_id})) {
    return ErrorAt(pos, StatusCode::kAlreadyExists,
                   absl::StrFormat("meter %d exists on port %d", cmd.meter_id, cmd.port));
  }
  if (!profiles_.count({cmd.port, cmd.profile_id})) {
    return ErrorAt(cmd.profile_pos, StatusCode::kNotFound,
                   absl::StrFormat("no meter profile %d on port %d (add port meter profile ...)",
                                   cmd.profile_id, cmd.port));
  }
  if (!policies_.count({cmd.port, cmd.policy_id})) {
    return ErrorAt(cmd.policy_pos, StatusCode::kNotFound,
                   absl::StrFormat("no meter policy %d on port %d (add port meter policy ...)", cmd.policy_id,
                                   cmd.port));
  }
  Meter m;
  m.profile_id = cmd.profile_id;
  m.policy_id = cmd.policy_id;
  m.enabled = cmd.enable;
  static constexpr std::array<sim::MeterColor, 3> kColors = {sim::MeterColor::kGreen,
                                                             sim::MeterColor::kYellow, sim::MeterColor::kRed};
  m.start_color = kColors[cmd.default_color];
  meters_[{cmd.port, cmd.meter_id}] = std::move(m);
  return absl::OkStatus();
}

absl::Status MeterBook::Apply(const MeterObjectCmd& cmd, SourcePos pos) {
  const std::pair<uint16_t, uint32_t> key{cmd.port, cmd.id};
  switch (cmd.op) {
    case MeterObjectCmd::Op::kDeleteProfile:
      if (!profiles_.count(key)) {
        return ErrorAt(pos, StatusCode::kNotFound,
                       absl::StrFormat("no meter profile %d on port %d", cmd.id, cmd.port));
      }
      for (const auto& [k, m] : meters_) {
        if (k.first == cmd.port && m.profile_id == cmd.id) {
          return ErrorAt(pos, StatusCode::kFailedPrecondition,
                         absl::StrFormat("meter profile %d is used by meter %d", cmd.id, k.second));
        }
      }
      profiles_.erase(key);
      return absl::OkStatus();
    case MeterObjectCmd::Op::kDeletePolicy:
      if (!policies_.count(key)) {
        return ErrorAt(pos, StatusCode::kNotFound,
                       absl::StrFormat("no meter policy %d on port %d", cmd.id, cmd.port));
      }
      for (const auto& [k, m] : meters_) {
        if (k.first == cmd.port && m.policy_id == cmd.id) {
          return ErrorAt(pos, StatusCode::kFailedPrecondition,
                         absl::StrFormat("meter policy %d is used by meter %d", cmd.id, k.second));
        }
      }
      policies_.erase(key);
      return absl::OkStatus();
    default:
      break;
  }
  Meter* m = FindMeter(cmd.port, cmd.id);
  if (m == nullptr) {
    return ErrorAt(pos, StatusCode::kNotFound, absl::StrFormat("no meter %d on port %d", cmd.id, cmd.port));
  }
  if (cmd.op == MeterObjectCmd::Op::kDelete) {
    if (m->in_use()) {
      return ErrorAt(pos, StatusCode::kFailedPrecondition,
                     absl::StrFormat("meter %d is used by flows; destroy them first", cmd.id));
    }
    meters_.erase(key);
    return absl::OkStatus();
  }
  m->enabled = cmd.op == MeterObjectCmd::Op::kEnable;
  std::array<uint8_t, 32> prm{};
  sim::MeterParams params = *Profile(cmd.port, m->profile_id);
  params.start_color = m->start_color;
  params.Serialize(prm.data());
  for (auto& [type, weak] : m->instances) {
    if (std::shared_ptr<MeterInstance> instance = weak.lock()) {
      if (absl::Status s = instance->meter.ModifyFlowMeter(m->enabled, prm, sim::kMeterSelectActive);
          !s.ok()) {
        return WithPos(s, pos);
      }
    }
  }
  return absl::OkStatus();
}

Meter* MeterBook::FindMeter(uint16_t port, uint32_t id) {
  auto it = meters_.find({port, id});
  return it == meters_.end() ? nullptr : &it->second;
}

const sim::MeterParams* MeterBook::Profile(uint16_t port, uint32_t id) const {
  auto it = profiles_.find({port, id});
  return it == profiles_.end() ? nullptr : &it->second;
}

const MeterPolicy* MeterBook::Policy(uint16_t port, uint32_t id) const {
  auto it = policies_.find({port, id});
  return it == policies_.end() ? nullptr : &it->second;
}

absl::StatusOr<std::shared_ptr<const void>> MeterBook::AllocateFlowId(uint32_t* id) {
  if (!free_flow_ids_.empty()) {
    *id = *free_flow_ids_.begin();
    free_flow_ids_.erase(free_flow_ids_.begin());
  } else if (next_flow_id_ < (1u << 24)) {
    *id = next_flow_id_++;
  } else {
    return absl::ResourceExhaustedError("all 2^24 - 1 meter flow ids (reg_c_5 bits 8..31) are in use");
  }
  const uint32_t allocated = *id;
  return std::shared_ptr<const void>(nullptr,
                                     [this, allocated](const void*) { free_flow_ids_.insert(allocated); });
}

}  // namespace drsim::testpmd
