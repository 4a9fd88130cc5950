#include "harness/trainer/attention/sdpa_attention.h"

#include <ATen/SDPBackend.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "harness/trainer/attention/naive_attention.h"

namespace lockstep {
namespace {

// On CPU, torch 2.x runs SDPA through its own flash kernel for every shape the trainer uses (no
// mask, no dropout in evaluation): the `sdpa` attention path is a second fused kernel beside
// lockstep's own tiled flash attention, not the math fallback.
TEST(SdpaAttention, RunsTheFlashKernelOnCpu) {
  for (auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    for (bool causal : {false, true}) {
      torch::Tensor q = torch::randn({2, 4, 33, 32}).to(dtype);
      const int64_t choice = at::_fused_sdp_choice(q, q, q, /*attn_mask=*/{}, 0.0, causal);
      EXPECT_EQ(choice, static_cast<int64_t>(at::SDPBackend::flash_attention))
          << torch::toString(dtype) << (causal ? " causal" : "");
    }
  }
}

TEST(SdpaAttention, IgnoresDropoutOutsideTraining) {
  torch::manual_seed(4);
  torch::Tensor q = torch::randn({1, 2, 9, 8});
  EXPECT_TRUE(torch::equal(SdpaAttention(q, q, q, true, 0.5, /*training=*/false),
                           SdpaAttention(q, q, q, true, 0.0, /*training=*/false)));
  EXPECT_FALSE(torch::equal(SdpaAttention(q, q, q, true, 0.5, /*training=*/true),
                            SdpaAttention(q, q, q, true, 0.0, /*training=*/false)));
}

}  // namespace
}  // namespace lockstep
