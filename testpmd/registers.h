// Which steering registers carry rte_flow metadata on the software NIC. The mlx5 PMD picks registers by
// device capabilities and the dv_xmeta_en mode; this front end fixes one layout, matching mlx5's
// extended-metadata mode 2 (META32) where metadata crosses domains:
//
//   META (meta item, set_meta)             reg_c_1, 32 bits
//   TAG index 0..2 (tag item, set_tag)     reg_c_2 .. reg_c_4
//   meter colour and meter flow id         reg_c_5: colour in bits 0..7 (written by the DR flow meter:
//                                          red 0, yellow 1, green 2), the flow id in bits 8..31
//   the CT result (conntrack)              reg_c_5's low byte (mlx5's ASO register; one ASO action a rule)
//   the flow-hit result (an ASO-aged age)  reg_c_5 (the same register, as mlx5 shares it: aging.h)
//
// reg_c_0 is left alone (mlx5 keeps vport metadata there in the FDB); reg_c_6/7 cannot be modified by
// SW steering.
#ifndef DRSIM_TESTPMD_REGISTERS_H_
#define DRSIM_TESTPMD_REGISTERS_H_

#include <cstdint>

#include "hw/match_layout.h"
#include "hw/modify_header.h"

namespace drsim::testpmd {

inline constexpr int kMetaRegC = 1;
inline constexpr int kFirstTagRegC = 2;
inline constexpr int kMaxTagIndex = 2;
inline constexpr int kMeterRegC = 5;
inline constexpr uint32_t kMeterColorMask = 0xff;
inline constexpr int kMeterFlowIdShift = 8;

// The PRM colour the DR flow meter writes for rte_color `color` (green 0, yellow 1, red 2).
constexpr uint32_t PrmColor(uint32_t rte_color) { return rte_color == 0 ? 2 : rte_color == 1 ? 1 : 0; }

// The match field and modify-header field of reg_c_`index` (0..5).
constexpr hw::Field RegCMatchField(int index) {
  return static_cast<hw::Field>(static_cast<int>(hw::Field::kMetadataRegC0) - index);
}
constexpr hw::ModifyField RegCModifyField(int index) {
  return static_cast<hw::ModifyField>(static_cast<int>(hw::ModifyField::kMetadataRegC0) + index);
}

}  // namespace drsim::testpmd

#endif  // DRSIM_TESTPMD_REGISTERS_H_
