// FlowEngine's indirect actions: flow indirect_action create|update|destroy|query (indirect_actions.h).
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "testpmd/context.h"
#include "testpmd/engine.h"

namespace drsim::testpmd {

absl::StatusOr<CommandResult> FlowEngine::RunIndirectAction(const IndirectActionCmd& cmd) {
  pristine_ = false;
  DRSIM_RETURN_IF_ERROR(context_->CheckPort(cmd.port));
  IndirectTable& table = context_->indirect;
  CommandResult result;
  switch (cmd.op) {
    case IndirectActionCmd::Op::kCreate: {
      DRSIM_ASSIGN_OR_RETURN(const uint32_t id, table.Create(*context_, cmd));
      result.indirect_id = id;
      result.text = absl::StrFormat("Indirect action #%d created\n", id);
      break;
    }
    case IndirectActionCmd::Op::kUpdate: {
      absl::StatusOr<IndirectEntry*> entry = table.Find(cmd.port, cmd.ids.front());
      if (!entry.ok()) return WithPos(entry.status(), cmd.id_pos);
      DRSIM_RETURN_IF_ERROR((*entry)->object->Update(*context_, cmd.actions.front()));
      result.indirect_id = cmd.ids.front();
      result.text = absl::StrFormat("Indirect action #%d updated\n", cmd.ids.front());
      break;
    }
    case IndirectActionCmd::Op::kDestroy: {
      IndirectTable::DestroyOutcome out =
          table.Destroy(cmd.port, cmd.ids, [&](const IndirectObject& o) { return FlowsUsing(cmd.port, o); });
      if (!out.refused.ok()) {
        // testpmd went on past the refusal: what went is gone, and replaying the history must do the same.
        if (out.destroyed.empty()) return WithPos(out.refused, cmd.id_pos);
        IndirectActionCmd done = cmd;
        done.ids = out.destroyed;
        Record(Command{SourcePos{}, std::move(done)});
        return ErrorAt(cmd.id_pos, out.refused.code(),
                       absl::StrFormat("%s; the others were destroyed: #%s (testpmd goes on past a refusal)",
                                       out.refused.message(), absl::StrJoin(out.destroyed, ", #")));
      }
      result.destroyed = std::move(out.destroyed);
      for (const uint32_t id : result.destroyed) {
        absl::StrAppendFormat(&result.text, "Indirect action #%d destroyed\n", id);
      }
      break;
    }
    case IndirectActionCmd::Op::kQuery: {
      absl::StatusOr<IndirectEntry*> entry = table.Find(cmd.port, cmd.ids.front());
      if (!entry.ok()) return WithPos(entry.status(), cmd.id_pos);
      DRSIM_RETURN_IF_ERROR((*entry)->object->Query(nic_, &result));
      break;
    }
  }
  return result;
}

std::vector<uint32_t> FlowEngine::FlowsUsing(uint16_t port, const IndirectObject& object) const {
  std::vector<uint32_t> users;
  auto flows = context_->flows.find(port);
  if (flows == context_->flows.end()) return users;
  for (const auto& [id, flow] : flows->second) {
    if (flow->objects.Holds(&object)) users.push_back(id);
  }
  return users;
}

}  // namespace drsim::testpmd
