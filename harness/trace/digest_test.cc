#include "harness/trace/digest.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <random>
#include <vector>

namespace lockstep {
namespace {

std::vector<unsigned char> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> v(n);
  for (auto& b : v) b = static_cast<unsigned char>(gen());
  return v;
}

// The definition of docs/TRACE.md#digest written out again with the raw xxHash API, independent
// of digest.cc, as a CUDA kernel would have to follow it.
Digest128 ReferenceDigest(const std::vector<unsigned char>& data, const std::string& desc) {
  const size_t chunk = size_t{1} << 20;
  const size_t n = data.empty() ? 1 : (data.size() + chunk - 1) / chunk;
  std::vector<unsigned char> level2;
  for (size_t i = 0; i < n; ++i) {
    const size_t begin = i * chunk;
    const size_t len = data.empty() ? 0 : std::min(chunk, data.size() - begin);
    XXH128_hash_t h = XXH3_128bits(data.empty() ? "" : reinterpret_cast<const char*>(data.data()) + begin, len);
    for (int b = 0; b < 8; ++b) level2.push_back(static_cast<unsigned char>(h.low64 >> (8 * b)));
    for (int b = 0; b < 8; ++b) level2.push_back(static_cast<unsigned char>(h.high64 >> (8 * b)));
  }
  XXH128_hash_t top = XXH3_128bits_withSeed(level2.data(), level2.size(), XXH3_64bits(desc.data(), desc.size()));
  return Digest128{top.high64, top.low64};
}

TEST(DigestTest, DescriptorNamesDtypeShapeAndBytes) {
  const int64_t dims[] = {64, 32};
  EXPECT_EQ(DigestDescriptor("float32", dims, 2, 8192), "float32[64,32]:8192");
  EXPECT_EQ(DigestDescriptor("float32", nullptr, 0, 4), "float32[]:4");
  EXPECT_EQ(DigestDescriptor("int64", dims, 1, 512), "int64[64]:512");
}

TEST(DigestTest, ChunkIsPlainXxh3_128) {
  auto data = RandomBytes(1000, 1);
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  Digest128 d = DigestChunk(data.data(), data.size());
  EXPECT_EQ(d.high, h.high64);
  EXPECT_EQ(d.low, h.low64);
}

// Hashing a chunk in pieces (for the norm to read each piece while it is in cache) gives
// DigestChunk's bits, and shows every byte to the callback once, in order.
TEST(DigestTest, ChunkInPiecesIsTheSameDigestAndVisitsEveryByteOnce) {
  const size_t piece = kDigestPieceBytes;
  for (size_t n : {size_t{0}, size_t{1}, size_t{241}, piece - 1, piece, piece + 1, 3 * piece + 17, kDigestChunkBytes - 3,
                   kDigestChunkBytes}) {
    auto data = RandomBytes(n, static_cast<uint32_t>(n) + 7);
    std::vector<unsigned char> seen;
    auto append = [](const unsigned char* p, size_t len, void* out) {
      auto* v = static_cast<std::vector<unsigned char>*>(out);
      v->insert(v->end(), p, p + len);
    };
    EXPECT_EQ(DigestChunkInPieces(n ? data.data() : nullptr, n, append, &seen), DigestChunk(data.data(), n)) << "n=" << n;
    EXPECT_EQ(seen, data) << "n=" << n;
  }
}

TEST(DigestTest, MatchesTheDocumentedDefinitionOnOddSizes) {
  const size_t chunk = kDigestChunkBytes;
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, chunk - 1, chunk, chunk + 1, 3 * chunk + 17}) {
    auto data = RandomBytes(n, static_cast<uint32_t>(n));
    const int64_t dims[] = {static_cast<int64_t>(n)};
    const std::string desc = DigestDescriptor("uint8", dims, 1, n);
    EXPECT_EQ(DigestBytes(data.data(), n, "uint8", dims, 1), ReferenceDigest(data, desc)) << "n=" << n;
  }
}

TEST(DigestTest, SameForEveryThreadCount) {
  const size_t n = 5 * kDigestChunkBytes + 12345;
  auto data = RandomBytes(n, 7);
  const std::vector<int64_t> shape = {static_cast<int64_t>(n)};
  const Digest128 one = DigestBytes(data.data(), n, "uint8", shape, 1);
  for (int threads : {0, 2, 3, 4, 6, 64}) {
    EXPECT_EQ(DigestBytes(data.data(), n, "uint8", shape, threads), one) << threads << " threads";
  }
}

TEST(DigestTest, DtypeAndShapeArePartOfTheDigest) {
  auto data = RandomBytes(16, 3);
  const Digest128 f = DigestBytes(data.data(), 16, "float32", std::vector<int64_t>{4}, 1);
  EXPECT_NE(f, DigestBytes(data.data(), 16, "int32", std::vector<int64_t>{4}, 1));
  EXPECT_NE(f, DigestBytes(data.data(), 16, "float32", std::vector<int64_t>{2, 2}, 1));
  EXPECT_EQ(f, DigestBytes(data.data(), 16, "float32", std::vector<int64_t>{4}, 1));
}

TEST(DigestTest, OneFlippedBitChangesTheDigest) {
  auto data = RandomBytes(2 * kDigestChunkBytes + 3, 11);
  const std::vector<int64_t> shape = {static_cast<int64_t>(data.size())};
  const Digest128 before = DigestBytes(data.data(), data.size(), "uint8", shape, 2);
  data[kDigestChunkBytes + 5] ^= 0x10;
  EXPECT_NE(before, DigestBytes(data.data(), data.size(), "uint8", shape, 2));
}

// Pins the definition: if this changes, every stored trace and golden file changes meaning, and
// docs/TRACE.md and the schema version must change with it.
TEST(DigestTest, PinnedValues) {
  EXPECT_EQ(DigestBytes(nullptr, 0, "float32", std::vector<int64_t>{0}, 1).ToHex(),
            "63095afe36edab0e18deacd0db1b476b");
  std::vector<unsigned char> ramp(kDigestChunkBytes + 100);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<unsigned char>(i * 7 + 1);
  EXPECT_EQ(DigestBytes(ramp.data(), ramp.size(), "uint8", std::vector<int64_t>{static_cast<int64_t>(ramp.size())}, 1).ToHex(),
            "99bac8fa349468865cc65ae0908b55c8");
}

TEST(DigestTest, NamesItsImplementation) {
  const std::string impl = DigestImplementation();
  EXPECT_TRUE(impl == "XXH3_128bits_dispatch" || impl == "XXH3_128bits") << impl;
}

}  // namespace
}  // namespace lockstep
