// Level 2 of the digest (digest.h) for a tensor of one chunk, most tensors of a training step,
// inlined into the loop that digests them: XXH3-128 of the chunk's 16-byte digest under the
// descriptor's seed, what CombineChunkDigestsWithSeed(&chunk, 1, seed) computes through the
// library: a call through the PLT, and XXH3's choice of a path by the length, for 16 bytes of
// work, every tensor of every step. Here only XXH3's path for 9 to 16 bytes is compiled in
// (MultiTensorDigest::Run; issue 47, docs/PERFORMANCE.md).
//
// xxhash.h is compiled in with XXH_INLINE_ALL: the same function of the same release as the
// library's, so the same bits (one_chunk_digest_test holds the two to each other). Its names then
// refer to the inlined functions in the rest of the including file, which is why this header is
// included only where the loop is.
#pragma once

#include <cstdint>

#include "harness/trace/trace_record.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace lockstep {

inline Digest128 CombineOneChunkDigest(const Digest128& chunk, uint64_t seed) {
  // Little-endian, low word first, as the definition serializes a chunk digest on any host.
  unsigned char bytes[16];
  for (int b = 0; b < 8; ++b) {
    bytes[b] = static_cast<unsigned char>(chunk.low >> (8 * b));
    bytes[8 + b] = static_cast<unsigned char>(chunk.high >> (8 * b));
  }
  const XXH128_hash_t h = XXH3_128bits_withSeed(bytes, sizeof bytes, seed);
  return Digest128{h.high64, h.low64};
}

}  // namespace lockstep
