// The mlx5 match layout: the 448-byte, 7-section buffer that mlx5dv_dr matchers and rules are written in
// (struct mlx5dv_flow_match_parameters::match_buf, PRM fte_match_param without its trailing reserved part).
//
// Every field is described once, in match_fields.inc: its name ("outer.smac_47_16"), its section, its bit
// offset inside the section counted from the most significant bit of byte 0 (the PRM / DEVX_SET convention)
// and its width. All fields lie inside one big-endian 32-bit word, so a field is read or written with one
// 32-bit load, shift and mask. Bits not covered by any field are reserved.
//
// The same layout is the software NIC's header vector: the packet parser writes each packet's fields at
// these offsets, so a matcher's mask, a rule's value and a packet are compared byte for byte.
//
// Everything here is pure data and inline bit access; no allocation, thread-safe.
#ifndef DRSIM_HW_MATCH_LAYOUT_H_
#define DRSIM_HW_MATCH_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hw/byte_order.h"

namespace drsim::hw {

inline constexpr size_t kMatchParamBytes = 448;
inline constexpr size_t kSectionBytes = 64;
inline constexpr int kNumSections = 7;

// Sections in buffer order; the enumerator value is also the section's bit in match_criteria_enable.
enum class Section : uint8_t { kOuter = 0, kMisc, kInner, kMisc2, kMisc3, kMisc4, kMisc5 };

// match_criteria_enable bits (rdma-core's enum dr_matcher_criteria).
inline constexpr uint8_t kCriteriaOuter = 1 << 0;
inline constexpr uint8_t kCriteriaMisc = 1 << 1;
inline constexpr uint8_t kCriteriaInner = 1 << 2;
inline constexpr uint8_t kCriteriaMisc2 = 1 << 3;
inline constexpr uint8_t kCriteriaMisc3 = 1 << 4;
inline constexpr uint8_t kCriteriaMisc4 = 1 << 5;
inline constexpr uint8_t kCriteriaMisc5 = 1 << 6;
inline constexpr uint8_t kCriteriaAll = 0x7f;

constexpr uint8_t CriteriaBit(Section s) { return uint8_t{1} << static_cast<int>(s); }
constexpr size_t SectionOffset(Section s) { return static_cast<size_t>(s) * kSectionBytes; }
// "outer", "misc", "inner", "misc2", ... as in the field names.
absl::string_view SectionName(Section s);

enum class Field : uint16_t {
#define DRSIM_MATCH_FIELD(id, name, section, bit_offset, width) k##id,
#include "hw/match_fields.inc"
#undef DRSIM_MATCH_FIELD
};

struct FieldInfo {
  absl::string_view name;  // "section.field", e.g. "outer.tcp_dport"
  Section section;
  uint16_t bit_offset;  // inside the section, MSB-first
  uint8_t width;        // 1..32 bits

  // Bit offset from the start of the 448-byte buffer.
  constexpr size_t abs_bit() const { return SectionOffset(section) * 8 + bit_offset; }
  // Byte offset of the big-endian 32-bit word holding the field.
  constexpr size_t word_offset() const { return abs_bit() / 32 * 4; }
  // Right shift that brings the field to bit 0 of that word.
  constexpr int shift() const { return 32 - static_cast<int>(abs_bit() % 32) - width; }
  constexpr uint32_t max_value() const { return width == 32 ? 0xffffffffu : (1u << width) - 1; }
};

inline constexpr FieldInfo kFieldTable[] = {
#define DRSIM_MATCH_FIELD(id, name, section, bit_offset, width) {name, Section::section, bit_offset, width},
#include "hw/match_fields.inc"
#undef DRSIM_MATCH_FIELD
};

inline constexpr size_t kNumFields = sizeof(kFieldTable) / sizeof(kFieldTable[0]);

constexpr const FieldInfo& Info(Field f) { return kFieldTable[static_cast<size_t>(f)]; }
inline absl::Span<const FieldInfo> AllFields() { return kFieldTable; }
constexpr Field FieldAt(size_t index) { return static_cast<Field>(index); }

// The field called `name` ("outer.smac_47_16"), or nullopt.
std::optional<Field> FieldByName(absl::string_view name);

// The field covering bit `abs_bit` of the buffer, or nullopt for a reserved bit.
std::optional<Field> FieldAtBit(size_t abs_bit);

// The name of whatever owns `abs_bit`: a field name, or "<section>.reserved_at_<hex offset>" (PRM naming)
// for a reserved bit.
std::string BitOwnerName(size_t abs_bit);

// A packet's fields in the match layout, as the software NIC's parser fills them.
struct alignas(64) HeaderVector {
  uint8_t bytes[kMatchParamBytes];
};

// Reads a field from a 448-byte buffer in PRM order.
inline uint32_t GetField(const uint8_t* buf, Field f) {
  const FieldInfo& fi = Info(f);
  uint32_t word = LoadBe32(buf + fi.word_offset());
  return (word >> fi.shift()) & fi.max_value();
}

// Writes a field; bits of `value` above the field's width are dropped.
inline void SetField(uint8_t* buf, Field f, uint32_t value) {
  const FieldInfo& fi = Info(f);
  uint8_t* p = buf + fi.word_offset();
  uint32_t mask = fi.max_value() << fi.shift();
  uint32_t word = LoadBe32(p);
  word = (word & ~mask) | ((value << fi.shift()) & mask);
  StoreBe32(p, word);
}

// Sets every bit of a field (the usual mask value).
inline void SetFieldAllOnes(uint8_t* buf, Field f) { SetField(buf, f, Info(f).max_value()); }

}  // namespace drsim::hw

#endif  // DRSIM_HW_MATCH_LAYOUT_H_
