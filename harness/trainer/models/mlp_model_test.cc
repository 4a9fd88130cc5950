#include "harness/trainer/models/mlp_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <set>
#include <string>

#include "harness/trainer/synthetic_data.h"

namespace lockstep {
namespace {

ModelSpec MlpSpec(NormKind norm) {
  ModelSpec spec;
  spec.kind = ModelKind::kMlp;
  spec.layers = 3;
  spec.hidden = 16;
  spec.input_dim = 12;
  spec.output_dim = 5;
  spec.norm = norm;
  return spec;
}

std::set<std::string> Names(const torch::OrderedDict<std::string, torch::Tensor>& dict) {
  std::set<std::string> names;
  for (const auto& item : dict) names.insert(item.key());
  return names;
}

TEST(MlpModel, LayersAndShapes) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  MlpModel model(MlpSpec(NormKind::kNone), gen);
  const auto params = model.module().named_parameters();
  EXPECT_EQ(params.size(), 2u * 4u);  // 3 hidden Linear + head, weight and bias each
  EXPECT_EQ(params["blocks.0.linear.weight"].sizes(), (std::vector<int64_t>{16, 12}));
  EXPECT_EQ(params["blocks.2.linear.weight"].sizes(), (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(params["head.weight"].sizes(), (std::vector<int64_t>{5, 16}));
  EXPECT_EQ(model.Forward(torch::randn({4, 12})).sizes(), (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(model.module().named_buffers().is_empty());
}

TEST(MlpModel, LayerNormAddsAffineParameters) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  MlpModel model(MlpSpec(NormKind::kLayerNorm), gen);
  const auto names = Names(model.module().named_parameters());
  EXPECT_TRUE(names.count("blocks.1.norm.weight"));
  EXPECT_TRUE(names.count("blocks.1.norm.bias"));
  EXPECT_TRUE(model.module().named_buffers().is_empty());
}

TEST(MlpModel, BatchNormRunningStatisticsAreBuffersThatMove) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  MlpModel model(MlpSpec(NormKind::kBatchNorm), gen);
  const auto buffers = Names(model.module().named_buffers());
  for (int i = 0; i < 3; ++i) {
    const std::string prefix = "blocks." + std::to_string(i) + ".norm.";
    EXPECT_TRUE(buffers.count(prefix + "running_mean"));
    EXPECT_TRUE(buffers.count(prefix + "running_var"));
    EXPECT_TRUE(buffers.count(prefix + "num_batches_tracked"));
  }
  torch::Tensor before = model.module().named_buffers()["blocks.0.norm.running_mean"].clone();
  model.module().train(true);
  ModelSpec spec = MlpSpec(NormKind::kBatchNorm);
  Batch batch = MakeBatch(spec, 3, 8, 1, 1, 0, 0, 1, torch::kCPU);
  torch::Tensor loss = model.Loss(batch);
  loss.backward();
  EXPECT_FALSE(torch::equal(before, model.module().named_buffers()["blocks.0.norm.running_mean"]));
  EXPECT_EQ(model.module().named_buffers()["blocks.0.norm.num_batches_tracked"].item<int64_t>(), 1);
  // Eval mode uses, and leaves alone, the running statistics.
  model.module().eval();
  torch::Tensor frozen = model.module().named_buffers()["blocks.0.norm.running_mean"].clone();
  (void)model.Loss(batch);
  EXPECT_TRUE(torch::equal(frozen, model.module().named_buffers()["blocks.0.norm.running_mean"]));
}

TEST(MlpModel, DropoutOnlyInTraining) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  ModelSpec spec = MlpSpec(NormKind::kNone);
  spec.dropout = 0.5;
  MlpModel model(spec, gen);
  torch::Tensor x = torch::randn({4, 12});
  model.module().eval();
  EXPECT_TRUE(torch::equal(model.Forward(x), model.Forward(x)));
  model.module().train();
  torch::manual_seed(1);
  torch::Tensor a = model.Forward(x);
  torch::Tensor b = model.Forward(x);
  EXPECT_FALSE(torch::equal(a, b));
}

TEST(MlpModel, LossIsMseAgainstTargets) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  MlpModel model(MlpSpec(NormKind::kLayerNorm), gen);
  Batch batch{torch::randn({6, 12}), torch::randn({6, 5})};
  torch::Tensor expected = (model.Forward(batch.inputs) - batch.targets).pow(2).mean();
  EXPECT_TRUE(torch::allclose(model.Loss(batch), expected));
}

}  // namespace
}  // namespace lockstep
