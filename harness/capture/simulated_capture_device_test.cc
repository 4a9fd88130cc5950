// The asynchronous capture's results are the synchronous path's bits: the simulated device's
// chunk digests and square sums, combined by CapturePipeline, against MultiTensorDigest (what
// StepRecorder::Capture records) on the same values, digests and norms bit for bit.

#include "harness/capture/capture_pipeline.h"
#include "harness/capture/dtype_name.h"
#include "harness/capture/multi_tensor_digest.h"
#include "harness/capture/simulated_capture_device.h"
#include "harness/trace/digest.h"
#include "harness/trace/testing/norm_test_values.h"
#include <cmath>
#include <cstdint>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>
#include <string>
#include <torch/torch.h>
#include <optional>
#include <vector>

namespace lockstep {
namespace {

using ::lockstep::testing::Bits;  // harness/trace/testing/norm_test_values.h

CaptureBuffer BufferOf(const torch::Tensor& t) {
  CaptureBuffer b;
  b.data = t.const_data_ptr();
  b.nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  b.seed = DescriptorSeed(DigestDescriptor(DtypeName(t.scalar_type()), t.sizes().data(), t.sizes().size(), b.nbytes));
  b.squares = t.scalar_type() == torch::kFloat32   ? SquaredAs::kFloat32
              : t.scalar_type() == torch::kFloat64 ? SquaredAs::kFloat64
                                                   : SquaredAs::kNone;
  return b;
}

TEST(SimulatedCaptureDeviceTest, ResultsAreTheSynchronousPathsBits) {
  torch::manual_seed(47);
  // Sizes around the 32 partial sums and the 1 MiB chunk (262144 float32 values), several chunks,
  // an empty tensor, NaN and infinities, -0, and a dtype that is digested but not summed.
  std::vector<torch::Tensor> tensors;
  for (int64_t n : {1, 31, 32, 33, 1000, 262143, 262144, 262145, 3 * 262144 + 77}) tensors.push_back(torch::randn({n}));
  for (int64_t n : {7, 131072, 2 * 131072 + 5}) tensors.push_back(torch::randn({n}, torch::kFloat64));
  tensors.push_back(torch::randn({16, 64}) * 1e20);
  tensors.push_back(torch::empty({0}));
  tensors.push_back(torch::tensor({0.0f, -0.0f}));
  tensors.push_back(torch::tensor({-0.0}, torch::kFloat64));
  tensors.push_back(torch::tensor({1.0f, std::nanf(""), 2.0f}));
  tensors.push_back(torch::tensor({std::numeric_limits<double>::infinity(), 1.0}, torch::kFloat64));
  tensors.push_back(torch::arange(1000, torch::kInt64));

  MultiTensorDigest sync;
  for (const torch::Tensor& t : tensors) sync.Add(t);
  ASSERT_TRUE(sync.Run().ok());

  SimulatedCaptureDevice device({.side_streams = 2});
  CapturePipeline pipeline(&device, 2);
  std::vector<CaptureBuffer> buffers;
  for (const torch::Tensor& t : tensors) buffers.push_back(BufferOf(t));
  std::vector<CapturedStep> out;
  // Twice, so the second step reuses the first one's slot memory on the other side stream.
  for (int64_t step = 1; step <= 3; ++step) ASSERT_TRUE(pipeline.Begin(step, buffers).ok());
  ASSERT_TRUE(pipeline.Drain(out).ok());
  ASSERT_EQ(out.size(), 3u);
  for (const CapturedStep& c : out) {
    ASSERT_EQ(c.digests.size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string what = "step " + std::to_string(c.step) + ", tensor " + std::to_string(i) + " " +
                               std::string(DtypeName(tensors[i].scalar_type())) + "[" +
                               std::to_string(tensors[i].numel()) + "]";
      EXPECT_EQ(c.digests[i], sync.digest(i)) << what;
      if (buffers[i].squares == SquaredAs::kNone) {
        EXPECT_TRUE(std::isnan(c.norms[i])) << what << ": the caller's norm";
      } else {
        EXPECT_EQ(Bits(c.norms[i]), Bits(sync.norm(i))) << what << ": " << c.norms[i] << " vs " << sync.norm(i);
      }
    }
  }
}

// MultiTensorDigest::AsBuffers: a list of tensors read where they are (floating-point, integer,
// bool) becomes the device's buffers, whose captured digests and norms are the list's Run() bits;
// a list with anything Run() must copy or norm itself (a view, a complex tensor, an undefined one)
// has none.
TEST(SimulatedCaptureDeviceTest, AListsBuffersCaptureAsItsRunDigests) {
  torch::manual_seed(11);
  const std::vector<torch::Tensor> tensors = {torch::randn({33}),
                                              torch::randn({4, 5}, torch::kFloat64),
                                              torch::randn({262145}),
                                              torch::randn({524289}).to(torch::kBFloat16),  // two chunks
                                              torch::randn({77}).to(torch::kFloat16),
                                              torch::arange(-50, 50, torch::kInt64),
                                              torch::rand({65}) > 0.5,
                                              torch::empty({0})};
  MultiTensorDigest list;
  for (const torch::Tensor& t : tensors) list.Add(t);
  std::vector<CaptureBuffer> buffers;
  const std::optional<BufferPlace> place = list.AsBuffers(buffers);
  ASSERT_TRUE(place.has_value());
  EXPECT_FALSE(place->cuda);
  ASSERT_EQ(buffers.size(), tensors.size());
  // Read where they are (the last, empty, may have no storage).
  for (size_t i = 0; i + 1 < tensors.size(); ++i) EXPECT_EQ(buffers[i].data, tensors[i].const_data_ptr()) << i;
  ASSERT_TRUE(list.Run().ok());

  SimulatedCaptureDevice device;
  CapturePipeline pipeline(&device, 1);
  ASSERT_TRUE(pipeline.Begin(1, buffers).ok());
  std::vector<CapturedStep> out;
  ASSERT_TRUE(pipeline.Drain(out).ok());
  ASSERT_EQ(out.size(), 1u);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(out[0].digests[i], list.digest(i)) << "tensor " << i;
    EXPECT_EQ(Bits(out[0].norms[i]), Bits(list.norm(i))) << "tensor " << i;
  }

  const torch::Tensor w = torch::randn({3, 4});
  for (const torch::Tensor& other :
       {w.t(), torch::Tensor(), torch::complex(w, w), w.to(torch::kBFloat16).t(), torch::arange(4, torch::kInt64).view({2, 2}).t()}) {
    MultiTensorDigest mixed;
    mixed.Add(w);
    mixed.Add(other);
    EXPECT_FALSE(mixed.AsBuffers(buffers).has_value()) << (other.defined() ? DtypeName(other.scalar_type()) : "undefined");
  }
  MultiTensorDigest empty;
  EXPECT_FALSE(empty.AsBuffers(buffers).has_value()) << "an empty list";
}

}  // namespace
}  // namespace lockstep
