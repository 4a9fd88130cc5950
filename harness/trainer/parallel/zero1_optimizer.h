// ZeRO stage 1: optimizer state sharded across the data-parallel group. All parameters live in
// one flat fp32 layout (registration order, zero-padded to a multiple of the slice size); rank d
// of a slice owns elements [d*S, (d+1)*S). A step reduce-scatters the gradients, clips by the
// global norm, updates the owned shard with LibTorch's optimizer, and all-gathers the updated
// parameters: the re-sync whose absence was pytorch/xla#8396. With slices > 1 the shard's
// gradient is also all-reduced across slices, among the ranks that own the same shard.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "harness/core/status.h"
#include "harness/scenario/scenario.h"
#include "harness/trainer/parallel/process_groups.h"

namespace lockstep {

class TrainingHooks;

class Zero1Optimizer {
 public:
  // `params` must already hold their initial (broadcast) values.
  Zero1Optimizer(std::vector<torch::Tensor> params, const OptimizerSpec& spec, ProcessGroups groups,
                 TrainingHooks* hooks);

  // Syncs the local gradients in .grad, updates, re-gathers. `grad_norm` gets the global norm of
  // the averaged gradient before clipping.
  Status Step(int64_t step, double lr, double* grad_norm);

  int64_t shard_index() const { return shard_index_; }
  // The reduced gradient of this rank's shard: one tensor, made with this object and overwritten
  // each step.
  const torch::Tensor& grad_shard() const { return grad_shard_; }
  // How many tensors the shard's optimizer keeps state for (0 before its first step, then 1).
  size_t StateCount() const { return optimizer_->state().size(); }
  // ("exp_avg" | "exp_avg_sq" | "momentum_buffer", tensor) of this rank's shard.
  void VisitShardState(const std::function<void(const std::string&, const torch::Tensor&)>& visit);

 private:
  std::vector<torch::Tensor> params_;
  OptimizerSpec spec_;
  ProcessGroups groups_;
  TrainingHooks* hooks_;
  int64_t total_ = 0;       // padded flat length
  int64_t shard_size_ = 0;
  int64_t shard_index_ = 0;
  torch::Tensor master_shard_;  // leaf tensor the optimizer updates
  torch::Tensor grad_shard_;
  torch::Tensor previous_grad_shard_;  // last step's reduced shard (stale_grad)
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
};

}  // namespace lockstep
