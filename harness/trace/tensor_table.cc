#include "harness/trace/tensor_table.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace lockstep {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// Character -> its 6 bits; 0xff for a character outside the alphabet.
constexpr std::array<uint8_t, 256> MakeDecodeTable() {
  std::array<uint8_t, 256> t{};
  for (auto& v : t) v = 0xff;
  for (uint8_t i = 0; i < 64; ++i) t[static_cast<unsigned char>(kAlphabet[i])] = i;
  return t;
}
constexpr std::array<uint8_t, 256> kDecode = MakeDecodeTable();

uint64_t GetBigEndian(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | in[i];
  return v;
}

// Two base64 characters for each 12-bit value: a table entry of 24 bytes is 16 lookups.
struct PairTable {
  char pairs[4096][2];
  constexpr PairTable() : pairs() {
    for (int v = 0; v < 4096; ++v) {
      pairs[v][0] = kAlphabet[v >> 6];
      pairs[v][1] = kAlphabet[v & 63];
    }
  }
};
constexpr PairTable kPairs;

// 64 bits of `v`, high first, as the next characters: the 192 bits of an entry are its three
// words one after the other, cut into 16 pieces of 12 bits.
inline void PutPairs(uint64_t a, uint64_t b, uint64_t c, char* o) {
  const uint64_t w[3] = {a, b, c};
  for (int k = 0; k < 16; ++k) {
    const int bit = 12 * k;  // of the 192, from the top
    const int word = bit / 64, off = bit % 64;
    uint64_t v = (w[word] << off) >> 52;
    if (off > 52) v |= w[word + 1] >> (116 - off);
    std::memcpy(o + 2 * k, kPairs.pairs[v & 0xfff], 2);
  }
}

}  // namespace

namespace {

void WriteTensorTablePortable(const std::vector<TensorRecord>& tensors, char* o) {
  for (const TensorRecord& t : tensors) {
    uint64_t norm_bits;
    static_assert(sizeof(norm_bits) == sizeof(t.norm));
    std::memcpy(&norm_bits, &t.norm, sizeof(norm_bits));
    PutPairs(t.digest.high, t.digest.low, norm_bits, o);
    o += kTensorTableEntryChars;
  }
}

}  // namespace

void AppendTensorTablePortable(const std::vector<TensorRecord>& tensors, std::string& out) {
  const size_t first = out.size();
  out.resize(first + tensors.size() * kTensorTableEntryChars);
  WriteTensorTablePortable(tensors, out.data() + first);
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

// 12 bytes (the first 12 of `in`) as 16 base64 characters: each 3 bytes spread into 4 bytes of 6
// bits, then each 6-bit value moved to its character by adding the offset of its range of the
// alphabet (A-Z, a-z, 0-9, +, /), chosen with one in-register table lookup (W. Mula and D. Lemire,
// "Faster Base64 Encoding and Decoding Using AVX2 Instructions", 2018, the SSSE3 form).
__attribute__((target("ssse3"))) inline __m128i Base64Of12Bytes(__m128i in) {
  in = _mm_shuffle_epi8(in, _mm_set_epi8(10, 11, 9, 10, 7, 8, 6, 7, 4, 5, 3, 4, 1, 2, 0, 1));
  const __m128i t0 = _mm_and_si128(in, _mm_set1_epi32(0x0fc0fc00));
  const __m128i t1 = _mm_mulhi_epu16(t0, _mm_set1_epi32(0x04000040));
  const __m128i t2 = _mm_and_si128(in, _mm_set1_epi32(0x003f03f0));
  const __m128i t3 = _mm_mullo_epi16(t2, _mm_set1_epi32(0x01000010));
  const __m128i indices = _mm_or_si128(t1, t3);
  // The range of each value: 0-25 (A-Z) 0, 26-51 (a-z) 1, 52-61 (0-9) 2-11, 62 (+) 12, 63 (/) 13.
  __m128i range = _mm_subs_epu8(indices, _mm_set1_epi8(51));
  range = _mm_sub_epi8(range, _mm_cmpgt_epi8(indices, _mm_set1_epi8(25)));
  const __m128i offsets = _mm_setr_epi8('A', 'a' - 26, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52, '0' - 52,
                                        '0' - 52, '0' - 52, '0' - 52, '0' - 52, '+' - 62, '/' - 63, 0, 0);
  return _mm_add_epi8(_mm_shuffle_epi8(offsets, range), indices);
}

__attribute__((target("ssse3"))) void WriteTensorTableSsse3(const std::vector<TensorRecord>& tensors, char* o) {
  static_assert(sizeof(Digest128) == 16 && offsetof(Digest128, high) == 0 && offsetof(Digest128, low) == 8,
                "the digest is two words, high first: loaded as they are");
  // Each 64-bit word's bytes reversed in place: the entry's words are big-endian.
  const __m128i reverse_words = _mm_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
  for (const TensorRecord& t : tensors) {
    // The entry's 24 bytes built in registers: bytes 0-15 the digest, 16-23 the norm. Stored to
    // the stack and loaded as 16 bytes from there, they were two store-forwarding stalls an entry.
    const __m128i digest =
        _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(&t.digest)), reverse_words);
    const __m128i norm = _mm_shuffle_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(&t.norm)), reverse_words);
    const __m128i a = Base64Of12Bytes(digest);                              // bytes 0-11
    const __m128i b = Base64Of12Bytes(_mm_alignr_epi8(norm, digest, 12));  // bytes 12-23
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + 16), b);
    o += kTensorTableEntryChars;
  }
}

}  // namespace

