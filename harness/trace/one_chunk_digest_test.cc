#include "harness/trace/one_chunk_digest.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "harness/trace/digest.h"

namespace lockstep {
namespace {

// The inlined level 2 is the library's (CombineChunkDigestsWithSeed links libxxhash): the same
// digest for any chunk digest and seed.
TEST(OneChunkDigestTest, IsTheLibrarysLevelTwoOfOneChunk) {
  std::mt19937_64 rng(5);
  for (int i = 0; i < 10000; ++i) {
    const Digest128 chunk{rng(), rng()};
    const uint64_t seed = i % 7 == 0 ? 0 : rng();
    ASSERT_EQ(CombineOneChunkDigest(chunk, seed), CombineChunkDigestsWithSeed(&chunk, 1, seed)) << i;
  }
}

// The whole definition through it: DigestTest.PinnedValues' empty float32 tensor.
TEST(OneChunkDigestTest, GivesThePinnedDigestOfAnEmptyTensor) {
  const std::vector<int64_t> shape = {0};
  const Digest128 chunk = DigestChunk(nullptr, 0);
  const uint64_t seed = DescriptorSeed(DigestDescriptor("float32", shape.data(), shape.size(), 0));
  EXPECT_EQ(CombineOneChunkDigest(chunk, seed).ToHex(), "63095afe36edab0e18deacd0db1b476b");
}

}  // namespace
}  // namespace lockstep
