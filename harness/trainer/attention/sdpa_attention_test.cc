#include "harness/trainer/attention/sdpa_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/version.h>

#include "harness/trainer/attention/attention.h"

namespace lockstep {
namespace {

double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  // A reference that is zero (the gradient of q and k at T = 1, where softmax is constant) has
  // no scale of its own: then the error is measured against 1.
  const double scale = b.norm().item<double>();
  return (a - b).norm().item<double>() / (scale > 1e-6 ? scale : 1.0);
}

TEST(SdpaAttention, AvailabilityFollowsTheLibTorchVersion) {
  EXPECT_EQ(SdpaAvailable(), TORCH_VERSION_MAJOR >= 2);
  const Status status = AttentionAvailable(AttentionKind::kSdpa);
  EXPECT_EQ(status.ok(), SdpaAvailable());
  if (!SdpaAvailable()) {
    EXPECT_EQ(status.code(), StatusCode::kUnavailable);
    EXPECT_NE(status.message().find("LibTorch >= 2.0"), std::string::npos) << status.message();
    torch::Tensor x = torch::randn({1, 1, 4, 8});
    EXPECT_THROW(SdpaAttention(x, x, x, true, 0.0, false), c10::Error);
  }
  EXPECT_TRUE(AttentionAvailable(AttentionKind::kNaive).ok());
  EXPECT_TRUE(AttentionAvailable(AttentionKind::kFlash).ok());
}

TEST(SdpaAttention, MatchesNaiveOutputsAndGradientsInFloat32) {
  if (!SdpaAvailable()) {
    GTEST_SKIP() << "at::scaled_dot_product_attention needs LibTorch >= 2.0; this build has " TORCH_VERSION;
  }
  torch::manual_seed(1);
  for (int64_t t : {1, 7, 16, 33}) {
    for (int64_t d : {8, 32}) {
      for (bool causal : {false, true}) {
        SCOPED_TRACE("T" + std::to_string(t) + " D" + std::to_string(d) + (causal ? " causal" : ""));
        torch::Tensor q = torch::randn({2, 2, t, d}, torch::requires_grad());
        torch::Tensor k = torch::randn({2, 2, t, d}, torch::requires_grad());
        torch::Tensor v = torch::randn({2, 2, t, d}, torch::requires_grad());
        torch::Tensor dout = torch::randn({2, 2, t, d});
        torch::Tensor a = SdpaAttention(q, k, v, causal, 0.0, false);
        auto ga = torch::autograd::grad({a}, {q, k, v}, {dout});
        torch::Tensor b = NaiveAttention(q, k, v, causal, 0.0, false);
        auto gb = torch::autograd::grad({b}, {q, k, v}, {dout});
        EXPECT_LT(RelativeError(a, b), 1e-5);
        for (int i = 0; i < 3; ++i) EXPECT_LT(RelativeError(ga[i], gb[i]), 1e-5) << "grad " << i;
      }
    }
  }
}

// On CUDA, SDPA dispatches to the flash kernel for bf16 (and to the memory-efficient or math
// kernel for fp32, which flash does not take). Both are compared with naive attention against a
// float64 reference, forward and backward. Tolerances (relative error in the 2-norm, docs/GPU.md):
// fp32 1e-4 (no TF32 in either path; the fused kernels reorder sums); bf16 3e-2 forward and
// backward (bf16 has an 8-bit mantissa, 3.9e-3 per rounding, and both paths round the softmax
// and the products), and SDPA may not be more than 1e-2 worse than naive bf16 itself.
TEST(SdpaCuda, MatchesNaiveInBfloat16AndFloat32ForwardAndBackward) {
  if (!SdpaAvailable()) {
    GTEST_SKIP() << "at::scaled_dot_product_attention needs LibTorch >= 2.0; this build has " TORCH_VERSION;
  }
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  torch::manual_seed(3);
  const torch::Device cuda(torch::kCUDA, 0);
  for (int64_t t : {1, 33, 128, 257}) {
    for (int64_t d : {32, 64, 128}) {
      for (bool causal : {false, true}) {
        SCOPED_TRACE("T" + std::to_string(t) + " D" + std::to_string(d) + (causal ? " causal" : ""));
        auto opts64 = torch::TensorOptions().dtype(torch::kFloat64).device(cuda);
        torch::Tensor q64 = torch::randn({2, 4, t, d}, opts64);
        torch::Tensor k64 = torch::randn({2, 4, t, d}, opts64);
        torch::Tensor v64 = torch::randn({2, 4, t, d}, opts64);
        torch::Tensor dout64 = torch::randn({2, 4, t, d}, opts64);
        auto run = [&](bool sdpa, torch::ScalarType dtype) {
          torch::Tensor q = q64.to(dtype).detach().requires_grad_();
          torch::Tensor k = k64.to(dtype).detach().requires_grad_();
          torch::Tensor v = v64.to(dtype).detach().requires_grad_();
          torch::Tensor out = sdpa ? SdpaAttention(q, k, v, causal, 0.0, false) : NaiveAttention(q, k, v, causal, 0.0, false);
          auto grads = torch::autograd::grad({out}, {q, k, v}, {dout64.to(dtype)});
          std::vector<torch::Tensor> all{out.to(torch::kFloat64)};
          for (auto& g : grads) all.push_back(g.to(torch::kFloat64));
          return all;
        };
        const auto reference = run(false, torch::kFloat64);
        const char* names[] = {"output", "grad q", "grad k", "grad v"};
        const auto sdpa32 = run(true, torch::kFloat32);
        const auto sdpa16 = run(true, torch::kBFloat16);
        const auto naive16 = run(false, torch::kBFloat16);
        for (int i = 0; i < 4; ++i) {
          for (const auto& x : {sdpa32[i], sdpa16[i]}) ASSERT_TRUE(torch::isfinite(x).all().item<bool>()) << names[i];
          EXPECT_LT(RelativeError(sdpa32[i], reference[i]), 1e-4) << names[i] << " fp32";
          const double e16 = RelativeError(sdpa16[i], reference[i]);
          EXPECT_LT(e16, 3e-2) << names[i] << " bf16";
          EXPECT_LT(e16, RelativeError(naive16[i], reference[i]) + 1e-2) << names[i] << " bf16 against naive bf16";
        }
      }
    }
  }
}

TEST(Attend, DispatchesToThePathNamed) {
  torch::manual_seed(2);
  torch::Tensor q = torch::randn({1, 2, 20, 8});
  torch::Tensor k = torch::randn({1, 2, 20, 8});
  torch::Tensor v = torch::randn({1, 2, 20, 8});
  EXPECT_TRUE(torch::equal(Attend(AttentionKind::kNaive, q, k, v, true, 0.0, false),
                           NaiveAttention(q, k, v, true, 0.0, false)));
  EXPECT_TRUE(torch::equal(Attend(AttentionKind::kFlash, q, k, v, true, 0.0, false),
                           FlashAttention(q, k, v, true, 0.0, false, kDefaultFlashTile)));
  if (SdpaAvailable()) {
    EXPECT_TRUE(torch::equal(Attend(AttentionKind::kSdpa, q, k, v, true, 0.0, false),
                             SdpaAttention(q, k, v, true, 0.0, false)));
  } else {
    EXPECT_THROW(Attend(AttentionKind::kSdpa, q, k, v, true, 0.0, false), c10::Error);
  }
}

}  // namespace
}  // namespace lockstep
