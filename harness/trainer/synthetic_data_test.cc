#include "harness/trainer/synthetic_data.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace lockstep {
namespace {

// ToString(ModelKind) belongs to the scenario library, which this test does not link.
const char* Name(ModelKind kind) { return kind == ModelKind::kMlp ? "mlp" : "transformer"; }

ModelSpec Spec(ModelKind kind) {
  ModelSpec spec;
  spec.kind = kind;
  spec.seq_len = 12;
  spec.vocab = 40;
  spec.input_dim = 10;
  spec.output_dim = 3;
  return spec;
}

TEST(MakeBatch, ShapesAndTypes) {
  Batch mlp = MakeBatch(Spec(ModelKind::kMlp), 1, 5, 1, 1, 0, 0, 1, torch::kCPU);
  EXPECT_EQ(mlp.inputs.sizes(), (std::vector<int64_t>{5, 10}));
  EXPECT_EQ(mlp.targets.sizes(), (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(mlp.inputs.scalar_type(), torch::kFloat);
  EXPECT_EQ(mlp.targets.scalar_type(), torch::kFloat);
  EXPECT_TRUE((mlp.targets.abs() < 1).all().item<bool>());  // tanh of the teacher

  Batch lm = MakeBatch(Spec(ModelKind::kTransformer), 1, 5, 1, 1, 0, 0, 1, torch::kCPU);
  EXPECT_EQ(lm.inputs.sizes(), (std::vector<int64_t>{5, 12}));
  EXPECT_EQ(lm.targets.sizes(), (std::vector<int64_t>{5, 12}));
  EXPECT_EQ(lm.inputs.scalar_type(), torch::kLong);
  EXPECT_TRUE((lm.inputs >= 0).all().item<bool>() && (lm.inputs < 40).all().item<bool>());
  EXPECT_TRUE((lm.targets >= 0).all().item<bool>() && (lm.targets < 40).all().item<bool>());
}

TEST(MakeBatch, TargetsAreTheNextTokens) {
  Batch lm = MakeBatch(Spec(ModelKind::kTransformer), 3, 6, 1, 2, 0, 0, 1, torch::kCPU);
  using torch::indexing::None;
  using torch::indexing::Slice;
  EXPECT_TRUE(torch::equal(lm.targets.index({Slice(), Slice(0, -1)}), lm.inputs.index({Slice(), Slice(1, None)})));
}

// DistributedSampler semantics: the N ranks' micro-batches of a step, in rank order, are the
// 1-rank micro-batch of N times the size, bit for bit.
TEST(MakeBatch, SameGlobalBatchWhateverTheWorldSize) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kTransformer}) {
    const ModelSpec spec = Spec(kind);
    for (int world : {2, 3, 4}) {
      for (int64_t step : {1, 5}) {
        for (int micro : {0, 1}) {
          SCOPED_TRACE(std::string(Name(kind)) + " world " + std::to_string(world) + " step " +
                       std::to_string(step) + " micro " + std::to_string(micro));
          Batch whole = MakeBatch(spec, 77, 3 * world, 2, step, micro, 0, 1, torch::kCPU);
          std::vector<torch::Tensor> inputs, targets;
          for (int rank = 0; rank < world; ++rank) {
            Batch part = MakeBatch(spec, 77, 3, 2, step, micro, rank, world, torch::kCPU);
            inputs.push_back(part.inputs);
            targets.push_back(part.targets);
          }
          EXPECT_TRUE(torch::equal(torch::cat(inputs), whole.inputs));
          EXPECT_TRUE(torch::equal(torch::cat(targets), whole.targets));
        }
      }
    }
  }
}

TEST(MakeBatch, StepsMicroStepsRanksAndSeedsGiveDifferentData) {
  for (ModelKind kind : {ModelKind::kMlp, ModelKind::kTransformer}) {
    SCOPED_TRACE(Name(kind));
    const ModelSpec spec = Spec(kind);
    Batch base = MakeBatch(spec, 5, 4, 2, 1, 0, 0, 2, torch::kCPU);
    EXPECT_TRUE(torch::equal(base.inputs, MakeBatch(spec, 5, 4, 2, 1, 0, 0, 2, torch::kCPU).inputs));
    EXPECT_FALSE(torch::equal(base.inputs, MakeBatch(spec, 5, 4, 2, 2, 0, 0, 2, torch::kCPU).inputs));
    EXPECT_FALSE(torch::equal(base.inputs, MakeBatch(spec, 5, 4, 2, 1, 1, 0, 2, torch::kCPU).inputs));
    EXPECT_FALSE(torch::equal(base.inputs, MakeBatch(spec, 5, 4, 2, 1, 0, 1, 2, torch::kCPU).inputs));
    EXPECT_FALSE(torch::equal(base.inputs, MakeBatch(spec, 6, 4, 2, 1, 0, 0, 2, torch::kCPU).inputs));
  }
}

TEST(MakeBatch, SamplesWithinABatchDiffer) {
  Batch mlp = MakeBatch(Spec(ModelKind::kMlp), 1, 8, 1, 1, 0, 0, 1, torch::kCPU);
  for (int i = 1; i < 8; ++i) EXPECT_FALSE(torch::equal(mlp.inputs[0], mlp.inputs[i]));
  Batch lm = MakeBatch(Spec(ModelKind::kTransformer), 1, 8, 1, 1, 0, 0, 1, torch::kCPU);
  int distinct = 0;
  for (int i = 1; i < 8; ++i) distinct += !torch::equal(lm.inputs[0], lm.inputs[i]);
  EXPECT_GE(distinct, 6);
}

TEST(MakeBatch, RejectsOutOfRangeArguments) {
  const ModelSpec spec = Spec(ModelKind::kMlp);
  EXPECT_THROW(MakeBatch(spec, 1, 4, 1, 0, 0, 0, 1, torch::kCPU), c10::Error);   // step is 1-based
  EXPECT_THROW(MakeBatch(spec, 1, 4, 2, 1, 2, 0, 1, torch::kCPU), c10::Error);   // micro >= grad_accum
  EXPECT_THROW(MakeBatch(spec, 1, 4, 1, 1, 0, 2, 2, torch::kCPU), c10::Error);   // rank >= world
  EXPECT_THROW(MakeBatch(spec, 1, 0, 1, 1, 0, 0, 1, torch::kCPU), c10::Error);   // empty batch
}

TEST(MakeBatch, PlacesTheBatchOnTheDevice) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device on this machine";
  const ModelSpec spec = Spec(ModelKind::kTransformer);
  Batch gpu = MakeBatch(spec, 1, 4, 1, 1, 0, 0, 1, torch::Device(torch::kCUDA, 0));
  EXPECT_TRUE(gpu.inputs.is_cuda());
  EXPECT_TRUE(torch::equal(gpu.inputs.cpu(), MakeBatch(spec, 1, 4, 1, 1, 0, 0, 1, torch::kCPU).inputs));
}

}  // namespace
}  // namespace lockstep
