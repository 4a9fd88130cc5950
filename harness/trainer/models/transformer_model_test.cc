#include "harness/trainer/models/transformer_model.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <set>
#include <string>

#include "harness/trainer/synthetic_data.h"
#include "harness/trainer/training_hooks.h"

namespace lockstep {
namespace {

ModelSpec TransformerSpec(AttentionKind attention) {
  ModelSpec spec;
  spec.kind = ModelKind::kTransformer;
  spec.layers = 2;
  spec.hidden = 32;
  spec.heads = 4;
  spec.seq_len = 20;  // not a multiple of the flash tile
  spec.vocab = 50;
  spec.attention = attention;
  return spec;
}

class CountingHooks : public TrainingHooks {
 public:
  void OnAttentionForward() override { ++calls; }
  int calls = 0;
};

double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  // A reference that is zero (the gradient of q and k at T = 1, where softmax is constant) has
  // no scale of its own: then the error is measured against 1.
  const double scale = b.norm().item<double>();
  return (a - b).norm().item<double>() / (scale > 1e-6 ? scale : 1.0);
}

TEST(TransformerModel, ParameterNamesAndShapes) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  TransformerModel model(TransformerSpec(AttentionKind::kNaive), gen, nullptr);
  const auto params = model.module().named_parameters();
  std::set<std::string> names;
  for (const auto& p : params) names.insert(p.key());
  for (const char* name : {"tok_emb.weight", "pos_emb.weight", "blocks.0.ln1.weight", "blocks.0.attn.qkv.weight",
                           "blocks.0.attn.proj.weight", "blocks.1.ln2.bias", "blocks.1.mlp.fc.weight",
                           "blocks.1.mlp.proj.bias", "ln_f.weight", "lm_head.weight"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  EXPECT_EQ(params["blocks.0.attn.qkv.weight"].sizes(), (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(params["blocks.0.mlp.fc.weight"].sizes(), (std::vector<int64_t>{128, 32}));
  EXPECT_EQ(params["lm_head.weight"].sizes(), (std::vector<int64_t>{50, 32}));
  torch::Tensor tokens = torch::randint(50, {3, 20}, torch::kLong);
  EXPECT_EQ(model.Forward(tokens).sizes(), (std::vector<int64_t>{3, 20, 50}));
  EXPECT_THROW(model.Forward(torch::zeros({1, 21}, torch::kLong)), c10::Error);
}

TEST(TransformerModel, NormNoneDropsEveryLayerNorm) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  ModelSpec spec = TransformerSpec(AttentionKind::kNaive);
  spec.norm = NormKind::kNone;
  TransformerModel model(spec, gen, nullptr);
  for (const auto& p : model.module().named_parameters()) {
    EXPECT_EQ(p.key().find("ln"), std::string::npos) << p.key();
  }
  Batch batch = MakeBatch(spec, 1, 2, 1, 1, 0, 0, 1, torch::kCPU);
  EXPECT_TRUE(std::isfinite(model.Loss(batch).item<double>()));
}

TEST(TransformerModel, AttentionHookRunsOncePerLayerPerForward) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  CountingHooks hooks;
  ModelSpec spec = TransformerSpec(AttentionKind::kFlash);
  spec.layers = 3;
  TransformerModel model(spec, gen, &hooks);
  Batch batch = MakeBatch(spec, 1, 2, 1, 1, 0, 0, 1, torch::kCPU);
  (void)model.Loss(batch);
  EXPECT_EQ(hooks.calls, 3);
  model.Loss(batch).backward();  // backward recomputes per tile but is no new forward
  EXPECT_EQ(hooks.calls, 6);
}

TEST(TransformerModel, LossAtInitIsNearUniformCrossEntropy) {
  at::Generator gen = at::detail::createCPUGenerator(1);
  ModelSpec spec = TransformerSpec(AttentionKind::kNaive);
  TransformerModel model(spec, gen, nullptr);
  Batch batch = MakeBatch(spec, 7, 4, 1, 1, 0, 0, 1, torch::kCPU);
  // Small init makes the logits nearly flat: the loss starts close to log(vocab).
  EXPECT_NEAR(model.Loss(batch).item<double>(), std::log(50.0), 0.1);
}

// The flash path inside the whole model: same weights and batch as naive, so the loss and every
// parameter gradient agree within float32 tolerance.
TEST(TransformerModel, FlashAndNaiveAgreeOnLossAndGradients) {
  at::Generator gen_a = at::detail::createCPUGenerator(9);
  at::Generator gen_b = at::detail::createCPUGenerator(9);
  TransformerModel naive(TransformerSpec(AttentionKind::kNaive), gen_a, nullptr);
  TransformerModel flash(TransformerSpec(AttentionKind::kFlash), gen_b, nullptr);
  Batch batch = MakeBatch(TransformerSpec(AttentionKind::kNaive), 3, 3, 1, 1, 0, 0, 1, torch::kCPU);
  torch::Tensor la = naive.Loss(batch);
  torch::Tensor lb = flash.Loss(batch);
  EXPECT_NEAR(la.item<double>(), lb.item<double>(), 1e-5 * std::abs(la.item<double>()));
  la.backward();
  lb.backward();
  const auto pa = naive.module().named_parameters();
  const auto pb = flash.module().named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_LT(RelativeError(pb[i].value().grad(), pa[i].value().grad()), 1e-5) << pa[i].key();
  }
}

}  // namespace
}  // namespace lockstep
