// The GPU digest's logic, run on the CPU with the host C++ compiler: the XXH3-128 port against
// libxxhash on sizes that hit every code path, the kernel's thread-by-thread split of a chunk
// against the library's chunk digest, and the norm kernel's lanes against SumOfSquares. This is
// what proves bit-identity on machines without a GPU; cuda_digest_test.cc runs the real kernel
// where there is one.
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "harness/capture/cuda/chunk_squares.cuh"
#include "harness/capture/cuda/digest_kernel.cuh"
#include "harness/capture/cuda/xxh3_port.cuh"
#include "harness/trace/digest.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/testing/norm_test_values.h"

namespace lockstep {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

// Every boundary of XXH3's paths (0, 1-3, 4-8, 9-16, 17-128 in 32-byte steps, 129-240, then
// the long loop: stripes, blocks of 1 KiB, the partial block), plus the sizes the GPU test uses.
std::vector<size_t> PortSizes() {
  std::vector<size_t> s = {0,   1,   2,   3,   4,   5,   7,    8,    9,    15,   16,   17,   31,   32,  33,
                           63,  64,  65,  96,  97,  127, 128,  129,  130,  159,  160,  200,  239,  240, 241,
                           255, 256, 257, 319, 320, 321, 1000, 1023, 1024, 1025, 1087, 1088, 2047, 2048, 2049,
                           4095, 4096, 65536 + 3, kMiB - 1, kMiB, kMiB + 7};
  return s;
}

::testing::AssertionResult SameHash(const xxh3::Hash128& port, const XXH128_hash_t& lib) {
  if (port.low == lib.low64 && port.high == lib.high64) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << std::hex << "port " << port.high << ":" << port.low << " library "
                                       << lib.high64 << ":" << lib.low64;
}

TEST(Xxh3PortTest, MatchesLibraryOnEveryPath) {
  const std::vector<uint8_t> bytes = RandomBytes(kMiB + 64, 1);
  for (size_t n : PortSizes()) {
    SCOPED_TRACE("size " + std::to_string(n));
    EXPECT_TRUE(SameHash(xxh3::Hash128WithSeed(bytes.data(), n, 0), XXH3_128bits(bytes.data(), n)));
  }
}

TEST(Xxh3PortTest, MatchesLibraryWithSeeds) {
  // Level 2 of the digest is seeded; long seeded inputs take the custom-secret path.
  const std::vector<uint8_t> bytes = RandomBytes(8192, 2);
  for (uint64_t seed : {uint64_t{1}, uint64_t{0x9e3779b97f4a7c15ULL}, ~uint64_t{0}}) {
    for (size_t n : {size_t{0}, size_t{3}, size_t{8}, size_t{16}, size_t{100}, size_t{240}, size_t{241}, size_t{4000},
                     size_t{8192}}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " size " + std::to_string(n));
      EXPECT_TRUE(SameHash(xxh3::Hash128WithSeed(bytes.data(), n, seed), XXH3_128bits_withSeed(bytes.data(), n, seed)));
    }
  }
}

TEST(Xxh3PortTest, UnalignedInputs) {
  const std::vector<uint8_t> bytes = RandomBytes(5000, 3);
  for (size_t offset = 1; offset < 16; offset += 3) {
    for (size_t n : {size_t{7}, size_t{129}, size_t{4000}}) {
      EXPECT_TRUE(SameHash(xxh3::Hash128WithSeed(bytes.data() + offset, n, 0), XXH3_128bits(bytes.data() + offset, n)));
    }
  }
}

