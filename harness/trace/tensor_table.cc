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

void PutBigEndian(uint64_t v, uint8_t* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(v & 0xff);
    v >>= 8;
  }
}

uint64_t GetBigEndian(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | in[i];
  return v;
}

}  // namespace

void AppendTensorTable(const std::vector<TensorRecord>& tensors, std::string& out) {
  const size_t first = out.size();
  out.resize(first + tensors.size() * kTensorTableEntryChars);
  char* o = out.data() + first;
  uint8_t bytes[kTensorTableEntryBytes];
  for (const TensorRecord& t : tensors) {
    PutBigEndian(t.digest.high, bytes);
    PutBigEndian(t.digest.low, bytes + 8);
    uint64_t norm_bits;
    static_assert(sizeof(norm_bits) == sizeof(t.norm));
    std::memcpy(&norm_bits, &t.norm, sizeof(norm_bits));
    PutBigEndian(norm_bits, bytes + 16);
    for (size_t i = 0; i < kTensorTableEntryBytes; i += 3) {
      const uint32_t v = (uint32_t{bytes[i]} << 16) | (uint32_t{bytes[i + 1]} << 8) | bytes[i + 2];
      *o++ = kAlphabet[(v >> 18) & 63];
      *o++ = kAlphabet[(v >> 12) & 63];
      *o++ = kAlphabet[(v >> 6) & 63];
      *o++ = kAlphabet[v & 63];
    }
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
