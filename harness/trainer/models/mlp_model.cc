#include "harness/trainer/models/mlp_model.h"

#include <cmath>
#include <string>

namespace lockstep {
namespace {

// PyTorch's default for Linear (kaiming_uniform with a = sqrt(5) for the weight, and the bias):
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn from our generator instead of the global one.
void InitLinear(torch::nn::Linear& linear, at::Generator& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(linear->options.in_features()));
  linear->weight.uniform_(-bound, bound, gen);
  linear->bias.uniform_(-bound, bound, gen);
}

}  // namespace

MlpModel::MlpModel(const ModelSpec& spec, at::Generator& gen)
    : spec_(spec), root_(std::make_shared<torch::nn::Module>("MlpModel")) {
  TORCH_CHECK(spec.layers >= 0 && spec.hidden >= 1 && spec.input_dim >= 1 && spec.output_dim >= 1,
              "MlpModel: layers, hidden, input_dim, output_dim out of range");
  torch::NoGradGuard no_grad;
  auto blocks = root_->register_module("blocks", torch::nn::ModuleList());
  int64_t in = spec.input_dim;
  for (int i = 0; i < spec.layers; ++i) {
    auto block = std::make_shared<torch::nn::Module>("MlpBlock");
    Hidden h;
    h.linear = block->register_module("linear", torch::nn::Linear(in, spec.hidden));
    InitLinear(h.linear, gen);
    if (spec.norm == NormKind::kLayerNorm) {
      h.layer_norm = block->register_module(
          "norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({spec.hidden})));
    } else if (spec.norm == NormKind::kBatchNorm) {
      h.batch_norm = block->register_module("norm", torch::nn::BatchNorm1d(spec.hidden));
    }
    blocks->push_back(block);
    hidden_.push_back(h);
    in = spec.hidden;
  }
  head_ = root_->register_module("head", torch::nn::Linear(in, spec.output_dim));
  InitLinear(head_, gen);
}

torch::Tensor MlpModel::Forward(const torch::Tensor& inputs) {
  torch::Tensor x = inputs;
  const bool training = root_->is_training();
  for (Hidden& h : hidden_) {
    x = h.linear(x);
    if (!h.layer_norm.is_empty()) x = h.layer_norm(x);
    if (!h.batch_norm.is_empty()) x = h.batch_norm(x);
    x = torch::relu(x);
    if (training && spec_.dropout > 0.0) x = torch::dropout(x, spec_.dropout, /*train=*/true);
  }
  return head_(x);
}

torch::Tensor MlpModel::Loss(const Batch& batch) {
  return torch::mse_loss(Forward(batch.inputs), batch.targets);
}

}  // namespace lockstep
