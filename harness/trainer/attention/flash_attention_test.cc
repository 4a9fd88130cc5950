#include "harness/trainer/attention/flash_attention.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "harness/trainer/attention/naive_attention.h"

namespace lockstep {
namespace {

// ||a - b|| / ||b||: one figure per tensor that does not blow up on elements near zero.
double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  // A reference that is zero (the gradient of q and k at T = 1, where softmax is constant) has
  // no scale of its own: then the error is measured against 1.
  const double scale = b.norm().item<double>();
  return (a - b).norm().item<double>() / (scale > 1e-6 ? scale : 1.0);
}

struct Shape {
  int64_t b, h, t, d, tile;
  std::string ToString() const {
    return "B" + std::to_string(b) + " H" + std::to_string(h) + " T" + std::to_string(t) + " D" +
           std::to_string(d) + " tile" + std::to_string(tile);
  }
};

// Fixed corner cases (T = 1, T < tile, T a multiple of the tile, T one past it, tile 1) plus
// random shapes from a fixed seed.
std::vector<Shape> TestShapes() {
  std::vector<Shape> shapes = {{1, 1, 1, 8, 16},  {2, 2, 5, 16, 16}, {2, 2, 32, 16, 16},
                               {1, 3, 33, 32, 16}, {2, 1, 7, 4, 1},   {1, 2, 17, 64, 32}};
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> t_dist(1, 70);
  const int64_t dims[] = {8, 16, 32, 64};
  const int64_t tiles[] = {4, 16, 32};
  for (int i = 0; i < 6; ++i) {
    shapes.push_back({1 + static_cast<int64_t>(rng() % 2), 1 + static_cast<int64_t>(rng() % 3), t_dist(rng),
                      dims[rng() % 4], tiles[rng() % 3]});
  }
  return shapes;
}

struct Grads {
  torch::Tensor out, dq, dk, dv;
};

template <typename Fn>
Grads RunWithGrads(Fn attend, const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                   const torch::Tensor& dout) {
  torch::Tensor qq = q.detach().clone().requires_grad_(true);
  torch::Tensor kk = k.detach().clone().requires_grad_(true);
  torch::Tensor vv = v.detach().clone().requires_grad_(true);
  torch::Tensor out = attend(qq, kk, vv);
  auto grads = torch::autograd::grad({out}, {qq, kk, vv}, {dout});
  return {out.detach(), grads[0], grads[1], grads[2]};
}

TEST(FlashAttention, MatchesNaiveOutputsAndGradientsInFloat32) {
  torch::manual_seed(1);
  for (const Shape& s : TestShapes()) {
    for (bool causal : {false, true}) {
      SCOPED_TRACE(s.ToString() + (causal ? " causal" : " full"));
      torch::Tensor q = torch::randn({s.b, s.h, s.t, s.d});
      torch::Tensor k = torch::randn({s.b, s.h, s.t, s.d});
      torch::Tensor v = torch::randn({s.b, s.h, s.t, s.d});
      torch::Tensor dout = torch::randn({s.b, s.h, s.t, s.d});
      Grads flash = RunWithGrads(
          [&](auto& a, auto& b, auto& c) { return FlashAttention(a, b, c, causal, 0.0, true, s.tile); }, q, k, v,
          dout);
      Grads naive = RunWithGrads(
          [&](auto& a, auto& b, auto& c) { return NaiveAttention(a, b, c, causal, 0.0, true); }, q, k, v, dout);
      EXPECT_LT(RelativeError(flash.out, naive.out), 1e-5);
      EXPECT_LT(RelativeError(flash.dq, naive.dq), 1e-5);
      EXPECT_LT(RelativeError(flash.dk, naive.dk), 1e-5);
      EXPECT_LT(RelativeError(flash.dv, naive.dv), 1e-5);
    }
  }
}

TEST(FlashAttention, AcceptsNonContiguousInputs) {
  // The transformer hands in q, k, v as strided views of one qkv projection.
  torch::manual_seed(2);
  torch::Tensor qkv = torch::randn({2, 19, 3, 2, 8}).permute({2, 0, 3, 1, 4});
  ASSERT_FALSE(qkv[0].is_contiguous());
  torch::Tensor flash = FlashAttention(qkv[0], qkv[1], qkv[2], true, 0.0, false, 8);
  torch::Tensor naive = NaiveAttention(qkv[0], qkv[1], qkv[2], true, 0.0, false);
  EXPECT_LT(RelativeError(flash, naive), 1e-5);
}

TEST(FlashAttention, LogSumExpIsThatOfTheMaskedScores) {
  torch::manual_seed(3);
  torch::Tensor q = torch::randn({2, 2, 21, 16}, torch::kDouble);
  torch::Tensor k = torch::randn({2, 2, 21, 16}, torch::kDouble);
  torch::Tensor v = torch::randn({2, 2, 21, 16}, torch::kDouble);
  FlashForwardResult r = FlashAttentionForward(q, k, v, /*causal=*/true, /*tile=*/8);
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(16.0);
  scores = scores.masked_fill(torch::ones({21, 21}, torch::kBool).triu(1), -INFINITY);
  EXPECT_LT(RelativeError(r.lse, torch::logsumexp(scores, -1)), 1e-12);
}

TEST(FlashAttention, CausalFirstQueryAttendsOnlyToFirstKey) {
  torch::manual_seed(4);
  torch::Tensor q = torch::randn({1, 2, 9, 8});
  torch::Tensor k = torch::randn({1, 2, 9, 8});
  torch::Tensor v = torch::randn({1, 2, 9, 8});
  torch::Tensor out = FlashAttention(q, k, v, true, 0.0, false, 4);
  using torch::indexing::Slice;
  EXPECT_TRUE(torch::allclose(out.index({Slice(), Slice(), 0}), v.index({Slice(), Slice(), 0})));
}

// A gradcheck: the analytic vector-Jacobian product of the custom backward against central
// differences of the forward, in double precision, element by element.
TEST(FlashAttention, BackwardMatchesFiniteDifferencesInFloat64) {
  torch::manual_seed(5);
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    // T = 7 with tile 3: full tiles, a ragged last tile, and (causal) skipped tiles.
    std::vector<torch::Tensor> inputs = {torch::randn({1, 2, 7, 3}, opts), torch::randn({1, 2, 7, 3}, opts),
                                         torch::randn({1, 2, 7, 3}, opts)};
    torch::Tensor weights = torch::randn({1, 2, 7, 3}, opts);
    auto objective = [&](const std::vector<torch::Tensor>& x) {
      return (FlashAttention(x[0], x[1], x[2], causal, 0.0, false, 3) * weights).sum();
    };
    std::vector<torch::Tensor> leaves;
    for (auto& t : inputs) leaves.push_back(t.clone().requires_grad_(true));
    auto analytic = torch::autograd::grad({objective(leaves)}, leaves);

    torch::NoGradGuard no_grad;
    const double eps = 1e-6;
    for (size_t which = 0; which < inputs.size(); ++which) {
      torch::Tensor numeric = torch::zeros_like(inputs[which]);
      torch::Tensor flat = inputs[which].view(-1);
      for (int64_t e = 0; e < flat.numel(); ++e) {
        const double orig = flat[e].item<double>();
        flat[e] = orig + eps;
        const double plus = objective(inputs).item<double>();
        flat[e] = orig - eps;
        const double minus = objective(inputs).item<double>();
        flat[e] = orig;
        numeric.view(-1)[e] = (plus - minus) / (2 * eps);
      }
      EXPECT_TRUE(torch::allclose(analytic[which], numeric, /*rtol=*/1e-6, /*atol=*/1e-8))
          << "input " << which << " max abs diff " << (analytic[which] - numeric).abs().max().item<double>();
    }
  }
}

TEST(FlashAttention, DropoutActsOnTheOutputOnlyWhenTraining) {
  torch::manual_seed(6);
  torch::Tensor q = torch::randn({1, 1, 10, 8});
  torch::Tensor eval = FlashAttention(q, q, q, true, 0.5, /*training=*/false);
  EXPECT_TRUE(torch::equal(eval, FlashAttention(q, q, q, true, 0.0, false)));
  torch::Tensor train = FlashAttention(q, q, q, true, 0.5, /*training=*/true);
  const int64_t zeros = (train == 0).sum().item<int64_t>();
  EXPECT_GT(zeros, 0);
  EXPECT_LT(zeros, train.numel());
}

TEST(FlashAttention, RejectsBadShapesAndTiles) {
  torch::Tensor x = torch::randn({1, 1, 4, 8});
  EXPECT_THROW(FlashAttention(x, x, x, true, 0.0, false, 0), c10::Error);
  EXPECT_THROW(FlashAttention(x.view({4, 8}), x, x, true, 0.0, false), c10::Error);
  EXPECT_THROW(FlashAttention(x, torch::randn({1, 1, 4, 4}), x, true, 0.0, false), c10::Error);
}

}  // namespace
}  // namespace lockstep
