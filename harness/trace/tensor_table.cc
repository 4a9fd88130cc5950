#include "harness/trace/tensor_table.h"

#include <array>
#include <cstdint>
#include <cstring>

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

void AppendTensorTable(const std::vector<TensorRecord>& tensors, std::string& out) {
  const size_t first = out.size();
  out.resize(first + tensors.size() * kTensorTableEntryChars);
  char* o = out.data() + first;
  for (const TensorRecord& t : tensors) {
    uint64_t norm_bits;
    static_assert(sizeof(norm_bits) == sizeof(t.norm));
    std::memcpy(&norm_bits, &t.norm, sizeof(norm_bits));
    PutPairs(t.digest.high, t.digest.low, norm_bits, o);
    o += kTensorTableEntryChars;
  }
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
