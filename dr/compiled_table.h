// dr::CompiledTableOf — drsim-internal: the compiled flow table the device walks for a DR table, for
// harnesses that look up in a table without a device (acl_bench's bare-tuple lookups, which ask the ACL
// table's index for a 5-tuple's rule with no frame to parse). Programs steer packets through a device
// (sim::Nic); nothing else should need this.
//
// What. The table's hw::FlowTable (hw/flow_table.h): its chain of compiled matchers in lookup order, and
// its index (hw/table_index.h) once the driver builds one. The driver owns it; it lives as long as the
// table. Defined by //dr (this target only declares it, so that its users are named apart).
//
// Thread-safety. Read it as the device does: without locks, inside a read section of the device's
// reclaimer (hw/reclaimer.h), while control calls may change it.
#ifndef DRSIM_DR_COMPILED_TABLE_H_
#define DRSIM_DR_COMPILED_TABLE_H_

#include "hw/flow_table.h"

namespace drsim::dr {

class Table;  // dr/dr.h

// `table`'s compiled flow table, or nullptr for an empty (destroyed or moved-from) handle.
const hw::FlowTable* CompiledTableOf(const Table& table);

}  // namespace drsim::dr

#endif  // DRSIM_DR_COMPILED_TABLE_H_
