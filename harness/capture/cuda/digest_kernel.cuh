// How the CUDA digest kernel splits level 1 of the digest (XXH3-128 of each 1 MiB chunk,
// docs/TRACE.md#digest) over one thread block per chunk. The per-thread work is written here as
// host/device functions, so digest_kernel_test.cc runs the very same steps on the CPU, thread by
// thread, and checks them against libxxhash; digest_kernel.cu only maps CUDA threads onto them.
//
// Per chunk longer than 240 bytes (xxh3_port.cuh explains why the split is exact):
//   rounds of kBlocksPerRound XXH3 blocks (1 KiB each): thread t sums lanes 2*(t%4), 2*(t%4)+1
//     of block (round start + t/4) over its 16 stripes into sums[t/4];
//   then threads 0..7 each carry one accumulator lane through the round's blocks in order
//     (add the block's sum, scramble);
//   after the last round, one thread runs the tail (partial block, last stripe, merge).
// A chunk of at most 240 bytes (only the last chunk can be that short) is one thread's
// HashShort128.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "harness/capture/cuda/xxh3_port.cuh"
#include "harness/trace/digest_chunks.h"

namespace lockstep {
namespace cuda_digest {

constexpr size_t kChunkBytes = kDigestChunkBytes;  // harness/trace/digest_chunks.h
constexpr int kThreadsPerChunk = 256;
constexpr int kBlocksPerRound = kThreadsPerChunk / 4;

LOCKSTEP_HD size_t RoundCount(size_t full_blocks) {
  return (full_blocks + kBlocksPerRound - 1) / kBlocksPerRound;
}

// Thread `thread`'s share of round `round`: one block's sum for one lane pair, stored at
// sums[thread / 4][2*pair .. 2*pair+1]. `make_load(block_pointer)` builds the loader.
template <typename MakeLoad>
LOCKSTEP_HD void RoundThreadWork(const uint8_t* chunk, size_t full_blocks, size_t round, int thread,
                                 const uint64_t* key_words, uint64_t (*sums)[8], MakeLoad&& make_load) {
  const int slot = thread / 4;
  const int pair = thread % 4;
  const size_t block = round * kBlocksPerRound + static_cast<size_t>(slot);
  if (block >= full_blocks) return;
  const xxh3::LanePair s = xxh3::BlockPairSum(make_load(chunk + block * xxh3::kBlockLen), pair, key_words);
  sums[slot][2 * pair] = s.lo;
  sums[slot][2 * pair + 1] = s.hi;
}

// Lane `lane`'s sequential part of round `round`: the blocks of that round, in order.
LOCKSTEP_HD uint64_t RoundScan(uint64_t acc, size_t full_blocks, size_t round, const uint64_t (*sums)[8], int lane,
                               uint64_t scramble_key) {
  const size_t first = round * kBlocksPerRound;
  const size_t count = full_blocks - first < static_cast<size_t>(kBlocksPerRound) ? full_blocks - first
                                                                                  : static_cast<size_t>(kBlocksPerRound);
  for (size_t j = 0; j < count; ++j) acc = xxh3::ScrambleLane(acc, sums[j][lane], scramble_key);
  return acc;
}

// The scramble secret's word for `lane` (default secret).
LOCKSTEP_HD uint64_t ScrambleKey(int lane) {
  return xxh3::ReadLE64(xxh3::DefaultSecret() + xxh3::kSecretSize - xxh3::kStripeLen + 8 * lane);
}

LOCKSTEP_HD uint64_t InitialLane(int lane) {
  uint64_t acc[8];
  xxh3::InitAcc(acc);
  return acc[lane];
}

// One thread block's work in a multi-buffer launch (DigestDeviceChunks): one chunk of one buffer.
// The table lists every chunk of every buffer, buffer after buffer, so block b writes the digest
// of the table's chunk b, and a buffer's chunk digests are contiguous in the output.
struct ChunkTask {
  const uint8_t* data;  // the chunk's first byte (may be null when len is 0)
  uint64_t len;         // at most kChunkBytes; 0 only for an empty buffer's one chunk
};

// Appends the DigestChunkCount(nbytes) tasks of one buffer (one task of length 0 for an empty one, as
// the digest has at least one chunk).
inline void AppendChunkTasks(const uint8_t* data, size_t nbytes, std::vector<ChunkTask>& tasks) {
  const size_t count = DigestChunkCount(nbytes);
  for (size_t c = 0; c < count; ++c) {
    tasks.push_back(ChunkTask{nbytes == 0 ? data : data + c * kChunkBytes, static_cast<uint64_t>(DigestChunkLength(nbytes, c))});
  }
}

}  // namespace cuda_digest
}  // namespace lockstep
