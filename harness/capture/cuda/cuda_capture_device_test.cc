// The asynchronous capture on a real GPU: the pipeline over CudaCaptureDevice gives the CPU's
// digests and norms bit for bit, never makes the host wait while the training stream is busy, and
// orders the training stream's next write after the capture's reads. Skips, saying why, on a
// machine without a GPU (capture_pipeline_test.cc tests the same ordering with threads as streams).
#include "harness/capture/cuda/cuda_capture_device.h"

#include <cuda_runtime.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/capture/capture_pipeline.h"
#include "harness/capture/cuda/cuda_digest.h"
#include "harness/capture/cuda/testing/held_kernel.h"
#include "harness/trace/digest.h"
#include "harness/trace/sum_of_squares.h"

namespace lockstep {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// About 20 s at 2 GHz: a held kernel gives up only when a call waited for it.
constexpr long long kGiveUpCycles = 40'000'000'000LL;

uint64_t Bits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

class CudaCaptureDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no usable CUDA device: " << why;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    Result<std::unique_ptr<CudaCaptureDevice>> device = CudaCaptureDevice::Create(0, /*training_stream=*/nullptr);
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = std::move(*device);
  }
  std::unique_ptr<CudaCaptureDevice> device_;
};

// float32 or float64 values on the device, and the CPU's digest and norm of them.
struct DeviceValues {
  DeviceValues(size_t n, bool float64, uint32_t seed) : float64(float64) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal;
    const size_t size = float64 ? 8 : 4;
    host.resize(n * size);
    for (size_t i = 0; i < n; ++i) {
      if (float64) {
        const double v = normal(rng);
        std::memcpy(host.data() + i * 8, &v, 8);
      } else {
        const float v = static_cast<float>(normal(rng));
        std::memcpy(host.data() + i * 4, &v, 4);
      }
    }
    ok = cudaMalloc(&data, host.empty() ? 1 : host.size()) == cudaSuccess &&
         cudaMemcpy(data, host.data(), host.size(), cudaMemcpyHostToDevice) == cudaSuccess;
  }
  ~DeviceValues() {
    if (data) cudaFree(data);
  }
  int64_t numel() const { return static_cast<int64_t>(host.size() / (float64 ? 8 : 4)); }
  CaptureBuffer Buffer() const {
    CaptureBuffer b;
    b.data = data;
    b.nbytes = host.size();
    const int64_t shape = numel();
    b.seed = DescriptorSeed(DigestDescriptor(float64 ? "float64" : "float32", &shape, 1, b.nbytes));
    b.squares = float64 ? SquaredAs::kFloat64 : SquaredAs::kFloat32;
    return b;
  }
  Digest128 CpuDigest() const {
    const int64_t shape = numel();
    return DigestBytes(host.data(), host.size(), float64 ? "float64" : "float32", &shape, 1);
  }
  // TensorL2Norm's CPU definition: the chunks' SumOfSquares added in order.
  double CpuNorm() const {
    double sum = 0.0;
    for (size_t at = 0; at < host.size(); at += kDigestChunkBytes) {
      const size_t len = std::min(kDigestChunkBytes, host.size() - at);
      sum += float64 ? SumOfSquares(reinterpret_cast<const double*>(host.data() + at), len / 8)
                     : SumOfSquares(reinterpret_cast<const float*>(host.data() + at), len / 4);
    }
    return std::sqrt(sum);
  }
  bool float64;
  std::vector<uint8_t> host;
  void* data = nullptr;
  bool ok = false;
};

