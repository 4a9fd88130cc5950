#include "harness/trainer/models/transformer_model.h"

#include <algorithm>
#include <cmath>

#include "harness/trainer/attention/attention.h"
#include "harness/trainer/training_hooks.h"

namespace lockstep {
namespace {

// GPT-2's initialization has std 0.02 (and 0.02 / sqrt(2 * layers) for the projections that feed
// the residual stream). We draw uniformly with that std: CPU uniform_ is a serial kernel, so the
// values do not depend on the vector ISA of the machine, which normal_'s vectorized path may.
constexpr double kInitStd = 0.02;

void InitUniformStd(const torch::Tensor& t, double std, at::Generator& gen) {
  const double bound = std * std::sqrt(3.0);
  t.uniform_(-bound, bound, gen);
}

void InitLinear(torch::nn::Linear& linear, double std, at::Generator& gen) {
  InitUniformStd(linear->weight, std, gen);
  if (linear->bias.defined()) linear->bias.zero_();
}

torch::nn::LayerNorm MaybeLayerNorm(torch::nn::Module& parent, const char* name, const ModelSpec& spec) {
  if (spec.norm == NormKind::kNone) return torch::nn::LayerNorm(nullptr);
  return parent.register_module(name, torch::nn::LayerNorm(torch::nn::LayerNormOptions({spec.hidden})));
}

torch::Tensor MaybeNorm(torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  return norm.is_empty() ? x : norm(x);
}

}  // namespace

TransformerModel::TransformerModel(const ModelSpec& spec, at::Generator& gen, TrainingHooks* hooks)
    : spec_(spec), hooks_(hooks), root_(std::make_shared<torch::nn::Module>("TransformerModel")) {
  TORCH_CHECK(spec.layers >= 0 && spec.hidden >= 1 && spec.heads >= 1 && spec.hidden % spec.heads == 0,
              "TransformerModel: heads (", spec.heads, ") must divide hidden (", spec.hidden, ")");
  TORCH_CHECK(spec.seq_len >= 1 && spec.vocab >= 1, "TransformerModel: seq_len and vocab must be >= 1");
  torch::NoGradGuard no_grad;
  const int64_t c = spec.hidden;
  const double proj_std = kInitStd / std::sqrt(2.0 * std::max(spec.layers, 1));

  tok_emb_ = root_->register_module("tok_emb", torch::nn::Embedding(spec.vocab, c));
  InitUniformStd(tok_emb_->weight, kInitStd, gen);
  pos_emb_ = root_->register_module("pos_emb", torch::nn::Embedding(spec.seq_len, c));
  InitUniformStd(pos_emb_->weight, kInitStd, gen);

  auto blocks = root_->register_module("blocks", torch::nn::ModuleList());
  for (int i = 0; i < spec.layers; ++i) {
    auto block = std::make_shared<torch::nn::Module>("TransformerBlock");
    auto attn = std::make_shared<torch::nn::Module>("CausalSelfAttention");
    auto mlp = std::make_shared<torch::nn::Module>("Mlp");
    Block b;
    b.ln1 = MaybeLayerNorm(*block, "ln1", spec);
    block->register_module("attn", attn);
    b.qkv = attn->register_module("qkv", torch::nn::Linear(c, 3 * c));
    InitLinear(b.qkv, kInitStd, gen);
    b.attn_proj = attn->register_module("proj", torch::nn::Linear(c, c));
    InitLinear(b.attn_proj, proj_std, gen);
    b.ln2 = MaybeLayerNorm(*block, "ln2", spec);
    block->register_module("mlp", mlp);
    b.fc = mlp->register_module("fc", torch::nn::Linear(c, 4 * c));
    InitLinear(b.fc, kInitStd, gen);
    b.mlp_proj = mlp->register_module("proj", torch::nn::Linear(4 * c, c));
    InitLinear(b.mlp_proj, proj_std, gen);
    blocks->push_back(block);
    blocks_.push_back(b);
  }
  ln_f_ = MaybeLayerNorm(*root_, "ln_f", spec);
  lm_head_ = root_->register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(c, spec.vocab).bias(false)));
  InitLinear(lm_head_, kInitStd, gen);
}

torch::Tensor TransformerModel::SelfAttention(Block& block, const torch::Tensor& x) {
  const int64_t b = x.size(0);
  const int64_t t = x.size(1);
  const int64_t c = x.size(2);
  const int64_t h = spec_.heads;
  // [B, T, 3C] -> [3, B, H, T, D]
  torch::Tensor qkv = block.qkv(x).view({b, t, 3, h, c / h}).permute({2, 0, 3, 1, 4});
  if (hooks_ != nullptr) hooks_->OnAttentionForward();
  const bool training = root_->is_training();
  torch::Tensor y = Attend(spec_.attention, qkv[0], qkv[1], qkv[2], /*causal=*/true, spec_.dropout, training);
  y = block.attn_proj(y.transpose(1, 2).reshape({b, t, c}));
  if (training && spec_.dropout > 0.0) y = torch::dropout(y, spec_.dropout, /*train=*/true);
  return y;
}

torch::Tensor TransformerModel::Forward(const torch::Tensor& tokens) {
  TORCH_CHECK(tokens.dim() == 2, "TransformerModel: tokens must be [B, T]");
  const int64_t t = tokens.size(1);
  TORCH_CHECK(t <= spec_.seq_len, "TransformerModel: sequence of ", t, " tokens exceeds seq_len ", spec_.seq_len);
  const bool training = root_->is_training();
  torch::Tensor pos = torch::arange(t, torch::TensorOptions().dtype(torch::kLong).device(tokens.device()));
  torch::Tensor x = tok_emb_(tokens) + pos_emb_(pos).unsqueeze(0);
  for (Block& block : blocks_) {
    x = x + SelfAttention(block, MaybeNorm(block.ln1, x));
    torch::Tensor m = block.mlp_proj(torch::gelu(block.fc(MaybeNorm(block.ln2, x))));
    if (training && spec_.dropout > 0.0) m = torch::dropout(m, spec_.dropout, /*train=*/true);
    x = x + m;
  }
  return lm_head_(MaybeNorm(ln_f_, x));
}

torch::Tensor TransformerModel::Loss(const Batch& batch) {
  torch::Tensor logits = Forward(batch.inputs);
  return torch::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), batch.targets.reshape({-1}));
}

}  // namespace lockstep
