// The transformer of the reference trainer: a small decoder-only language model. Token embedding
// plus learned positional embedding, `layers` pre-norm blocks (LayerNorm -> causal self-attention
// -> residual, LayerNorm -> 4x GELU MLP -> residual), a final LayerNorm and an LM head;
// cross-entropy over all positions. The attention path is the scenario's (naive, flash, sdpa).
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "harness/scenario/scenario.h"
#include "harness/trainer/model.h"

namespace lockstep {

class TrainingHooks;

class TransformerModel : public Model {
 public:
  // Initializes every parameter from `gen` only (GPT-2's scheme), on the CPU. `hooks` may be
  // null; otherwise it is called inside every attention forward and must outlive the model.
  // norm: batchnorm is rejected by scenario validation; here it is treated as layernorm, and
  // norm: none drops every LayerNorm (ln1, ln2, ln_f).
  TransformerModel(const ModelSpec& spec, at::Generator& gen, TrainingHooks* hooks);

  torch::nn::Module& module() override { return *root_; }
  torch::Tensor Loss(const Batch& batch) override;
  // [B, T] int64 tokens (T <= seq_len) -> [B, T, vocab] logits.
  torch::Tensor Forward(const torch::Tensor& tokens);

 private:
  struct Block {
    torch::nn::LayerNorm ln1{nullptr};  // null when norm: none
    torch::nn::Linear qkv{nullptr};
    torch::nn::Linear attn_proj{nullptr};
    torch::nn::LayerNorm ln2{nullptr};
    torch::nn::Linear fc{nullptr};
    torch::nn::Linear mlp_proj{nullptr};
  };

  torch::Tensor SelfAttention(Block& block, const torch::Tensor& x);

  ModelSpec spec_;
  TrainingHooks* hooks_;
  std::shared_ptr<torch::nn::Module> root_;
  torch::nn::Embedding tok_emb_{nullptr};
  torch::nn::Embedding pos_emb_{nullptr};
  std::vector<Block> blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
  torch::nn::Linear lm_head_{nullptr};
};

}  // namespace lockstep
