// The models of the reference trainer (LibTorch C++ frontend). Built deterministically from the
// scenario seed, identical on every rank before the initial broadcast.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "harness/scenario/scenario.h"

namespace lockstep {

class TrainingHooks;

// One micro-batch on one rank.
struct Batch {
  torch::Tensor inputs;   // mlp: [B, input_dim] float; transformer: [B, seq_len] int64 tokens
  torch::Tensor targets;  // mlp: [B, output_dim] float; transformer: [B, seq_len] int64 next tokens
};

class Model {
 public:
  virtual ~Model() = default;
  // Parameters and buffers, named ("blocks.0.attn.qkv.weight"), in registration order.
  virtual torch::nn::Module& module() = 0;
  // Forward pass and the mean loss over the batch (MSE for mlp, cross-entropy for transformer).
  virtual torch::Tensor Loss(const Batch& batch) = 0;
};

// `hooks` may be null; the transformer calls hooks->OnAttentionForward() inside every attention
// forward (the place where pytorch/xla#8812 ran device discovery again).
std::unique_ptr<Model> MakeModel(const ModelSpec& spec, uint64_t seed, torch::Device device,
                                 TrainingHooks* hooks);

}  // namespace lockstep
