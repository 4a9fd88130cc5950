#include "harness/trainer/optimizer_factory.h"

#include <type_traits>
#include <typeinfo>

namespace lockstep {

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const OptimizerSpec& spec,
                                                       std::vector<torch::Tensor> params) {
  if (spec.kind == OptimizerKind::kAdamW) {
    auto options = torch::optim::AdamWOptions(spec.lr)
                       .betas(std::make_tuple(spec.beta1, spec.beta2))
                       .eps(spec.eps)
                       .weight_decay(spec.weight_decay);
    return std::make_unique<torch::optim::AdamW>(std::move(params), options);
  }
  auto options = torch::optim::SGDOptions(spec.lr).momentum(spec.momentum).weight_decay(spec.weight_decay);
  return std::make_unique<torch::optim::SGD>(std::move(params), options);
}

double LearningRate(const OptimizerSpec& spec, int64_t step) {
  if (spec.warmup_steps <= 0 || step >= spec.warmup_steps) return spec.lr;
  const int64_t s = step < 1 ? 1 : step;
  return spec.lr * static_cast<double>(s) / static_cast<double>(spec.warmup_steps);
}

void SetLearningRate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups()) {
    auto& options = group.options();
    if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options)) sgd->lr(lr);
    if (auto* adamw = dynamic_cast<torch::optim::AdamWOptions*>(&options)) adamw->lr(lr);
  }
}

namespace {

// LibTorch keys optimizer state by the parameter's TensorImpl.
template <typename Map>
auto StateKey(const torch::Tensor& param) {
  using Key = typename std::decay_t<Map>::key_type;
  return static_cast<Key>(param.unsafeGetTensorImpl());
}

}  // namespace

void VisitOptimizerState(torch::optim::Optimizer& optimizer, const torch::Tensor& param,
                         const std::function<void(const std::string&, const torch::Tensor&)>& visit) {
  auto& state = optimizer.state();
  auto it = state.find(StateKey<decltype(state)>(param));
  if (it == state.end()) return;
  // The exact type, not dynamic_cast's walk of the hierarchy: every state tensor of every step
  // comes through here (the optimizers MakeOptimizer makes keep exactly these two types).
  torch::optim::OptimizerParamState& s = *it->second;
  if (typeid(s) == typeid(torch::optim::AdamWParamState)) {
    auto& adamw = static_cast<torch::optim::AdamWParamState&>(s);
    visit("exp_avg", adamw.exp_avg());
    visit("exp_avg_sq", adamw.exp_avg_sq());
  } else if (typeid(s) == typeid(torch::optim::SGDParamState)) {
    auto& sgd = static_cast<torch::optim::SGDParamState&>(s);
    if (sgd.momentum_buffer().defined()) visit("momentum_buffer", sgd.momentum_buffer());
  }
}

}  // namespace lockstep
