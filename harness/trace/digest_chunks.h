// The chunks of a digest (digest.h): a buffer's bytes cut into kDigestChunkBytes pieces, the last
// one shorter, and at least one (an empty buffer is one empty chunk). Counted here once for every
// digest: the CPU's, the capture's and the CUDA kernels' (so this header compiles for the device).
#pragma once

#include <cstddef>

#if defined(__CUDACC__)
#define LOCKSTEP_CHUNKS_HD __host__ __device__
#else
#define LOCKSTEP_CHUNKS_HD
#endif

namespace lockstep {

inline constexpr size_t kDigestChunkBytes = size_t{1} << 20;

LOCKSTEP_CHUNKS_HD constexpr size_t DigestChunkCount(size_t nbytes) {
  return nbytes == 0 ? 1 : (nbytes + kDigestChunkBytes - 1) / kDigestChunkBytes;
}

// The length of chunk `chunk` (< DigestChunkCount(nbytes)).
LOCKSTEP_CHUNKS_HD constexpr size_t DigestChunkLength(size_t nbytes, size_t chunk) {
  return nbytes - chunk * kDigestChunkBytes < kDigestChunkBytes ? nbytes - chunk * kDigestChunkBytes : kDigestChunkBytes;
}

}  // namespace lockstep