void WriteTensorTable(const std::vector<TensorRecord>& tensors, char* out) {
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  if (ssse3) {
    WriteTensorTableSsse3(tensors, out);
  } else {
    WriteTensorTablePortable(tensors, out);
  }
}
#else
void WriteTensorTable(const std::vector<TensorRecord>& tensors, char* out) { WriteTensorTablePortable(tensors, out); }
#endif

void AppendTensorTable(const std::vector<TensorRecord>& tensors, std::string& out) {
  const size_t first = out.size();
  out.resize(first + tensors.size() * kTensorTableEntryChars);
  WriteTensorTable(tensors, out.data() + first);
}

std::optional<std::string> ReadTensorTable(std::string_view table, std::vector<TensorRecord>& tensors) {
  if (table.size() != tensors.size() * kTensorTableEntryChars) {
    return "tensor table of " + std::to_string(table.size()) + " characters for " + std::to_string(tensors.size()) +
           " tensors (" + std::to_string(kTensorTableEntryChars) + " per tensor)";
  }
  // Decode everything first, so that a bad character leaves the tensors unchanged.
  std::vector<uint8_t> bytes(tensors.size() * kTensorTableEntryBytes);
  uint8_t* b = bytes.data();
  for (size_t i = 0; i < table.size(); i += 4) {
    const uint8_t c0 = kDecode[static_cast<unsigned char>(table[i])];
    const uint8_t c1 = kDecode[static_cast<unsigned char>(table[i + 1])];
    const uint8_t c2 = kDecode[static_cast<unsigned char>(table[i + 2])];
    const uint8_t c3 = kDecode[static_cast<unsigned char>(table[i + 3])];
    if ((c0 | c1 | c2 | c3) & 0xc0) {
      return "tensor table: character " + std::to_string(i + 1) + " to " + std::to_string(i + 4) + " is not base64";
    }
    const uint32_t v = (uint32_t{c0} << 18) | (uint32_t{c1} << 12) | (uint32_t{c2} << 6) | c3;
    *b++ = static_cast<uint8_t>(v >> 16);
    *b++ = static_cast<uint8_t>(v >> 8);
    *b++ = static_cast<uint8_t>(v);
  }
  for (size_t t = 0; t < tensors.size(); ++t) {
    const uint8_t* e = bytes.data() + t * kTensorTableEntryBytes;
    tensors[t].digest.high = GetBigEndian(e);
    tensors[t].digest.low = GetBigEndian(e + 8);
    const uint64_t norm_bits = GetBigEndian(e + 16);
    std::memcpy(&tensors[t].norm, &norm_bits, sizeof(norm_bits));
  }
  return std::nullopt;
}

}  // namespace lockstep
