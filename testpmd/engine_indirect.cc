// FlowEngine's indirect actions: flow indirect_action create|update|destroy|query (indirect_actions.h).
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "testpmd/context.h"
#include "testpmd/engine.h"

namespace drsim::testpmd {

absl::StatusOr<CommandResult> FlowEngine::RunIndirectAction(const IndirectActionCmd& cmd) {
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
      absl::StatusOr<std::vector<uint32_t>> destroyed = table.Destroy(cmd.port, cmd.ids);
      if (!destroyed.ok()) return WithPos(destroyed.status(), cmd.id_pos);
      result.destroyed = *std::move(destroyed);
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

}  // namespace drsim::testpmd
