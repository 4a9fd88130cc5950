#include "harness/trainer/optimizer_factory.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace lockstep {
namespace {

// What each kind of optimizer the factory makes holds for a parameter: nothing before its first
// step, then AdamW's two moments, SGD's momentum buffer (none without momentum), the tensors
// themselves (the recorder digests them where they are).
std::vector<std::string> Visited(OptimizerKind kind, double momentum, int steps) {
  torch::manual_seed(1);
  torch::Tensor w = torch::randn({3, 2}, torch::requires_grad());
  OptimizerSpec spec;
  spec.kind = kind;
  spec.lr = 0.1;
  spec.momentum = momentum;
  auto optimizer = MakeOptimizer(spec, {w});
  for (int i = 0; i < steps; ++i) {
    optimizer->zero_grad();
    (w * w).sum().backward();
    optimizer->step();
  }
  std::vector<std::string> names;
  VisitOptimizerState(*optimizer, w, [&](const std::string& name, const torch::Tensor& t) {
    names.push_back(name);
    EXPECT_EQ(t.sizes(), w.sizes()) << name;
    const auto& state = *optimizer->state().at(w.unsafeGetTensorImpl());
    if (name == "exp_avg") {
      EXPECT_TRUE(t.is_same(static_cast<const torch::optim::AdamWParamState&>(state).exp_avg()));
    }
    if (name == "momentum_buffer") {
      EXPECT_TRUE(t.is_same(static_cast<const torch::optim::SGDParamState&>(state).momentum_buffer()));
    }
  });
  return names;
}

TEST(OptimizerStateTest, EachOptimizersStateIsVisitedAfterItsFirstStep) {
  using Names = std::vector<std::string>;
  EXPECT_EQ(Visited(OptimizerKind::kAdamW, 0.0, 0), Names{});
  EXPECT_EQ(Visited(OptimizerKind::kAdamW, 0.0, 2), (Names{"exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(Visited(OptimizerKind::kSgd, 0.9, 0), Names{});
  EXPECT_EQ(Visited(OptimizerKind::kSgd, 0.9, 2), Names{"momentum_buffer"});
  EXPECT_EQ(Visited(OptimizerKind::kSgd, 0.0, 2), Names{});
}

}  // namespace
}  // namespace lockstep
