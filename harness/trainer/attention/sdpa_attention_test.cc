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