// Chunk `c` of a buffer, computed the way ChunkDigestKernel does it: every thread's round work,
// then the eight lane scans, then the tail, with the kernel's shared-memory layout.
xxh3::Hash128 ChunkLikeTheKernel(const uint8_t* data, size_t nbytes, size_t c) {
  using namespace cuda_digest;
  const uint8_t* chunk = data + c * kChunkBytes;
  const size_t len = DigestChunkLength(nbytes, c);
  if (len <= xxh3::kMidSizeMax) return xxh3::HashShort128(chunk, len, 0);
  uint64_t key_words[xxh3::kBlockKeyWords];
  for (size_t t = 0; t < xxh3::kBlockKeyWords; ++t) key_words[t] = xxh3::ReadLE64(xxh3::DefaultSecret() + 8 * t);
  uint64_t lanes[8];
  for (int t = 0; t < 8; ++t) lanes[t] = InitialLane(t);
  uint64_t sums[kBlocksPerRound][8];
  auto make_load = [](const uint8_t* block) {
    return [block](size_t offset) {
      return xxh3::LanePair{xxh3::ReadLE64(block + offset), xxh3::ReadLE64(block + offset + 8)};
    };
  };
  const size_t full_blocks = xxh3::FullBlocks(len);
  for (size_t r = 0; r < RoundCount(full_blocks); ++r) {
    for (auto& row : sums) {
      for (auto& x : row) x = 0xdeadbeefdeadbeefULL;  // a slot the round leaves unwritten must not be read
    }
    for (int t = 0; t < kThreadsPerChunk; ++t) RoundThreadWork(chunk, full_blocks, r, t, key_words, sums, make_load);
    for (int t = 0; t < 8; ++t) lanes[t] = RoundScan(lanes[t], full_blocks, r, sums, t, ScrambleKey(t));
  }
  return xxh3::LongTail(lanes, chunk, len, xxh3::DefaultSecret(), xxh3::kSecretSize);
}

TEST(DigestKernelLogicTest, ChunksMatchTheLibrary) {
  // Chunk lengths that end rounds early, exactly, and inside the tail.
  const std::vector<uint8_t> bytes = RandomBytes(kMiB, 4);
  for (size_t n : {size_t{241}, size_t{1024}, size_t{1025}, size_t{64 * 1024}, size_t{64 * 1024 + 1},
                   size_t{65 * 1024 + 100}, kMiB - 1, kMiB}) {
    SCOPED_TRACE("chunk " + std::to_string(n));
    const xxh3::Hash128 h = ChunkLikeTheKernel(bytes.data(), n, 0);
    const Digest128 want = DigestChunk(bytes.data(), n);
    EXPECT_EQ(h.high, want.high);
    EXPECT_EQ(h.low, want.low);
  }
}

TEST(DigestKernelLogicTest, WholeDigestMatchesDigestBytesOnOddSizes) {
  const std::vector<uint8_t> bytes = RandomBytes(5 * kMiB + 13, 5);
  for (size_t n : {size_t{0}, size_t{1}, size_t{3}, size_t{17}, size_t{129}, size_t{240}, size_t{241}, size_t{1000},
                   kMiB - 1, kMiB, kMiB + 7, kMiB + 240, kMiB + 241, 5 * kMiB + 13}) {
    SCOPED_TRACE("size " + std::to_string(n));
    const size_t chunks = DigestChunkCount(n);
    std::vector<Digest128> digests(chunks);
    for (size_t c = 0; c < chunks; ++c) {
      const xxh3::Hash128 h = ChunkLikeTheKernel(bytes.data(), n, c);
      digests[c] = Digest128{h.high, h.low};
    }
    const std::vector<int64_t> shape = {static_cast<int64_t>(n)};
    EXPECT_EQ(CombineChunkDigests(digests, DigestDescriptor("uint8", shape.data(), 1, n)),
              DigestBytes(bytes.data(), n, "uint8", shape));
  }
}

TEST(DigestKernelLogicTest, ChunkCountAndLengths) {
  EXPECT_EQ(DigestChunkCount(0), 1u);
  EXPECT_EQ(DigestChunkCount(1), 1u);
  EXPECT_EQ(DigestChunkCount(kMiB), 1u);
  EXPECT_EQ(DigestChunkCount(kMiB + 1), 2u);
  EXPECT_EQ(DigestChunkLength(kMiB + 7, 0), kMiB);
  EXPECT_EQ(DigestChunkLength(kMiB + 7, 1), 7u);
  EXPECT_EQ(DigestChunkLength(0, 0), 0u);
  EXPECT_EQ(cuda_digest::kChunkBytes, kDigestChunkBytes);
}

