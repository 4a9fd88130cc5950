// The content digest of a tensor's bytes, defined so that CPU threads and a GPU kernel compute
// the same 128 bits (docs/TRACE.md#digest is the normative definition):
//
//   chunks   = the bytes cut into kDigestChunkBytes pieces, the last one shorter; at least one
//              chunk, so an empty or small tensor is not a special case
//   h[i]     = XXH3-128(chunk i), seed 0
//   desc     = "<dtype>[<d0>,<d1>,...]:<byte count>"          e.g. "float32[64,32]:8192"
//   digest   = XXH3-128 with seed XXH3-64(desc) over h[0] .. h[n-1], each as 16 bytes
//              little-endian (low 64 bits first)
//
// Two levels let chunks be hashed in parallel (threads here, thread blocks on a GPU) while the
// result stays independent of how the work was split; the descriptor makes dtype and shape part of
// the digest, so a float32[2,2] and an int32[4] with equal bytes differ.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "harness/trace/digest_chunks.h"
#include "harness/trace/trace_record.h"

namespace lockstep {


// "float32[64,32]:8192"; a 0-d tensor is "float32[]:4".
std::string DigestDescriptor(std::string_view dtype, const int64_t* dims, size_t ndim, uint64_t nbytes);
// The same, appended to `out` (a caller that reuses one string allocates nothing per tensor).
void AppendDigestDescriptor(std::string_view dtype, const int64_t* dims, size_t ndim, uint64_t nbytes,
                            std::string& out);

// Level 1: XXH3-128 of one chunk (seed 0).
Digest128 DigestChunk(const void* data, size_t nbytes);

// The same digest, hashed in pieces of kDigestPieceBytes (the last one shorter), calling
// `after_piece(piece, bytes, context)` on each piece right after hashing it, while it is still in
// the core's first-level cache: a caller that also sums the bytes (the norm, MultiTensorDigest)
// reads them from there instead of from memory or a slower cache a second time. Not called for an
// empty chunk. 8 KiB: a 64 MiB buffer from memory was hashed and squared in 0.90-0.92x the read
// yardstick's time with 4-8 KiB pieces, 0.96x with 16 KiB, 1.00-1.09x with 64 KiB (more than a
// 48 KiB L1 holds), and a 1 MiB one in L2 as fast with 8 KiB as with larger pieces (2026-11-27).
using AfterPiece = void (*)(const unsigned char* piece, size_t nbytes, void* context);
inline constexpr size_t kDigestPieceBytes = size_t{8} << 10;
Digest128 DigestChunkInPieces(const void* data, size_t nbytes, AfterPiece after_piece, void* context);

// Level 2: combines the chunk digests (in chunk order) under the descriptor's seed.
Digest128 CombineChunkDigests(const std::vector<Digest128>& chunks, std::string_view descriptor);
Digest128 CombineChunkDigests(const Digest128* chunks, size_t count, std::string_view descriptor);
// The same in two halves, for a caller that digests the same shape every step: the seed depends
// only on the descriptor, so it can be computed once and kept (harness/capture/multi_tensor_digest).
uint64_t DescriptorSeed(std::string_view descriptor);
Digest128 CombineChunkDigestsWithSeed(const Digest128* chunks, size_t count, uint64_t seed);

// The whole definition. `threads` > 1 hashes chunks on that many threads (at most one per chunk);
// the result is the same for every thread count.
Digest128 DigestBytes(const void* data, size_t nbytes, std::string_view dtype, const int64_t* dims,
                      size_t ndim, int threads = 1);
Digest128 DigestBytes(const void* data, size_t nbytes, std::string_view dtype,
                      const std::vector<int64_t>& shape, int threads = 1);

// Which XXH3 entry point this build uses: "XXH3_128bits_dispatch" (picks AVX2/AVX512 at run
// time) or "XXH3_128bits" (whatever the library was compiled for, SSE2 on Debian).
const char* DigestImplementation();

}  // namespace lockstep