TEST_F(CudaCaptureDeviceTest, DigestsAndNormsAreTheCpusBits) {
  std::vector<std::unique_ptr<DeviceValues>> values;
  uint32_t seed = 1;
  for (size_t n : {size_t{0}, size_t{1}, size_t{33}, size_t{262143}, size_t{262144}, size_t{262145}, size_t{3 * 262144 + 77}}) {
    values.push_back(std::make_unique<DeviceValues>(n, false, seed++));
  }
  for (size_t n : {size_t{7}, size_t{131072}, size_t{2 * 131072 + 5}}) values.push_back(std::make_unique<DeviceValues>(n, true, seed++));
  std::vector<CaptureBuffer> buffers;
  for (const auto& v : values) {
    ASSERT_TRUE(v->ok);
    buffers.push_back(v->Buffer());
  }
  CapturePipeline pipeline(device_.get(), 2);
  std::vector<CapturedStep> out;
  for (int64_t step = 1; step <= 5; ++step) ASSERT_TRUE(pipeline.Begin(step, buffers).ok());  // slots reused
  const Status drained = pipeline.Drain(out);
  ASSERT_TRUE(drained.ok()) << drained.ToString();
  ASSERT_EQ(out.size(), 5u);
  for (const CapturedStep& c : out) {
    for (size_t i = 0; i < values.size(); ++i) {
      SCOPED_TRACE("step " + std::to_string(c.step) + ", buffer " + std::to_string(i));
      EXPECT_EQ(c.digests[i], values[i]->CpuDigest());
      EXPECT_EQ(Bits(c.norms[i]), Bits(values[i]->CpuNorm()));
    }
  }
}

// The host never waits: with the training stream held by a kernel, Begin, GuardOverwrite and Poll
// all return (a call that synchronized would return only when the kernel gave up), the capture has
// not landed, and a write queued after the guard runs after the capture's reads: the digest is the
// values' before the write.
TEST_F(CudaCaptureDeviceTest, TheHostNeverWaitsForTheTrainingStream) {
  DeviceValues w(262144 + 5, false, 7);
  ASSERT_TRUE(w.ok);
  CapturePipeline pipeline(device_.get(), 2);
  std::vector<CapturedStep> out;
  // A first capture of the same sizes, so the slot's memory is allocated before the held one.
  ASSERT_TRUE(pipeline.Begin(1, {w.Buffer()}).ok());
  ASSERT_TRUE(pipeline.Drain(out).ok());
  out.clear();

  testing::HeldKernel held;
  ASSERT_TRUE(held.Launch(/*stream=*/nullptr, kGiveUpCycles).ok());
  const Status begun = pipeline.Begin(2, {w.Buffer()});
  const Status guarded = pipeline.GuardOverwrite();
  ASSERT_EQ(cudaMemsetAsync(w.data, 0, w.host.size(), /*stream=*/nullptr), cudaSuccess);  // the next step's write
  const Status polled = pipeline.Poll(out);
  const bool landed_while_held = !out.empty();
  held.Release();
  ASSERT_TRUE(begun.ok()) << begun.ToString();
  ASSERT_TRUE(guarded.ok()) << guarded.ToString();
  ASSERT_TRUE(polled.ok()) << polled.ToString();
  EXPECT_FALSE(landed_while_held) << "the capture landed before the training stream's step ended";
  ASSERT_TRUE(pipeline.Drain(out).ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_FALSE(held.GaveUp()) << "a capture call waited for the held training stream";
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].step, 2);
  EXPECT_EQ(out[0].digests[0], w.CpuDigest()) << "the capture read the bytes after the next step's write";
  EXPECT_THAT(pipeline.InFlight(), IsEmpty());
}

// Many steps over three slots, each step guarded and polled as a rank does: all land, in step
// order, each with its own buffer's bits.
TEST_F(CudaCaptureDeviceTest, StepsLandInOrderAcrossSlots) {
  DeviceValues a(1000, false, 11), b(1000, true, 12);
  ASSERT_TRUE(a.ok && b.ok);
  CapturePipeline pipeline(device_.get(), 3);
  std::vector<CapturedStep> out;
  for (int64_t step = 1; step <= 9; ++step) {
    ASSERT_TRUE(pipeline.Begin(step, {step % 2 ? a.Buffer() : b.Buffer()}).ok());
    ASSERT_TRUE(pipeline.GuardOverwrite().ok());
    ASSERT_TRUE(pipeline.Poll(out).ok());
  }
  ASSERT_TRUE(pipeline.Drain(out).ok());
  ASSERT_EQ(out.size(), 9u);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i].step, static_cast<int64_t>(i + 1));
    EXPECT_EQ(out[i].digests[0], (i % 2 == 0 ? a : b).CpuDigest());
  }
}

}  // namespace
}  // namespace lockstep