// The multi-buffer launch's table (DigestDeviceChunks): every chunk of every buffer, buffer after
// buffer, each digested as the kernel's block does, then each buffer's run combined, equals the
// digest of each buffer on its own; an empty buffer has its one chunk.
TEST(DigestKernelLogicTest, ChunkTableCoversEveryBufferInOrder) {
  const std::vector<size_t> sizes = {0, 5, 241, kMiB, kMiB + 241, 3 * kMiB + 7, 100};
  std::vector<std::vector<uint8_t>> buffers;
  std::vector<cuda_digest::ChunkTask> tasks;
  for (size_t i = 0; i < sizes.size(); ++i) {
    buffers.push_back(RandomBytes(sizes[i], static_cast<uint32_t>(10 + i)));
    cuda_digest::AppendChunkTasks(sizes[i] ? buffers.back().data() : nullptr, sizes[i], tasks);
  }
  size_t expected_tasks = 0;
  for (size_t n : sizes) expected_tasks += n == 0 ? 1 : (n + kMiB - 1) / kMiB;
  ASSERT_EQ(tasks.size(), expected_tasks);
  std::vector<Digest128> chunk_digests;
  for (const cuda_digest::ChunkTask& task : tasks) {
    ASSERT_LE(task.len, kMiB);
    const xxh3::Hash128 h = ChunkLikeTheKernel(task.data, task.len, 0);
    chunk_digests.push_back(Digest128{h.high, h.low});
  }
  size_t at = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    SCOPED_TRACE("buffer " + std::to_string(i) + " of " + std::to_string(sizes[i]) + " bytes");
    const size_t count = sizes[i] == 0 ? 1 : (sizes[i] + kMiB - 1) / kMiB;
    const std::vector<int64_t> shape = {static_cast<int64_t>(sizes[i])};
    const std::string descriptor = DigestDescriptor("uint8", shape.data(), shape.size(), sizes[i]);
    EXPECT_EQ(CombineChunkDigests(chunk_digests.data() + at, count, descriptor),
              DigestBytes(buffers[i].data(), sizes[i], "uint8", shape));
    at += count;
  }
}

// ---- The norms' sums of squares (chunk_squares.cuh) ----

// One chunk's sum as ChunkSquaresKernel computes it, through the kernel's own functions: tile
// after tile, every thread of the block loads its share into the tile (the barrier), then warp 0's
// 32 lanes add it; lane 0 combines the 32 pairwise. The tile is filled with a marker first, so a
// value no thread loaded would be summed as the marker.
template <typename T>
double ChunkSquaresLikeTheKernel(const T* values, size_t count) {
  constexpr size_t kTile = cuda_digest::kTileValues<T>;
  T marker;
  std::memset(&marker, 0x7b, sizeof(T));
  std::vector<T> tile(kTile);
  double lanes[cuda_digest::kSquareLanes] = {};
  for (size_t first = 0; first < count; first += kTile) {
    const size_t n = std::min(kTile, count - first);
    std::fill(tile.begin(), tile.end(), marker);
    for (int thread = 0; thread < cuda_digest::kSquareThreads; ++thread) {
      cuda_digest::LoadTileShare(values + first, n, tile.data(), thread);
    }
    for (int lane = 0; lane < cuda_digest::kSquareLanes; ++lane) {
      lanes[lane] = cuda_digest::LaneSquareSumOfTile(tile.data(), n, lane, lanes[lane]);
    }
  }
  return cuda_digest::PairwiseTotal(lanes);
}

// Each thread loads only its own share: no value is loaded by two threads or by none, in a full
// tile and in a chunk's last, partial one.
TEST(ChunkSquaresLogicTest, TheThreadsShareOfATileCoverItOnce) {
  constexpr size_t kTile = cuda_digest::kTileValues<float>;
  std::vector<float> values(kTile);
  for (size_t i = 0; i < kTile; ++i) values[i] = static_cast<float>(i + 1);
  for (size_t n : {kTile, kTile - 1, size_t{33}, size_t{1}}) {
    std::vector<int> loads(kTile, 0);
    for (int thread = 0; thread < cuda_digest::kSquareThreads; ++thread) {
      std::vector<float> tile(kTile, 0.0f);
      cuda_digest::LoadTileShare(values.data(), n, tile.data(), thread);
      for (size_t i = 0; i < kTile; ++i) {
        if (tile[i] != 0.0f) {
          EXPECT_EQ(tile[i], values[i]) << "value " << i;
          ++loads[i];
        }
      }
    }
    for (size_t i = 0; i < kTile; ++i) {
      ASSERT_EQ(loads[i], i < n ? 1 : 0) << "value " << i << " of a tile of " << n;
    }
  }
}

