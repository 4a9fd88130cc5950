// XXH3-128 of xxHash 0.8 (default secret, optional seed), ported to functions that compile both
// as plain host C++ and as CUDA device code, so the GPU digest kernel and a CPU test share every
// line of the hash. The CPU side of lockstep keeps using libxxhash (harness/trace/digest.cc); this
// port exists for the GPU, and digest_kernel_test.cc pins it to libxxhash's XXH3_128bits on the
// CPU, which is what proves the kernel bit-identical on a machine without a GPU.
//
// The long-input path (> 240 bytes) is written the way the kernel runs it: XXH3 feeds 64-byte
// stripes into 8 accumulator lanes with additions only, and scrambles the lanes once per
// 1024-byte block. Additions modulo 2^64 can be regrouped, so the 16 stripe contributions of a
// block are summed first (in parallel, in any order), and only the per-block "add the sum, then
// scramble" step is sequential, lane by lane. HashLong128 does exactly that, sequentially.
//
// Reads are bytewise little-endian, so the port is right on any host and for any alignment; the
// kernel's hot loop supplies its own (vector) loads through BlockPairSum's loader.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define LOCKSTEP_HD __host__ __device__ __forceinline__
#else
#define LOCKSTEP_HD inline
#endif

namespace lockstep {
namespace xxh3 {

struct Hash128 {
  uint64_t low;
  uint64_t high;
};

// A pair of adjacent accumulator lanes (2p, 2p+1): the unit one GPU thread owns in a block.
struct LanePair {
  uint64_t lo;
  uint64_t hi;
};

constexpr uint32_t kPrime32_1 = 0x9E3779B1U;
constexpr uint32_t kPrime32_2 = 0x85EBCA77U;
constexpr uint32_t kPrime32_3 = 0xC2B2AE3DU;
constexpr uint64_t kPrime64_1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime64_3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime64_4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime64_5 = 0x27D4EB2F165667C5ULL;

constexpr size_t kSecretSize = 192;        // XXH3_SECRET_DEFAULT_SIZE
constexpr size_t kSecretSizeMin = 136;     // XXH3_SECRET_SIZE_MIN
constexpr size_t kStripeLen = 64;          // XXH_STRIPE_LEN
constexpr size_t kSecretConsumeRate = 8;   // XXH_SECRET_CONSUME_RATE
constexpr size_t kStripesPerBlock = (kSecretSize - kStripeLen) / kSecretConsumeRate;  // 16
constexpr size_t kBlockLen = kStripeLen * kStripesPerBlock;                          // 1024
constexpr size_t kMidSizeMax = 240;        // XXH3_MIDSIZE_MAX
constexpr size_t kMidSizeStartOffset = 3;
constexpr size_t kMidSizeLastOffset = 17;
constexpr size_t kSecretLastAccStart = 7;
constexpr size_t kSecretMergeAccsStart = 11;
// Secret words (8-byte aligned offsets) the accumulate step of a full block reads: stripe s,
// lane i uses word s + i, so words 0 .. 15 + 7.
constexpr size_t kBlockKeyWords = kStripesPerBlock + 7;

// XXH3_kSecret, the pseudorandom default secret taken from FARSH.
#define LOCKSTEP_XXH3_SECRET_BYTES                                                                  \
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c, \
      0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67,   \
      0x1f, 0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff,   \
      0x72, 0x21, 0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81,   \
      0x3a, 0x26, 0x4c, 0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b,   \
      0x1b, 0x53, 0x2e, 0xa3, 0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef,   \
      0x46, 0xa9, 0xde, 0xac, 0xd8, 0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc,   \
      0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d, 0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8,   \
      0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64, 0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3,   \
      0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb, 0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda,   \
      0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e, 0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47,   \
      0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce, 0x45, 0xcb, 0x3a, 0x8f, 0x95,   \
      0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e

// Device code cannot read a host array, so the secret exists once per side.
#if defined(__CUDACC__)
static __constant__ const uint8_t kSecretDevice[kSecretSize] = {LOCKSTEP_XXH3_SECRET_BYTES};
#endif
alignas(64) inline constexpr uint8_t kSecretHost[kSecretSize] = {LOCKSTEP_XXH3_SECRET_BYTES};

LOCKSTEP_HD const uint8_t* DefaultSecret() {
#if defined(__CUDA_ARCH__)
  return kSecretDevice;
#else
  return kSecretHost;
#endif
}

LOCKSTEP_HD uint32_t ReadLE32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

LOCKSTEP_HD uint64_t ReadLE64(const uint8_t* p) {
  return static_cast<uint64_t>(ReadLE32(p)) | (static_cast<uint64_t>(ReadLE32(p + 4)) << 32);
}

LOCKSTEP_HD void WriteLE64(uint8_t* p, uint64_t v) {
  for (int b = 0; b < 8; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

LOCKSTEP_HD uint32_t Rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
LOCKSTEP_HD uint64_t Rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

LOCKSTEP_HD uint32_t Swap32(uint32_t x) {
  return ((x << 24) & 0xff000000U) | ((x << 8) & 0x00ff0000U) | ((x >> 8) & 0x0000ff00U) | ((x >> 24) & 0x000000ffU);
}

LOCKSTEP_HD uint64_t Swap64(uint64_t x) {
  return (static_cast<uint64_t>(Swap32(static_cast<uint32_t>(x))) << 32) | Swap32(static_cast<uint32_t>(x >> 32));
}

LOCKSTEP_HD uint64_t Mult32to64(uint64_t x, uint64_t y) {
  return static_cast<uint64_t>(static_cast<uint32_t>(x)) * static_cast<uint64_t>(static_cast<uint32_t>(y));
}

LOCKSTEP_HD Hash128 Mult64to128(uint64_t lhs, uint64_t rhs) {
#if defined(__CUDA_ARCH__)
  return Hash128{lhs * rhs, __umul64hi(lhs, rhs)};
#elif defined(__SIZEOF_INT128__)
  const unsigned __int128 product = static_cast<unsigned __int128>(lhs) * rhs;
  return Hash128{static_cast<uint64_t>(product), static_cast<uint64_t>(product >> 64)};
#else
  const uint64_t lo_lo = Mult32to64(lhs & 0xFFFFFFFF, rhs & 0xFFFFFFFF);
  const uint64_t hi_lo = Mult32to64(lhs >> 32, rhs & 0xFFFFFFFF);
  const uint64_t lo_hi = Mult32to64(lhs & 0xFFFFFFFF, rhs >> 32);
  const uint64_t hi_hi = Mult32to64(lhs >> 32, rhs >> 32);
  const uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFF) + lo_hi;
  const uint64_t upper = (hi_lo >> 32) + (cross >> 32) + hi_hi;
  const uint64_t lower = (cross << 32) | (lo_lo & 0xFFFFFFFF);
  return Hash128{lower, upper};
#endif
}

LOCKSTEP_HD uint64_t Mul128Fold64(uint64_t lhs, uint64_t rhs) {
  const Hash128 p = Mult64to128(lhs, rhs);
  return p.low ^ p.high;
}

LOCKSTEP_HD uint64_t XorShift64(uint64_t v, int shift) { return v ^ (v >> shift); }

// XXH64_avalanche.
LOCKSTEP_HD uint64_t Xxh64Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  h ^= h >> 32;
  return h;
}

// XXH3_avalanche.
LOCKSTEP_HD uint64_t Avalanche(uint64_t h) {
  h = XorShift64(h, 37);
  h *= 0x165667919E3779F9ULL;
  h = XorShift64(h, 32);
  return h;
}

LOCKSTEP_HD uint64_t Mix16B(const uint8_t* input, const uint8_t* secret, uint64_t seed) {
  const uint64_t input_lo = ReadLE64(input);
  const uint64_t input_hi = ReadLE64(input + 8);
  return Mul128Fold64(input_lo ^ (ReadLE64(secret) + seed), input_hi ^ (ReadLE64(secret + 8) - seed));
}

// ---- Short inputs (0 .. 240 bytes) ----

LOCKSTEP_HD Hash128 Len1To3(const uint8_t* input, size_t len, const uint8_t* secret, uint64_t seed) {
  const uint8_t c1 = input[0];
  const uint8_t c2 = input[len >> 1];
  const uint8_t c3 = input[len - 1];
  const uint32_t combinedl = (static_cast<uint32_t>(c1) << 16) | (static_cast<uint32_t>(c2) << 24) |
                             (static_cast<uint32_t>(c3) << 0) | (static_cast<uint32_t>(len) << 8);
  const uint32_t combinedh = Rotl32(Swap32(combinedl), 13);
  const uint64_t bitflipl = (ReadLE32(secret) ^ ReadLE32(secret + 4)) + seed;
  const uint64_t bitfliph = (ReadLE32(secret + 8) ^ ReadLE32(secret + 12)) - seed;
  const uint64_t keyed_lo = static_cast<uint64_t>(combinedl) ^ bitflipl;
  const uint64_t keyed_hi = static_cast<uint64_t>(combinedh) ^ bitfliph;
  return Hash128{Xxh64Avalanche(keyed_lo), Xxh64Avalanche(keyed_hi)};
}

LOCKSTEP_HD Hash128 Len4To8(const uint8_t* input, size_t len, const uint8_t* secret, uint64_t seed) {
  seed ^= static_cast<uint64_t>(Swap32(static_cast<uint32_t>(seed))) << 32;
  const uint32_t input_lo = ReadLE32(input);
  const uint32_t input_hi = ReadLE32(input + len - 4);
  const uint64_t input_64 = input_lo + (static_cast<uint64_t>(input_hi) << 32);
  const uint64_t bitflip = (ReadLE64(secret + 16) ^ ReadLE64(secret + 24)) + seed;
  const uint64_t keyed = input_64 ^ bitflip;
  // len << 2 keeps the added term even, so the multiplier stays odd (upstream's note).
  Hash128 m = Mult64to128(keyed, kPrime64_1 + (static_cast<uint64_t>(len) << 2));
  m.high += (m.low << 1);
  m.low ^= (m.high >> 3);
  m.low = XorShift64(m.low, 35);
  m.low *= 0x9FB21C651E98DF25ULL;
  m.low = XorShift64(m.low, 28);
  m.high = Avalanche(m.high);
  return m;
}

LOCKSTEP_HD Hash128 Len9To16(const uint8_t* input, size_t len, const uint8_t* secret, uint64_t seed) {
  const uint64_t bitflipl = (ReadLE64(secret + 32) ^ ReadLE64(secret + 40)) - seed;
  const uint64_t bitfliph = (ReadLE64(secret + 48) ^ ReadLE64(secret + 56)) + seed;
  const uint64_t input_lo = ReadLE64(input);
  uint64_t input_hi = ReadLE64(input + len - 8);
  Hash128 m = Mult64to128(input_lo ^ input_hi ^ bitflipl, kPrime64_1);
  m.low += static_cast<uint64_t>(len - 1) << 54;
  input_hi ^= bitfliph;
  // Upstream's 64-bit form of m.high += (input_hi & ~0xFFFFFFFF) + input_hi.lo32 * PRIME32_2.
  m.high += input_hi + Mult32to64(static_cast<uint32_t>(input_hi), kPrime32_2 - 1);
  m.low ^= Swap64(m.high);
  Hash128 h = Mult64to128(m.low, kPrime64_2);
  h.high += m.high * kPrime64_2;
  h.low = Avalanche(h.low);
  h.high = Avalanche(h.high);
  return h;
}

LOCKSTEP_HD Hash128 Len0To16(const uint8_t* input, size_t len, const uint8_t* secret, uint64_t seed) {
  if (len > 8) return Len9To16(input, len, secret, seed);
  if (len >= 4) return Len4To8(input, len, secret, seed);
  if (len > 0) return Len1To3(input, len, secret, seed);
  const uint64_t bitflipl = ReadLE64(secret + 64) ^ ReadLE64(secret + 72);
  const uint64_t bitfliph = ReadLE64(secret + 80) ^ ReadLE64(secret + 88);
  return Hash128{Xxh64Avalanche(seed ^ bitflipl), Xxh64Avalanche(seed ^ bitfliph)};
}

LOCKSTEP_HD Hash128 Mix32B(Hash128 acc, const uint8_t* input_1, const uint8_t* input_2, const uint8_t* secret,
                           uint64_t seed) {
  acc.low += Mix16B(input_1, secret + 0, seed);
  acc.low ^= ReadLE64(input_2) + ReadLE64(input_2 + 8);
  acc.high += Mix16B(input_2, secret + 16, seed);
  acc.high ^= ReadLE64(input_1) + ReadLE64(input_1 + 8);
  return acc;
}

LOCKSTEP_HD Hash128 FinishMid(Hash128 acc, size_t len, uint64_t seed) {
  Hash128 h;
  h.low = acc.low + acc.high;
  h.high = (acc.low * kPrime64_1) + (acc.high * kPrime64_4) + ((static_cast<uint64_t>(len) - seed) * kPrime64_2);
  h.low = Avalanche(h.low);
  h.high = uint64_t{0} - Avalanche(h.high);
  return h;
}

LOCKSTEP_HD Hash128 Len17To128(const uint8_t* input, size_t len, const uint8_t* secret, uint64_t seed) {
  Hash128 acc{static_cast<uint64_t>(len) * kPrime64_1, 0};
  if (len > 32) {
    if (len > 64) {
      if (len > 96) acc = Mix32B(acc, input + 48, input + len - 64, secret + 96, seed);
      acc = Mix32B(acc, input + 32, input + len - 48, secret + 64, seed);
    }
    acc = Mix32B(acc, input + 16, input + len - 32, secret + 32, seed);
  }
  acc = Mix32B(acc, input, input + len - 16, secret, seed);
  return FinishMid(acc, len, seed);
}

LOCKSTEP_HD Hash128 Len129To240(const uint8_t* input, size_t len, const uint8_t* secret, uint64_t seed) {
  const int rounds = static_cast<int>(len) / 32;
  Hash128 acc{static_cast<uint64_t>(len) * kPrime64_1, 0};
  for (int i = 0; i < 4; ++i) acc = Mix32B(acc, input + 32 * i, input + 32 * i + 16, secret + 32 * i, seed);
  acc.low = Avalanche(acc.low);
  acc.high = Avalanche(acc.high);
  for (int i = 4; i < rounds; ++i) {
    acc = Mix32B(acc, input + 32 * i, input + 32 * i + 16, secret + kMidSizeStartOffset + 32 * (i - 4), seed);
  }
  acc = Mix32B(acc, input + len - 16, input + len - 32, secret + kSecretSizeMin - kMidSizeLastOffset - 16,
               uint64_t{0} - seed);
  return FinishMid(acc, len, seed);
}

// XXH3-128 of at most 240 bytes with the default secret: the paths that need no accumulators.
LOCKSTEP_HD Hash128 HashShort128(const uint8_t* input, size_t len, uint64_t seed) {
  const uint8_t* secret = DefaultSecret();
  if (len <= 16) return Len0To16(input, len, secret, seed);
  if (len <= 128) return Len17To128(input, len, secret, seed);
  return Len129To240(input, len, secret, seed);
}

// ---- Long inputs (> 240 bytes) ----

LOCKSTEP_HD void InitAcc(uint64_t acc[8]) {
  acc[0] = kPrime32_3;
  acc[1] = kPrime64_1;
  acc[2] = kPrime64_2;
  acc[3] = kPrime64_3;
  acc[4] = kPrime64_4;
  acc[5] = kPrime32_2;
  acc[6] = kPrime64_5;
  acc[7] = kPrime32_1;
}

// Full blocks that are accumulated and scrambled; the rest (at least one byte) is the tail.
LOCKSTEP_HD size_t FullBlocks(size_t len) { return (len - 1) / kBlockLen; }

// One 16-byte piece of a stripe, lanes 2p (v0) and 2p+1 (v1): upstream's accumulate_512 step for
// those two lanes, with its lane swap (each lane also gets its neighbour's raw value).
LOCKSTEP_HD void AccumulatePair(uint64_t v0, uint64_t v1, uint64_t key0, uint64_t key1, LanePair& sum) {
  const uint64_t k0 = v0 ^ key0;
  const uint64_t k1 = v1 ^ key1;
  sum.lo += v1 + Mult32to64(k0 & 0xFFFFFFFF, k0 >> 32);
  sum.hi += v0 + Mult32to64(k1 & 0xFFFFFFFF, k1 >> 32);
}

// The secret's words at 8-byte aligned offsets 0 .. kBlockKeyWords-1, for BlockPairSum.
LOCKSTEP_HD void BlockKeyWords(const uint8_t* secret, uint64_t words[kBlockKeyWords]) {
  for (size_t w = 0; w < kBlockKeyWords; ++w) words[w] = ReadLE64(secret + 8 * w);
}

// What the 16 stripes of one full block add to lanes 2*pair and 2*pair+1. `load(offset)` returns
// the two little-endian words at byte `offset` of the block (offset = 64*stripe + 16*pair).
template <typename Load>
LOCKSTEP_HD LanePair BlockPairSum(Load&& load, int pair, const uint64_t* key_words) {
  LanePair sum{0, 0};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int s = 0; s < static_cast<int>(kStripesPerBlock); ++s) {
    const LanePair v = load(static_cast<size_t>(64 * s + 16 * pair));
    AccumulatePair(v.lo, v.hi, key_words[s + 2 * pair], key_words[s + 2 * pair + 1], sum);
  }
  return sum;
}

// After a full block: add its sum to the lane, then upstream's scrambleAcc for that lane.
// `key` is the lane's word of the scramble secret (secret + secret_size - 64 + 8*lane).
LOCKSTEP_HD uint64_t ScrambleLane(uint64_t acc, uint64_t block_sum, uint64_t key) {
  acc += block_sum;
  acc = XorShift64(acc, 47);
  acc ^= key;
  acc *= kPrime32_1;
  return acc;
}

// Upstream's accumulate_512 over one whole stripe (the tail's stripes, which are not summed).
LOCKSTEP_HD void AccumulateStripe(uint64_t acc[8], const uint8_t* input, const uint8_t* secret) {
  for (int p = 0; p < 4; ++p) {
    LanePair s{acc[2 * p], acc[2 * p + 1]};
    AccumulatePair(ReadLE64(input + 16 * p), ReadLE64(input + 16 * p + 8), ReadLE64(secret + 16 * p),
                   ReadLE64(secret + 16 * p + 8), s);
    acc[2 * p] = s.lo;
    acc[2 * p + 1] = s.hi;
  }
}

LOCKSTEP_HD uint64_t MergeAccs(const uint64_t acc[8], const uint8_t* secret, uint64_t start) {
  uint64_t result = start;
  for (int i = 0; i < 4; ++i) {
    result += Mul128Fold64(acc[2 * i] ^ ReadLE64(secret + 16 * i), acc[2 * i + 1] ^ ReadLE64(secret + 16 * i + 8));
  }
  return Avalanche(result);
}

// Everything after the full blocks: the stripes of the last partial block, the last stripe
// (the input's final 64 bytes, with a shifted secret), and the merge into 128 bits.
LOCKSTEP_HD Hash128 LongTail(uint64_t acc[8], const uint8_t* input, size_t len, const uint8_t* secret,
                             size_t secret_size) {
  const size_t blocks = FullBlocks(len);
  const size_t stripes = ((len - 1) - kBlockLen * blocks) / kStripeLen;
  for (size_t n = 0; n < stripes; ++n) {
    AccumulateStripe(acc, input + blocks * kBlockLen + n * kStripeLen, secret + n * kSecretConsumeRate);
  }
  AccumulateStripe(acc, input + len - kStripeLen, secret + secret_size - kStripeLen - kSecretLastAccStart);
  Hash128 h;
  h.low = MergeAccs(acc, secret + kSecretMergeAccsStart, static_cast<uint64_t>(len) * kPrime64_1);
  h.high = MergeAccs(acc, secret + secret_size - 64 - kSecretMergeAccsStart, ~(static_cast<uint64_t>(len) * kPrime64_2));
  return h;
}

// XXH3-128 of more than 240 bytes under a 192-byte secret, as the kernel decomposes it (block
// sums, then the lane-wise scan, then the tail), run sequentially.
LOCKSTEP_HD Hash128 HashLong128(const uint8_t* input, size_t len, const uint8_t* secret) {
  uint64_t key_words[kBlockKeyWords];
  BlockKeyWords(secret, key_words);
  uint64_t acc[8];
  InitAcc(acc);
  const size_t blocks = FullBlocks(len);
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* block = input + b * kBlockLen;
    auto load = [block](size_t offset) { return LanePair{ReadLE64(block + offset), ReadLE64(block + offset + 8)}; };
    for (int p = 0; p < 4; ++p) {
      const LanePair sum = BlockPairSum(load, p, key_words);
      const uint8_t* scramble = secret + kSecretSize - kStripeLen;
      acc[2 * p] = ScrambleLane(acc[2 * p], sum.lo, ReadLE64(scramble + 16 * p));
      acc[2 * p + 1] = ScrambleLane(acc[2 * p + 1], sum.hi, ReadLE64(scramble + 16 * p + 8));
    }
  }
  return LongTail(acc, input, len, secret, kSecretSize);
}

// XXH3_initCustomSecret: the secret a non-zero seed uses for long inputs.
LOCKSTEP_HD void InitCustomSecret(uint8_t secret[kSecretSize], uint64_t seed) {
  const uint8_t* base = DefaultSecret();
  for (size_t i = 0; i < kSecretSize / 16; ++i) {
    WriteLE64(secret + 16 * i, ReadLE64(base + 16 * i) + seed);
    WriteLE64(secret + 16 * i + 8, ReadLE64(base + 16 * i + 8) - seed);
  }
}

// XXH3_128bits_withSeed (seed 0: XXH3_128bits). `input` may be null only when len is 0.
LOCKSTEP_HD Hash128 Hash128WithSeed(const uint8_t* input, size_t len, uint64_t seed) {
  if (len <= kMidSizeMax) return HashShort128(input, len, seed);
  if (seed == 0) return HashLong128(input, len, DefaultSecret());
  uint8_t secret[kSecretSize];
  InitCustomSecret(secret, seed);
  return HashLong128(input, len, secret);
}

}  // namespace xxh3
}  // namespace lockstep
