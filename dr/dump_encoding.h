// Internal: the data encodings inside dump records (dr/dump.h), apart from the record formatting.
//
// A matcher mask (record 3205) is printed as rdma-core prints it: each 64-byte section as the bytes of
// its parsed host-layout struct (struct dr_match_spec, dr_match_misc, ... of rdma-core's mlx5dv_dr.h on a
// little-endian host). Those structs declare each 32-bit word's bitfields in PRM order, and the compiler
// allocates them from the least significant bit, so a field at PRM bit offset o (MSB first) inside its
// word, of width w, lands in bits o..o+w-1 of the word, which is then stored little-endian.
//
// A rule entry (records 3303/3304) is drsim's own encoding, since the software NIC has no steering
// entries: see EntryHex. Both are pure functions of their inputs.
#ifndef DRSIM_DR_DUMP_ENCODING_H_
#define DRSIM_DR_DUMP_ENCODING_H_

#include <cstdint>
#include <string>

#include "hw/definer.h"
#include "hw/match_layout.h"

namespace drsim::dr::internal {

// 128 lowercase hex digits: section `section` of `params` (448 bytes, PRM layout) in rdma-core's host
// layout (above). Only named fields are carried; reserved bits read as zero.
std::string HostLayoutSectionHex(const uint8_t* params, hw::Section section);

// The first byte of every drsim rule entry. It is not a ConnectX STE entry format (those are 0..7), so
// mlx_steering_dump reports the entry as unsupported instead of decoding it as a hardware STE.
inline constexpr uint8_t kEntryMarker = 0xd5;
inline constexpr uint8_t kEntryVersion = 1;

// The hex of a rule's entry in its matcher's hashed match table (big-endian fields):
//   byte 0: kEntryMarker; byte 1: kEntryVersion; bytes 2-3: n, the number of key words;
//   then n times: 2 bytes, the byte offset in the 448-byte match layout of the word the definer loads,
//   and 4 bytes, the key word (the rule's value masked, as the bytes lie in the layout).
// `key` holds definer.key_words() words, as hw::Definer::Extract writes them.
std::string EntryHex(const hw::Definer& definer, const uint32_t* key);

}  // namespace drsim::dr::internal

#endif  // DRSIM_DR_DUMP_ENCODING_H_
