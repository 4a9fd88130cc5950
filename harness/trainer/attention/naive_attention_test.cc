#include "harness/trainer/attention/naive_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace lockstep {
namespace {

using torch::indexing::Slice;

TEST(NaiveAttention, EqualKeysGiveTheMeanOfTheValues) {
  torch::manual_seed(1);
  torch::Tensor q = torch::randn({2, 2, 6, 4});
  torch::Tensor k = torch::randn({2, 2, 1, 4}).expand({2, 2, 6, 4});
  torch::Tensor v = torch::randn({2, 2, 6, 4});
  torch::Tensor out = NaiveAttention(q, k, v, /*causal=*/false, 0.0, false);
  EXPECT_TRUE(torch::allclose(out, v.mean(2, /*keepdim=*/true).expand_as(out), 1e-5, 1e-6));
}

TEST(NaiveAttention, CausalQueryIgnoresLaterKeys) {
  torch::manual_seed(2);
  torch::Tensor q = torch::randn({1, 2, 8, 4});
  torch::Tensor k = torch::randn({1, 2, 8, 4});
  torch::Tensor v = torch::randn({1, 2, 8, 4});
  torch::Tensor out = NaiveAttention(q, k, v, true, 0.0, false);
  EXPECT_TRUE(torch::allclose(out.index({Slice(), Slice(), 0}), v.index({Slice(), Slice(), 0})));
  // Changing the last key and value changes only the last query's output.
  torch::Tensor k2 = k.clone();
  torch::Tensor v2 = v.clone();
  k2.index_put_({Slice(), Slice(), 7}, 5.0);
  v2.index_put_({Slice(), Slice(), 7}, -3.0);
  torch::Tensor out2 = NaiveAttention(q, k2, v2, true, 0.0, false);
  EXPECT_TRUE(torch::equal(out.index({Slice(), Slice(), Slice(0, 7)}), out2.index({Slice(), Slice(), Slice(0, 7)})));
  EXPECT_FALSE(torch::allclose(out.index({Slice(), Slice(), 7}), out2.index({Slice(), Slice(), 7})));
}

TEST(NaiveAttention, DropoutOnlyWhenTraining) {
  torch::manual_seed(3);
  torch::Tensor q = torch::randn({1, 1, 16, 8});
  EXPECT_TRUE(torch::equal(NaiveAttention(q, q, q, true, 0.5, false), NaiveAttention(q, q, q, true, 0.0, false)));
  EXPECT_FALSE(torch::equal(NaiveAttention(q, q, q, true, 0.5, true), NaiveAttention(q, q, q, true, 0.0, false)));
}

}  // namespace
}  // namespace lockstep
