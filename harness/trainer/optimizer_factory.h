// LibTorch's SGD (with momentum) and AdamW, built from the scenario, plus the learning-rate
// schedule. Used per parameter by ddp and on the flat shard by zero1, so both modes run the same
// update arithmetic.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/scenario/scenario.h"

namespace lockstep {

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(const OptimizerSpec& spec,
                                                       std::vector<torch::Tensor> params);

// Linear warm-up from lr/warmup_steps to lr over `warmup_steps` steps (1-based), then constant.
double LearningRate(const OptimizerSpec& spec, int64_t step);

void SetLearningRate(torch::optim::Optimizer& optimizer, double lr);

// Visits the optimizer state of `param` as ("momentum_buffer" | "exp_avg" | "exp_avg_sq", tensor);
// nothing before the first step.
void VisitOptimizerState(torch::optim::Optimizer& optimizer, const torch::Tensor& param,
                         const std::function<void(const std::string&, const torch::Tensor&)>& visit);

}  // namespace lockstep
