// The mlp of the reference trainer: `layers` hidden Linear layers of width `hidden`, each followed
// by an optional LayerNorm or BatchNorm1d, ReLU and dropout, then a Linear head; MSE loss.
// BatchNorm's running_mean / running_var / num_batches_tracked are buffers the trainer must keep
// in sync across ranks (the unsynced_buffers injection is about them).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "harness/scenario/scenario.h"
#include "harness/trainer/model.h"

namespace lockstep {

class MlpModel : public Model {
 public:
  // Initializes every parameter from `gen` only (PyTorch's default Linear ranges), on the CPU.
  // Constructing the submodules draws from LibTorch's global generator; MakeModel shields it.
  MlpModel(const ModelSpec& spec, at::Generator& gen);

  torch::nn::Module& module() override { return *root_; }
  torch::Tensor Loss(const Batch& batch) override;
  // [B, input_dim] -> [B, output_dim]
  torch::Tensor Forward(const torch::Tensor& inputs);

 private:
  struct Hidden {
    torch::nn::Linear linear{nullptr};
    torch::nn::LayerNorm layer_norm{nullptr};
    torch::nn::BatchNorm1d batch_norm{nullptr};
  };

  ModelSpec spec_;
  std::shared_ptr<torch::nn::Module> root_;
  std::vector<Hidden> hidden_;
  torch::nn::Linear head_{nullptr};
};

}  // namespace lockstep