// Values of a few binades, none dominating the sum: a sum in another order rounds differently.
template <typename T>
std::vector<T> SpreadValues(size_t n, uint32_t seed) {
  return testing::ValuesOverExponents<T>(n, seed, -3, 3);
}

using testing::Bits;

template <typename T>
void ExpectChunkSumsLikeTheCpu(uint32_t seed) {
  const size_t per_chunk = kMiB / sizeof(T);
  const std::vector<T> values = SpreadValues<T>(per_chunk, seed);
  for (size_t n : {size_t{1}, size_t{5}, size_t{31}, size_t{32}, size_t{33}, size_t{63}, size_t{64}, size_t{100},
                   size_t{1000}, size_t{4097}, per_chunk - 1, per_chunk}) {
    SCOPED_TRACE(std::to_string(sizeof(T)) + "-byte values, " + std::to_string(n));
    EXPECT_EQ(Bits(ChunkSquaresLikeTheKernel(values.data(), n)), Bits(SumOfSquares(values.data(), n)));
  }
}

TEST(ChunkSquaresLogicTest, ChunkSumsAreTheCpuDefinitionBitForBit) {
  ExpectChunkSumsLikeTheCpu<float>(20);
  ExpectChunkSumsLikeTheCpu<double>(21);
}

// float16 and bfloat16 chunks (since 2026-11-29): the kernel's lanes widen each value as the CPU's
// loop does (half_floats.h), in the same order.
template <typename T>
void ExpectSixteenBitChunkSumsLikeTheCpu(unsigned min_field, unsigned max_field, uint32_t seed) {
  const size_t per_chunk = kMiB / sizeof(T);
  const std::vector<T> values = testing::SixteenBitValues<T>(per_chunk, seed, min_field, max_field);
  for (size_t n : {size_t{1}, size_t{31}, size_t{33}, size_t{100}, size_t{4097}, per_chunk - 1, per_chunk}) {
    SCOPED_TRACE(std::to_string(n) + " 16-bit values");
    EXPECT_EQ(Bits(ChunkSquaresLikeTheKernel(values.data(), n)), Bits(SumOfSquares(values.data(), n)));
  }
}

// Integer and bool chunks (since 2026-11-29): converted as the CPU converts them, in the same order.
TEST(ChunkSquaresLogicTest, IntegerAndBoolChunkSumsAreTheCpuDefinitionBitForBit) {
  std::mt19937_64 gen(28);
  std::vector<int64_t> i64(kMiB / 8);
  for (int64_t& v : i64) v = static_cast<int64_t>(gen()) >> 3;  // beyond 2^53: rounded
  std::vector<int32_t> i32(kMiB / 4);
  for (int32_t& v : i32) v = static_cast<int32_t>(gen());
  std::vector<uint8_t> u8(kMiB);
  for (uint8_t& v : u8) v = static_cast<uint8_t>(gen());
  std::vector<BoolByte> b(kMiB);
  for (BoolByte& v : b) v.byte = static_cast<uint8_t>(gen() % 3);  // 0, 1 and 2 (true)
  for (size_t n : {size_t{1}, size_t{33}, size_t{4097}, size_t{131072}}) {
    SCOPED_TRACE(std::to_string(n) + " values");
    EXPECT_EQ(Bits(ChunkSquaresLikeTheKernel(i64.data(), n)), Bits(SumOfSquares(i64.data(), n)));
    EXPECT_EQ(Bits(ChunkSquaresLikeTheKernel(i32.data(), n)), Bits(SumOfSquares(i32.data(), n)));
    EXPECT_EQ(Bits(ChunkSquaresLikeTheKernel(u8.data(), n)), Bits(SumOfSquares(u8.data(), n)));
    EXPECT_EQ(Bits(ChunkSquaresLikeTheKernel(b.data(), n)), Bits(SumOfSquares(b.data(), n)));
  }
  std::vector<cuda_digest::SquareTask> tasks;
  cuda_digest::AppendSquareTasks(u8.data(), u8.size(), SquaredAs::kUInt8, tasks);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].count, kMiB) << "1 MiB of 1-byte values a chunk";
}

