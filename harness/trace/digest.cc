#include "harness/trace/digest.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <system_error>
#include <thread>

// The streaming state's definition (XXH3_state_t on the stack, DigestChunkInPieces): the layout
// of the very library this file links, whose headers these are.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#ifdef LOCKSTEP_HAVE_XXH_DISPATCH
#include <xxh_x86dispatch.h>
#endif

namespace lockstep {
namespace {

XXH128_hash_t Hash128(const void* data, size_t nbytes) {
#ifdef LOCKSTEP_HAVE_XXH_DISPATCH
  return XXH3_128bits_dispatch(data, nbytes);
#else
  return XXH3_128bits(data, nbytes);
#endif
}

void HashChunkRange(const unsigned char* data, size_t nbytes, size_t first, size_t last,
                    Digest128* out) {
  for (size_t i = first; i < last; ++i) out[i] = DigestChunk(data + i * kDigestChunkBytes, DigestChunkLength(nbytes, i));
}

void PutLittleEndian64(uint64_t v, unsigned char* out) {
  for (int b = 0; b < 8; ++b) out[b] = static_cast<unsigned char>(v >> (8 * b));
}

}  // namespace

std::string DigestDescriptor(std::string_view dtype, const int64_t* dims, size_t ndim, uint64_t nbytes) {
  std::string d;
  AppendDigestDescriptor(dtype, dims, ndim, nbytes, d);
  return d;
}

void AppendDigestDescriptor(std::string_view dtype, const int64_t* dims, size_t ndim, uint64_t nbytes,
                            std::string& out) {
  char number[24];
  auto append_number = [&](auto v) {
    const auto r = std::to_chars(number, number + sizeof number, v);
    out.append(number, r.ptr);
  };
  out.append(dtype.data(), dtype.size());
  out.push_back('[');
  for (size_t i = 0; i < ndim; ++i) {
    if (i > 0) out.push_back(',');
    append_number(dims[i]);
  }
  out += "]:";
  append_number(nbytes);
}

Digest128 DigestChunk(const void* data, size_t nbytes) {
  // XXH3 accepts a null pointer only with length 0; an empty tensor may have no storage at all.
  static const unsigned char kEmpty = 0;
  const XXH128_hash_t h = Hash128(nbytes == 0 ? &kEmpty : data, nbytes);
  return Digest128{h.high64, h.low64};
}

Digest128 DigestChunkInPieces(const void* data, size_t nbytes, AfterPiece after_piece, void* context) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (nbytes <= kDigestPieceBytes) {
    const Digest128 d = DigestChunk(data, nbytes);
    if (nbytes > 0) after_piece(bytes, nbytes, context);
    return d;
  }
  // XXH3's streaming form gives the one-shot hash of the concatenation, for any split.
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  for (size_t at = 0; at < nbytes; at += kDigestPieceBytes) {
    const size_t len = std::min(kDigestPieceBytes, nbytes - at);
#ifdef LOCKSTEP_HAVE_XXH_DISPATCH
    XXH3_128bits_update_dispatch(&state, bytes + at, len);
#else
    XXH3_128bits_update(&state, bytes + at, len);
#endif
    after_piece(bytes + at, len, context);
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return Digest128{h.high64, h.low64};
}

Digest128 CombineChunkDigests(const std::vector<Digest128>& chunks, std::string_view descriptor) {
  return CombineChunkDigests(chunks.data(), chunks.size(), descriptor);
}

Digest128 CombineChunkDigests(const Digest128* chunks, size_t count, std::string_view descriptor) {
  return CombineChunkDigestsWithSeed(chunks, count, DescriptorSeed(descriptor));
}

uint64_t DescriptorSeed(std::string_view descriptor) { return XXH3_64bits(descriptor.data(), descriptor.size()); }

Digest128 CombineChunkDigestsWithSeed(const Digest128* chunks, size_t count, uint64_t seed) {
  // Serialized explicitly rather than memcpy'd so the byte order is the documented one on any host.
  // Most tensors are one chunk: their 16 bytes stay on the stack (a step digests hundreds).
  unsigned char small[16 * 8];
  std::vector<unsigned char> large;
  unsigned char* bytes = small;
  if (count > 8) {
    large.resize(count * 16);
    bytes = large.data();
  }
  for (size_t i = 0; i < count; ++i) {
    PutLittleEndian64(chunks[i].low, &bytes[16 * i]);
    PutLittleEndian64(chunks[i].high, &bytes[16 * i + 8]);
  }
  const XXH128_hash_t h = XXH3_128bits_withSeed(bytes, count * 16, seed);
  return Digest128{h.high64, h.low64};
}

Digest128 DigestBytes(const void* data, size_t nbytes, std::string_view dtype, const int64_t* dims,
                      size_t ndim, int threads) {
  const size_t nchunks = DigestChunkCount(nbytes);
  std::vector<Digest128> chunks(nchunks);
  const auto* bytes = static_cast<const unsigned char*>(data);
  const size_t workers = std::min<size_t>(nchunks, static_cast<size_t>(std::max(threads, 1)));
  if (workers <= 1 || nbytes == 0) {
    HashChunkRange(bytes, nbytes, 0, nchunks, chunks.data());
  } else {
    // Contiguous chunk ranges: each thread streams through its own part of memory.
    std::vector<std::thread> pool;
    pool.reserve(workers - 1);
    auto range_begin = [&](size_t w) { return nchunks * w / workers; };
    for (size_t w = 1; w < workers; ++w) {
      try {
        pool.emplace_back(HashChunkRange, bytes, nbytes, range_begin(w), range_begin(w + 1), chunks.data());
      } catch (const std::system_error&) {
        // No thread to be had: this thread does that range itself; the digest is the same.
        HashChunkRange(bytes, nbytes, range_begin(w), range_begin(w + 1), chunks.data());
      }
    }
    HashChunkRange(bytes, nbytes, 0, range_begin(1), chunks.data());
    for (auto& t : pool) t.join();
  }
  return CombineChunkDigests(chunks, DigestDescriptor(dtype, dims, ndim, nbytes));
}

Digest128 DigestBytes(const void* data, size_t nbytes, std::string_view dtype,
                      const std::vector<int64_t>& shape, int threads) {
  return DigestBytes(data, nbytes, dtype, shape.data(), shape.size(), threads);
}

const char* DigestImplementation() {
#ifdef LOCKSTEP_HAVE_XXH_DISPATCH
  return "XXH3_128bits_dispatch";
#else
  return "XXH3_128bits";
#endif
}

}  // namespace lockstep
