// The CUDA digest on a real device against the CPU digest, on random buffers of odd sizes, from
// aligned and misaligned device pointers. Skips, saying why, on a machine without a GPU
// (digest_kernel_test.cc covers the kernel's logic on the CPU there).
#include "harness/capture/cuda/cuda_digest.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <string>
#include <thread>
#include <vector>

#include "harness/trace/digest.h"
#include "harness/trace/sum_of_squares.h"
#include "harness/trace/testing/norm_test_values.h"

namespace lockstep {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

class CudaDigestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
  }
};

// A device buffer freed at scope exit.
struct DeviceMemory {
  explicit DeviceMemory(size_t n) { ok = cudaMalloc(&ptr, n == 0 ? 1 : n) == cudaSuccess; }
  ~DeviceMemory() {
    if (ptr) cudaFree(ptr);
  }
  void* ptr = nullptr;
  bool ok = false;
};

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(n);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  return b;
}

TEST_F(CudaDigestTest, MatchesCpuOnOddSizes) {
  const std::vector<size_t> sizes = {0,        1,   3,        17,      129,      240,          241,
                                     1000,     kMiB - 1, kMiB, kMiB + 7, 5 * kMiB + 13, 17 * kMiB + 5};
  const std::vector<uint8_t> host = RandomBytes(17 * kMiB + 5 + 16, 42);
  DeviceMemory device(host.size());
  ASSERT_TRUE(device.ok);
  ASSERT_EQ(cudaMemcpy(device.ptr, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  for (size_t offset : {size_t{0}, size_t{1}, size_t{8}}) {  // 16-byte aligned, then two misalignments
    for (size_t n : sizes) {
      SCOPED_TRACE("size " + std::to_string(n) + " offset " + std::to_string(offset));
      const std::vector<int64_t> shape = {static_cast<int64_t>(n)};
      const auto* p = static_cast<const uint8_t*>(device.ptr) + offset;
      Result<Digest128> gpu = DigestDeviceBuffer(p, n, "uint8", shape, nullptr);
      ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
      EXPECT_EQ(gpu.value(), DigestBytes(host.data() + offset, n, "uint8", shape));
    }
  }
}

TEST_F(CudaDigestTest, DtypeAndShapeArePartOfTheDigest) {
  const std::vector<uint8_t> host = RandomBytes(4096, 7);
  DeviceMemory device(host.size());
  ASSERT_TRUE(device.ok);
  ASSERT_EQ(cudaMemcpy(device.ptr, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  Result<Digest128> a = DigestDeviceBuffer(device.ptr, host.size(), "float32", {32, 32}, nullptr);
  Result<Digest128> b = DigestDeviceBuffer(device.ptr, host.size(), "int32", {1024}, nullptr);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a.value(), b.value());
  EXPECT_EQ(a.value(), DigestBytes(host.data(), host.size(), "float32", std::vector<int64_t>{32, 32}));
}

TEST_F(CudaDigestTest, OnAStreamAfterQueuedWork) {
  // The digest must see what was queued on its stream before it, not stale bytes.
  const size_t n = 3 * kMiB + 11;
  const std::vector<uint8_t> host = RandomBytes(n, 9);
  DeviceMemory device(n);
  ASSERT_TRUE(device.ok);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(device.ptr, 0, n, stream), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(device.ptr, host.data(), n, cudaMemcpyHostToDevice, stream), cudaSuccess);
  Result<Digest128> gpu = DigestDeviceBuffer(device.ptr, n, "uint8", {static_cast<int64_t>(n)}, stream);
  cudaStreamDestroy(stream);
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(gpu.value(), DigestBytes(host.data(), n, "uint8", std::vector<int64_t>{static_cast<int64_t>(n)}));
}

int Device() {
  int d = 0;
  cudaGetDevice(&d);
  return d;
}

// Many buffers in one launch (what a step's capture of CUDA tensors uses): each buffer's run of
// chunk digests, combined, is its digest; aligned, misaligned and empty buffers in one table.
TEST_F(CudaDigestTest, ManyBuffersInOneLaunch) {
  const std::vector<uint8_t> host = RandomBytes(9 * kMiB, 21);
  DeviceMemory device(host.size());
  ASSERT_TRUE(device.ok);
  ASSERT_EQ(cudaMemcpy(device.ptr, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  const auto* base = static_cast<const uint8_t*>(device.ptr);
  // (offset, bytes): the first two overlap, as views of one tensor may.
  const std::vector<std::pair<size_t, size_t>> spans = {
      {0, 1000}, {16, 5 * kMiB + 13}, {3, 241}, {0, 0}, {kMiB + 8, kMiB}, {7 * kMiB, 2 * kMiB}, {1, 17}};
  std::vector<lockstep::DeviceBuffer> buffers;
  for (const auto& [offset, n] : spans) buffers.push_back(lockstep::DeviceBuffer{base + offset, n});
  Result<std::vector<Digest128>> chunks = DigestDeviceChunks(buffers, Device(), nullptr);
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  size_t at = 0;
  for (const auto& [offset, n] : spans) {
    SCOPED_TRACE("offset " + std::to_string(offset) + " bytes " + std::to_string(n));
    const size_t count = n == 0 ? 1 : (n + kMiB - 1) / kMiB;
    ASSERT_LE(at + count, chunks->size());
    const std::vector<int64_t> shape = {static_cast<int64_t>(n)};
    EXPECT_EQ(CombineChunkDigests(chunks->data() + at, count, DigestDescriptor("uint8", shape.data(), 1, n)),
              DigestBytes(host.data() + offset, n, "uint8", shape));
    at += count;
  }
  EXPECT_EQ(at, chunks->size());
  // A host pointer among them is refused before anything is launched.
  buffers.push_back(lockstep::DeviceBuffer{host.data(), 100});
  Result<std::vector<Digest128>> bad = DigestDeviceChunks(buffers, Device(), nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

using testing::Bits;

// Values of a few binades, none dominating the sum: a sum in another order rounds differently.
template <typename T>
std::vector<T> SpreadValues(size_t n, uint32_t seed) {
  return testing::ValuesOverExponents<T>(n, seed, -3, 3);
}

// The norm kernel on the device against the CPU's definition (SumOfSquares of each 1 MiB chunk),
// bit for bit, with the digests of the same launch still right, for float32 and float64 buffers
// beside an unmarked one, and through SquareSumDeviceChunks alone.
template <typename T>
void ExpectDeviceSquareSumsLikeTheCpu(SquaredAs as, uint32_t seed) {
  const size_t per_chunk = kMiB / sizeof(T);
  const std::vector<size_t> counts = {1, 31, 33, 1000, per_chunk, 3 * per_chunk + 5};
  size_t total = 0;
  for (size_t n : counts) total += n;
  const std::vector<T> host = SpreadValues<T>(total, seed);
  DeviceMemory device(total * sizeof(T));
  ASSERT_TRUE(device.ok);
  ASSERT_EQ(cudaMemcpy(device.ptr, host.data(), total * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<lockstep::DeviceBuffer> buffers;
  size_t at = 0;
  for (size_t n : counts) {
    buffers.push_back(lockstep::DeviceBuffer{static_cast<const T*>(device.ptr) + at, n * sizeof(T), as});
    at += n;
  }
  buffers.push_back(lockstep::DeviceBuffer{device.ptr, 4096});  // unmarked: digested, not summed
  std::vector<double> sums;
  Result<std::vector<Digest128>> chunks = DigestDeviceChunks(buffers, Device(), nullptr, &sums);
  ASSERT_TRUE(chunks.ok()) << chunks.status().ToString();
  ASSERT_EQ(sums.size(), chunks->size());
  size_t chunk = 0;
  at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const size_t n = counts[i];
    SCOPED_TRACE(std::to_string(sizeof(T)) + "-byte values, " + std::to_string(n));
    const std::vector<int64_t> shape = {static_cast<int64_t>(n * sizeof(T))};
    const size_t count = (n * sizeof(T) + kMiB - 1) / kMiB;
    EXPECT_EQ(
        CombineChunkDigests(chunks->data() + chunk, count, DigestDescriptor("uint8", shape.data(), 1, n * sizeof(T))),
        DigestBytes(host.data() + at, n * sizeof(T), "uint8", shape));
    Result<std::vector<double>> alone = SquareSumDeviceChunks(buffers[i], Device(), nullptr);
    ASSERT_TRUE(alone.ok()) << alone.status().ToString();
    ASSERT_EQ(alone->size(), count);
    for (size_t c = 0; c < count; ++c) {
      const double want = SumOfSquares(host.data() + at + c * per_chunk, std::min(per_chunk, n - c * per_chunk));
      EXPECT_EQ(Bits(sums[chunk + c]), Bits(want)) << "chunk " << c << ": " << sums[chunk + c] << " vs " << want;
      EXPECT_EQ(Bits((*alone)[c]), Bits(want)) << "chunk " << c << " alone";
    }
    chunk += count;
    at += n;
  }
  EXPECT_EQ(sums[chunk], 0.0) << "the unmarked buffer's chunk";
}

TEST_F(CudaDigestTest, SquareSumsAreTheCpuDefinitionBitForBit) {
  ExpectDeviceSquareSumsLikeTheCpu<float>(SquaredAs::kFloat32, 31);
  ExpectDeviceSquareSumsLikeTheCpu<double>(SquaredAs::kFloat64, 32);
}

// The memory DigestDeviceChunks keeps from call to call (kept_cuda_memory.h): calls that need more
// of it than the last and then less, and calls from two threads at once, each on a stream of its
// own, all give the CPU's digests and sums. `slices` buffers of `each` float32 values, from value
// `first` on, wrapping within `host`.
std::string CheckSlices(const std::vector<float>& host, const void* device, size_t slices, size_t each, size_t first,
                        cudaStream_t stream) {
  const size_t per_chunk = kMiB / sizeof(float);
  std::vector<lockstep::DeviceBuffer> buffers;
  std::vector<size_t> starts;
  for (size_t i = 0; i < slices; ++i) {
    const size_t start = (first + i * each) % (host.size() - each + 1);
    starts.push_back(start);
    buffers.push_back(
        lockstep::DeviceBuffer{static_cast<const float*>(device) + start, each * sizeof(float), SquaredAs::kFloat32, true});
  }
  std::vector<double> sums;
  Result<std::vector<Digest128>> chunks = DigestDeviceChunks(buffers, Device(), stream, &sums);
  if (!chunks.ok()) return chunks.status().ToString();
  size_t chunk = 0;
  for (size_t i = 0; i < slices; ++i) {
    const size_t bytes = each * sizeof(float);
    const size_t count = (bytes + kMiB - 1) / kMiB;
    const std::vector<int64_t> shape = {static_cast<int64_t>(bytes)};
    if (chunk + count > chunks->size()) return "too few chunk digests";
    if (!(CombineChunkDigests(chunks->data() + chunk, count, DigestDescriptor("uint8", shape.data(), 1, bytes)) ==
          DigestBytes(host.data() + starts[i], bytes, "uint8", shape))) {
      return "digest of slice " + std::to_string(i) + " of " + std::to_string(slices);
    }
    for (size_t c = 0; c < count; ++c) {
      const double want =
          SumOfSquares(host.data() + starts[i] + c * per_chunk, std::min(per_chunk, each - c * per_chunk));
      if (Bits(sums[chunk + c]) != Bits(want)) return "sum of slice " + std::to_string(i) + " chunk " + std::to_string(c);
    }
    chunk += count;
  }
  return chunk == chunks->size() ? "" : "more chunk digests than slices";
}

TEST_F(CudaDigestTest, KeptMemoryServesCallsOfEverySizeAndFromTwoThreads) {
  const size_t values = 9 * kMiB / sizeof(float);
  const std::vector<float> host = SpreadValues<float>(values, 33);
  DeviceMemory device(values * sizeof(float));
  ASSERT_TRUE(device.ok);
  ASSERT_EQ(cudaMemcpy(device.ptr, host.data(), values * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  // (slices, values each): growing, then smaller again, then the largest.
  const std::vector<std::pair<size_t, size_t>> calls = {
      {1, 100}, {4, 5000}, {64, 1000}, {3, values / 3}, {1, 7}, {512, 33}, {2, 300000}, {1, values}};
  for (const auto& [slices, each] : calls) {
    SCOPED_TRACE(std::to_string(slices) + " slices of " + std::to_string(each));
    EXPECT_EQ(CheckSlices(host, device.ptr, slices, each, 11, nullptr), "");
  }
  cudaStream_t streams[2] = {nullptr, nullptr};
  for (cudaStream_t& s : streams) ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      for (size_t k = 0; k < 40 && errors[t].empty(); ++k) {
        const auto& [slices, each] = calls[(k + 3 * t) % calls.size()];
        errors[t] = CheckSlices(host, device.ptr, slices, each, 101 * k + t, streams[t]);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  for (cudaStream_t s : streams) cudaStreamDestroy(s);
}

TEST_F(CudaDigestTest, SquareSumsOfMisalignedOrUnmarkedBuffersAreRefused) {
  DeviceMemory device(4096);
  ASSERT_TRUE(device.ok);
  const auto* base = static_cast<const uint8_t*>(device.ptr);
  std::vector<double> sums;
  Result<std::vector<Digest128>> misaligned = DigestDeviceChunks(
      {lockstep::DeviceBuffer{base + 4, 800, SquaredAs::kFloat64}}, Device(), nullptr, &sums);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_EQ(misaligned.status().code(), StatusCode::kInvalidArgument) << misaligned.status().ToString();
  Result<std::vector<double>> unmarked = SquareSumDeviceChunks(lockstep::DeviceBuffer{base, 800}, Device(), nullptr);
  ASSERT_FALSE(unmarked.ok());
  EXPECT_EQ(unmarked.status().code(), StatusCode::kInvalidArgument);
  // Without the sums asked for, the same misaligned buffer is only digested.
  EXPECT_TRUE(
      DigestDeviceChunks({lockstep::DeviceBuffer{base + 4, 800, SquaredAs::kFloat64}}, Device(), nullptr)
          .ok());
}

TEST_F(CudaDigestTest, HostPointerIsAnError) {
  const std::vector<uint8_t> host = RandomBytes(100, 1);
  Result<Digest128> r = DigestDeviceBuffer(host.data(), host.size(), "uint8", {100}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status().ToString();
}

TEST_F(CudaDigestTest, NullPointerWithBytesIsAnError) {
  Result<Digest128> r = DigestDeviceBuffer(nullptr, 16, "uint8", {16}, nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace lockstep
