// DigestTensor on CUDA tensors (hashed on the device, harness/capture/cuda) against the digest of
// their CPU copies. Needs a LibTorch built with CUDA and a GPU (ci/gpu-checks.sh builds against
// the pip wheel's); skips with the reason otherwise.
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "harness/capture/multi_tensor_digest.h"
#include "harness/capture/tensor_digest.h"
#include "harness/capture/testing/tensor_record_oracle.h"

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
  EXPECT_EQ(r->norm, TensorL2Norm(cpu));  // summed on the device in the CPU's order
}

uint64_t NormBits(double v) {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// A float32/64, float16 or bfloat16 CUDA tensor's norm is summed on the device in the CPU's order:
// the same bits as the norm of its contiguous CPU copy, whatever its size (one chunk or several) or
// layout.
TEST_F(CudaTensorDigestTest, NormsAreTheCpuCopysBitForBit) {
  torch::manual_seed(7);
  // float16 and bfloat16 since 2026-11-29: summed in the same launch, no LibTorch reduction.
  for (const auto dtype : {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kBFloat16}) {
    const torch::Tensor big = torch::randn({(3 << 20) + 11}, torch::TensorOptions().dtype(dtype).device(torch::kCUDA));
    const std::vector<torch::Tensor> list = {
        torch::randn({1}, torch::TensorOptions().dtype(dtype).device(torch::kCUDA)),
        torch::randn({1000}, torch::TensorOptions().dtype(dtype).device(torch::kCUDA)) * 1e3,
        big,
        big.narrow(0, 3, (1 << 18) + 5),
        torch::randn({300, 500}, torch::TensorOptions().dtype(dtype).device(torch::kCUDA)).t(),
        torch::empty({0}, torch::TensorOptions().dtype(dtype).device(torch::kCUDA)),
    };
    for (size_t i = 0; i < list.size(); ++i) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " tensor " + std::to_string(i));
      EXPECT_EQ(NormBits(TensorL2Norm(list[i])), NormBits(TensorL2Norm(list[i].cpu().contiguous())));
    }
  }
}

// Integer and bool CUDA tensors (since 2026-11-29): their norms summed in the same launch, the bits
// of their CPU copies'.
TEST_F(CudaTensorDigestTest, IntegerAndBoolNormsAreTheCpuCopysBitForBit) {
  torch::manual_seed(8);
  const std::vector<torch::Tensor> list = {
      torch::randint(-1000, 1000, {(1 << 20) + 3}, torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA)),
      torch::randint(-1000, 1000, {4097}, torch::TensorOptions().dtype(torch::kInt32).device(torch::kCUDA)),
      torch::randint(-100, 100, {33}, torch::TensorOptions().dtype(torch::kInt16).device(torch::kCUDA)),
      torch::randint(-100, 100, {(3 << 20) + 1}, torch::TensorOptions().dtype(torch::kInt8).device(torch::kCUDA)),
      torch::randint(0, 255, {1000}, torch::TensorOptions().dtype(torch::kUInt8).device(torch::kCUDA)),
      torch::rand({5000}, torch::kCUDA) > 0.3,
      torch::full({}, 12, torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA)),
  };
  for (size_t i = 0; i < list.size(); ++i) {
    SCOPED_TRACE(std::string(c10::toString(list[i].scalar_type())) + " tensor " + std::to_string(i));
    EXPECT_EQ(NormBits(TensorL2Norm(list[i])), NormBits(TensorL2Norm(list[i].cpu())));
  }
}

// A step's capture of device tensors (MultiTensorDigest: one kernel launch for all digests, one
// copy for all norms) against the per-tensor path, bit for bit, on a list that mixes sizes (empty,
// short, several chunks), dtypes, views, an unaligned start, CPU tensors and an undefined one.
TEST_F(CudaTensorDigestTest, OneBatchForAStepEqualsThePerTensorPath) {
  torch::manual_seed(5);
  const torch::Tensor big = torch::randn({(3 << 20) + 11}, torch::kCUDA);
  std::vector<torch::Tensor> list = {
      torch::randn({1000}, torch::kCUDA),
      torch::empty({0}, torch::kCUDA),
      torch::randn({7}, torch::kCUDA),
      big,
      big.narrow(0, 3, (1 << 18) + 5),  // contiguous, 12 bytes past a 16-byte boundary
      torch::randn({300, 500}, torch::kCUDA).t(),
      torch::randn({64, 64}, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA)),
      torch::randn({4096}, torch::kCUDA).to(torch::kBFloat16),
      torch::arange(1000, torch::TensorOptions().dtype(torch::kInt64).device(torch::kCUDA)),
      torch::randn({100}, torch::kCUDA) > 0,
      torch::randn({50}, torch::TensorOptions().dtype(torch::kComplexFloat).device(torch::kCUDA)),
      torch::randn({33}),  // a CPU tensor in the same list
      torch::Tensor(),
  };
  MultiTensorDigest m;
  for (int round = 0; round < 2; ++round) {  // the second time with the descriptor seeds kept
    m.Clear();
    for (const torch::Tensor& t : list) m.Add(t);
    const Status s = m.Run();
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(m.size(), list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      SCOPED_TRACE("tensor " + std::to_string(i) + (list[i].defined() ? " " + std::string(c10::toString(list[i].scalar_type())) : ""));
      EXPECT_EQ(m.digest(i), DigestTensor(list[i]));
      if (list[i].defined()) {
        EXPECT_EQ(m.digest(i), DigestTensor(list[i].cpu()));
      }
      EXPECT_EQ(NormBits(m.norm(i)), NormBits(TensorL2Norm(list[i]))) << m.norm(i);
    }
  }
}

}  // namespace
}  // namespace lockstep
