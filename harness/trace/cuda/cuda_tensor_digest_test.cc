// DigestTensor on CUDA tensors (hashed on the device, harness/trace/cuda) against the digest of
// their CPU copies. Needs a LibTorch built with CUDA and a GPU (ci/gpu-checks.sh builds against
// the pip wheel's); skips with the reason otherwise.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include "harness/trace/tensor_digest.h"

namespace lockstep {
namespace {

class CudaTensorDigestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "this LibTorch has no CUDA or sees no GPU (torch::cuda::is_available() is false)";
    }
  }
};

TEST_F(CudaTensorDigestTest, DeviceTensorsDigestLikeTheirCpuCopies) {
  torch::manual_seed(3);
  for (int64_t n : {0, 1, 7, 1000, (1 << 20) / 4 + 3, 3 << 20}) {
    SCOPED_TRACE("numel " + std::to_string(n));
    torch::Tensor cpu = torch::randn({n});
    torch::Tensor gpu = cpu.to(torch::kCUDA);
    EXPECT_EQ(DigestTensor(gpu), DigestTensor(cpu));
  }
}

TEST_F(CudaTensorDigestTest, ViewsAndDtypesOnTheDevice) {
  torch::Tensor cpu = torch::randn({300, 500});
  torch::Tensor gpu = cpu.to(torch::kCUDA);
  EXPECT_EQ(DigestTensor(gpu.t()), DigestTensor(cpu.t().contiguous()));
  EXPECT_EQ(DigestTensor(gpu.narrow(1, 3, 100)), DigestTensor(cpu.narrow(1, 3, 100).contiguous()));
  EXPECT_EQ(DigestTensor(gpu.to(torch::kBFloat16)), DigestTensor(cpu.to(torch::kBFloat16)));
}

TEST_F(CudaTensorDigestTest, RecordOfADeviceTensor) {
  torch::Tensor cpu = torch::randn({64, 64}, torch::kFloat64);
  Result<TensorRecord> r = MakeTensorRecord("w", TensorKind::kParam, cpu.to(torch::kCUDA));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->digest, DigestTensor(cpu));
  EXPECT_NEAR(r->norm, TensorL2Norm(cpu), 1e-9 * TensorL2Norm(cpu));
}

}  // namespace
}  // namespace lockstep