TEST(ChunkSquaresLogicTest, SixteenBitChunkSumsAreTheCpuDefinitionBitForBit) {
  ExpectSixteenBitChunkSumsLikeTheCpu<Float16Bits>(0, 30, 25);
  ExpectSixteenBitChunkSumsLikeTheCpu<BFloat16Bits>(120, 134, 26);
  std::vector<cuda_digest::SquareTask> tasks;
  const std::vector<BFloat16Bits> values = testing::SixteenBitValues<BFloat16Bits>(kMiB / 2 + 3, 27, 120, 134);
  cuda_digest::AppendSquareTasks(reinterpret_cast<const uint8_t*>(values.data()), values.size() * 2,
                                 SquaredAs::kBFloat16, tasks);
  ASSERT_EQ(tasks.size(), 2u) << "1 MiB of 2-byte values a chunk";
  EXPECT_EQ(tasks[0].count, kMiB / 2);
  EXPECT_EQ(tasks[1].count, 3u);
}

TEST(ChunkSquaresLogicTest, TheComparisonSeesTheOrder) {
  // The same squares added in one sequence (as a naive loop would) give other bits on this data:
  // the test above would notice a kernel that added in another order.
  const std::vector<double> values = SpreadValues<double>(4096, 22);
  double sequential = 0.0;
  for (double v : values) sequential += v * v;
  EXPECT_NE(Bits(sequential), Bits(ChunkSquaresLikeTheKernel(values.data(), values.size())));
}

TEST(ChunkSquaresLogicTest, NonFiniteValuesPropagate) {
  std::vector<float> values = SpreadValues<float>(100, 23);
  values[40] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isinf(ChunkSquaresLikeTheKernel(values.data(), values.size())));
  values[41] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(ChunkSquaresLikeTheKernel(values.data(), values.size())));
}

// A buffer of several chunks through the launch's task table: the chunks' sums added in order are
// the sum TensorL2Norm takes the root of on the CPU (SumOfSquares per 1 MiB chunk, in order).
TEST(ChunkSquaresLogicTest, TasksCoverEveryChunkOfTheMarkedBuffers) {
  const size_t n = 3 * kMiB / sizeof(float) + 7;
  const std::vector<float> values = SpreadValues<float>(n, 24);
  const auto* bytes = reinterpret_cast<const uint8_t*>(values.data());
  std::vector<cuda_digest::SquareTask> tasks;
  cuda_digest::AppendSquareTasks(bytes, n * sizeof(float), SquaredAs::kNone, tasks);
  cuda_digest::AppendSquareTasks(bytes, 0, SquaredAs::kFloat32, tasks);
  EXPECT_TRUE(tasks.empty()) << "an unmarked or empty buffer has no task";
  cuda_digest::AppendSquareTasks(bytes, n * sizeof(float), SquaredAs::kFloat32, tasks);
  ASSERT_EQ(tasks.size(), 4u);
  double sum = 0.0;
  for (const cuda_digest::SquareTask& task : tasks) {
    EXPECT_EQ(task.as, SquaredAs::kFloat32);
    sum += ChunkSquaresLikeTheKernel(reinterpret_cast<const float*>(task.data), task.count);
  }
  EXPECT_EQ(tasks.back().count, 7u);
  double want = 0.0;
  const size_t per_chunk = kMiB / sizeof(float);
  for (size_t i = 0; i < n; i += per_chunk) want += SumOfSquares(values.data() + i, std::min(per_chunk, n - i));
  EXPECT_EQ(Bits(sum), Bits(want));

  tasks.clear();
  cuda_digest::AppendSquareTasks(bytes, 2 * kMiB, SquaredAs::kFloat64, tasks);
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0].count, kMiB / 8);
}

}  // namespace
}  // namespace lockstep
