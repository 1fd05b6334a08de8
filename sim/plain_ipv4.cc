#include "sim/plain_ipv4.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <tmmintrin.h>
#endif

namespace drsim::sim {
namespace {

using hw::Field;
using hw::Info;

// A byte copied whole from frame byte `at`, whatever the protocol.
constexpr PlainByte Whole(size_t at) { return {static_cast<uint8_t>(at), 0xff, 0xff, 0}; }

// The byte of its word (memory order) that holds bit `bit` (0: the least significant) of the host-order word.
constexpr size_t ByteHolding(int bit) { return 3 - static_cast<size_t>(bit) / 8; }

// Fields copied whole from a frame byte sit on byte boundaries.
static_assert(Info(Field::kOuterDmac15_0).shift() == 16 && Info(Field::kOuterDmac15_0).width == 16);
static_assert(Info(Field::kOuterIpProtocol).shift() % 8 == 0 && Info(Field::kOuterIpProtocol).width == 8);
static_assert(Info(Field::kOuterIpEcn).shift() % 8 == 0 &&  // DSCP and ECN: the TOS byte
              Info(Field::kOuterIpDscp).shift() == Info(Field::kOuterIpEcn).shift() + 2);
static_assert(Info(Field::kOuterTcpFlags).shift() % 8 == 0 && Info(Field::kOuterTcpFlags).width == 9);
static_assert(Info(Field::kOuterIpTtlHoplimit).shift() % 8 == 0 &&
              Info(Field::kOuterIpTtlHoplimit).width == 8);
static_assert(Info(Field::kOuterTcpSport).shift() == 16 && Info(Field::kOuterTcpDport).shift() == 0 &&
              Info(Field::kOuterTcpDport).word_offset() == Info(Field::kOuterTcpSport).word_offset());
static_assert(Info(Field::kOuterUdpSport).shift() == 16 && Info(Field::kOuterUdpDport).shift() == 0 &&
              Info(Field::kOuterUdpDport).word_offset() == Info(Field::kOuterUdpSport).word_offset());
static_assert(Info(Field::kSourcePort).shift() == 0 && Info(Field::kSourcePort).width == 16);

// Four frame bytes from `at` as they are, kept in TCP frames, UDP frames or both.
PlainWordBytes FrameBytes(size_t at, uint8_t tcp_mask, uint8_t udp_mask) {
  PlainWordBytes w;
  for (size_t i = 0; i < 4; ++i) w[i] = {static_cast<uint8_t>(at + i), tcp_mask, udp_mask, 0};
  return w;
}

// ORs the constant `value` of field `f` into `w`.
void SetConstant(PlainWordBytes& w, Field f, uint32_t value) {
  const uint32_t placed = value << Info(f).shift();
  for (size_t i = 0; i < 4; ++i) w[i].constant |= static_cast<uint8_t>(placed >> (24 - 8 * i));
}

// The OR of two words' bytes into `a`; false when a byte would need two different sources.
bool FoldInto(PlainWordBytes& a, const PlainWordBytes& b) {
  for (size_t i = 0; i < 4; ++i) {
    PlainByte& x = a[i];
    const PlainByte& y = b[i];
    if (x.from == kPlainNothing) {
      x = {y.from, y.tcp_mask, y.udp_mask, static_cast<uint8_t>(x.constant | y.constant)};
    } else if (y.from == kPlainNothing || y.from == x.from) {
      if (y.from != kPlainNothing) {
        x.tcp_mask |= y.tcp_mask;
        x.udp_mask |= y.udp_mask;
      }
      x.constant |= y.constant;
    } else {
      return false;
    }
  }
  return true;
}

bool CpuHasByteShuffle() {
#if defined(__x86_64__)
  return __builtin_cpu_supports("ssse3");
#else
  return false;
#endif
}

}  // namespace

PlainWordBytes PlainBytesOf(PlainWord w) {
  constexpr size_t kIp = kPlainL3, kL4 = kPlainL4;
  PlainWordBytes bytes;
  switch (w.source) {
    case PlainSource::kZero:
      return bytes;
    case PlainSource::kBytes:
      return FrameBytes(w.at, 0xff, 0xff);
    case PlainSource::kDmacLow:  // then the VLAN fields: no tag
      bytes[0] = Whole(4);
      bytes[1] = Whole(5);
      return bytes;
    case PlainSource::kIpWord: {
      const int flags = Info(Field::kOuterTcpFlags).shift();
      bytes[ByteHolding(Info(Field::kOuterIpProtocol).shift())] = Whole(kIp + 9);
      bytes[ByteHolding(Info(Field::kOuterIpEcn).shift())] = Whole(kIp + 1);
      bytes[ByteHolding(flags)] = {static_cast<uint8_t>(kL4 + 13), 0xff, 0, 0};      // flags 7..0, TCP only
      bytes[ByteHolding(flags + 8)] = {static_cast<uint8_t>(kL4 + 12), 0x01, 0, 0};  // flag 8 (NS)
      SetConstant(bytes, Field::kOuterIpVersion, 4);
      return bytes;
    }
    case PlainSource::kTtlWord:
      bytes[ByteHolding(Info(Field::kOuterIpTtlHoplimit).shift())] = Whole(kIp + 8);
      SetConstant(bytes, Field::kOuterIpv4Ihl, 5);
      return bytes;
    case PlainSource::kTcpPorts:
      return FrameBytes(kL4, 0xff, 0);
    case PlainSource::kUdpPorts:
      return FrameBytes(kL4, 0, 0xff);
    case PlainSource::kSourcePort:
      bytes[2] = Whole(kPlainSourcePortHigh);
      bytes[3] = Whole(kPlainSourcePortLow);
      return bytes;
  }
  return bytes;
}

PlainIpv4KeyReader::PlainIpv4KeyReader(bool byte_shuffle)
    : byte_shuffle_(byte_shuffle && CpuHasByteShuffle()) {
  Compile({});  // the empty definer's key, which prepared_ starts with
}

bool PlainIpv4KeyReader::Prepare(absl::Span<const hw::Definer::Word> key_words) {
  const size_t n = key_words.size();
  if (n > kMaxWords) return false;
  static_assert(sizeof(hw::Definer::Word) == 2 * sizeof(uint32_t), "compared with memcmp: no padding");
  if (n == prepared_words_ &&
      std::memcmp(key_words.data(), prepared_.data(), n * sizeof(hw::Definer::Word)) == 0) {
    return prepared_ok_;
  }
  std::copy(key_words.begin(), key_words.end(), prepared_.begin());
  std::array<PlainWordBytes, kMaxWords> words;
  bool ok = std::all_of(key_words.begin(), key_words.end(),
                        [](const hw::Definer::Word& w) { return w.ReadsOnly(FilledByOuterParse); });
  for (size_t i = 0; i < n && ok; ++i) {
    const hw::Definer::Word d = prepared_[i];
    words[i] = PlainBytesOf(PlainWordAt(d.offset));
    if (d.fold_from != d.offset) ok = FoldInto(words[i], PlainBytesOf(PlainWordAt(d.fold_from)));
    uint8_t mask[4];
    std::memcpy(mask, &d.mask, sizeof mask);  // network order, as the word lies in memory
    for (size_t b = 0; b < 4; ++b) {
      PlainByte& byte = words[i][b];
      byte.tcp_mask &= mask[b];
      byte.udp_mask &= mask[b];
      byte.constant &= mask[b];
      if ((byte.tcp_mask | byte.udp_mask) == 0) byte.from = kPlainNothing;
    }
  }
  if (ok) Compile({words.data(), n});
  prepared_words_ = n;
  prepared_ok_ = ok;
  return ok;
}

void PlainIpv4KeyReader::Compile(absl::Span<const PlainWordBytes> words) {
  words_ = words.size();
  std::memset(shuffle_, 0x80, sizeof shuffle_);
  std::memset(mask_, 0, sizeof mask_);
  std::memset(constant_, 0, sizeof constant_);
  std::memset(from_, kPlainNothing, sizeof from_);
  for (size_t i = 0; i < words_ * 4; ++i) {
    const PlainByte& b = words[i / 4][i % 4];
    from_[i] = b.from;
    mask_[0][i] = b.tcp_mask;
    mask_[1][i] = b.udp_mask;
    const bool after_ip = b.from >= kPlainL4 && b.from < kPlainHeaderBytes;
    mask_[2][i] = after_ip ? 0 : static_cast<uint8_t>(b.tcp_mask & b.udp_mask);
    constant_[i] = b.constant;
    if (b.from != kPlainNothing) shuffle_[i / 16][b.from / 16][i % 16] = b.from % 16;
  }
}

uint64_t PlainIpv4KeyReader::ReadBurst(const absl::Span<const uint8_t>* frames, size_t n,
                                       uint16_t source_port, uint32_t* keys) const {
  return byte_shuffle_ ? ReadBurstShuffled(frames, n, source_port, keys)
                       : ReadBurstPortable(frames, n, source_port, keys);
}

uint64_t PlainIpv4KeyReader::ReadBurstPortable(const absl::Span<const uint8_t>* frames, size_t n,
                                               uint16_t source_port, uint32_t* keys) const {
  const size_t bytes = words_ * 4;
  uint8_t input[kInputBlocks * 16] = {};
  input[kPlainSourcePortHigh] = static_cast<uint8_t>(source_port >> 8);
  input[kPlainSourcePortLow] = static_cast<uint8_t>(source_port);
  uint64_t plain = 0;
  for (size_t j = 0; j < n; ++j) {
    const uint8_t* frame = frames[j].data();
    const size_t len = frames[j].size();
    if (!IsPlainIpv4Frame(frame, len)) continue;
    const size_t copied = std::min(len, kPlainHeaderBytes);
    std::memcpy(input, frame, copied);
    std::memset(input + copied, 0, kPlainHeaderBytes - copied);
    const uint8_t* mask = mask_[PlainProtocolRow(frame)];
    uint8_t* key = reinterpret_cast<uint8_t*>(keys) + j * bytes;
    for (size_t i = 0; i < bytes; ++i)
      key[i] = static_cast<uint8_t>((input[from_[i]] & mask[i]) | constant_[i]);
    plain |= uint64_t{1} << j;
  }
  return plain;
}

#if defined(__x86_64__)
__attribute__((target("ssse3"))) uint64_t PlainIpv4KeyReader::ReadBurstShuffled(
    const absl::Span<const uint8_t>* frames, size_t n, uint16_t source_port, uint32_t* keys) const {
  auto at = [](const uint8_t* p) { return _mm_load_si128(reinterpret_cast<const __m128i*>(p)); };
  const size_t bytes = words_ * 4;
  const size_t blocks = (bytes + 15) / 16;
  const size_t tail = bytes - (blocks == 0 ? 0 : (blocks - 1) * 16);  // bytes in the last block: 4 to 16
  const __m128i port = _mm_cvtsi32_si128((source_port >> 8) | (source_port & 0xff) << 8);
  uint64_t plain = 0;
  for (size_t j = 0; j < n; ++j) {
    const uint8_t* frame = frames[j].data();
    const size_t len = frames[j].size();
    if (!IsPlainIpv4Frame(frame, len)) continue;
    alignas(16) uint8_t copy[kPlainHeaderBytes];
    if (len < kPlainHeaderBytes) {  // the blocks below would load past its end
      std::memcpy(copy, frame, len);
      std::memset(copy + len, 0, kPlainHeaderBytes - len);
      frame = copy;
    }
    static_assert(kPlainHeaderBytes == 48);
    const __m128i in0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(frame));
    const __m128i in1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(frame + 16));
    const __m128i in2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(frame + 32));
    const uint8_t* mask = mask_[PlainProtocolRow(frame)];
    uint8_t* key = reinterpret_cast<uint8_t*>(keys) + j * bytes;
    for (size_t b = 0; b < blocks; ++b) {
      const __m128i picked = _mm_or_si128(
          _mm_or_si128(_mm_shuffle_epi8(in0, at(shuffle_[b][0])), _mm_shuffle_epi8(in1, at(shuffle_[b][1]))),
          _mm_or_si128(_mm_shuffle_epi8(in2, at(shuffle_[b][2])),
                       _mm_shuffle_epi8(port, at(shuffle_[b][3]))));
      const __m128i v = _mm_or_si128(_mm_and_si128(picked, at(mask + 16 * b)), at(constant_ + 16 * b));
      uint8_t* out = key + 16 * b;
      const size_t left = b + 1 < blocks ? 16 : tail;
      if (left == 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out), v);
        continue;
      }
      if (left >= 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(out), v);
      if (left % 8 != 0) {
        const int word = _mm_cvtsi128_si32(left > 8 ? _mm_srli_si128(v, 8) : v);
        std::memcpy(out + (left & 8), &word, sizeof word);
      }
    }
    plain |= uint64_t{1} << j;
  }
  return plain;
}
#else
uint64_t PlainIpv4KeyReader::ReadBurstShuffled(const absl::Span<const uint8_t>* frames, size_t n,
                                               uint16_t source_port, uint32_t* keys) const {
  return ReadBurstPortable(frames, n, source_port, keys);  // no byte shuffle: CpuHasByteShuffle() is false
}
#endif

}  // namespace drsim::sim
