#include "dr/dump_encoding.h"

#include <cstring>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"

namespace drsim::dr::internal {
namespace {

constexpr size_t kWordsPerSection = hw::kSectionBytes / 4;

void AppendBe16(std::string& bytes, uint16_t v) {
  bytes.push_back(static_cast<char>(v >> 8));
  bytes.push_back(static_cast<char>(v & 0xff));
}

}  // namespace

std::string HostLayoutSectionHex(const uint8_t* params, hw::Section section) {
  uint32_t words[kWordsPerSection] = {};
  for (size_t i = 0; i < hw::kNumFields; ++i) {
    const hw::FieldInfo& fi = hw::kFieldTable[i];
    if (fi.section != section) continue;
    words[fi.bit_offset / 32] |= hw::GetField(params, hw::FieldAt(i)) << (fi.bit_offset % 32);
  }
  std::string bytes;
  bytes.reserve(hw::kSectionBytes);
  for (uint32_t w : words) {
    for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((w >> (8 * b)) & 0xff));  // little-endian
  }
  return absl::BytesToHexString(bytes);
}

std::string EntryHex(const hw::Definer& definer, const uint32_t* key) {
  const std::vector<size_t> offsets = definer.word_offsets();
  std::string bytes;
  bytes.reserve(4 + 6 * offsets.size());
  bytes.push_back(static_cast<char>(kEntryMarker));
  bytes.push_back(static_cast<char>(kEntryVersion));
  AppendBe16(bytes, static_cast<uint16_t>(offsets.size()));
  for (size_t i = 0; i < offsets.size(); ++i) {
    AppendBe16(bytes, static_cast<uint16_t>(offsets[i]));
    char word[4];
    std::memcpy(word, &key[i], sizeof word);  // the layout's bytes, in memory order
    bytes.append(word, sizeof word);
  }
  return absl::BytesToHexString(bytes);
}

}  // namespace drsim::dr::internal
