#include "harness/trainer/attention/naive_attention.h"

#include <torch/torch.h>

#include <cmath>
#include <limits>

namespace lockstep {

torch::Tensor NaiveAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             bool causal, double dropout_p, bool training) {
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "NaiveAttention: q, k, v must be [B, H, T, D]");
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  if (causal) {
    const int64_t tq = q.size(2);
    const int64_t tk = k.size(2);
    torch::Tensor mask =
        torch::ones({tq, tk}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
    scores = scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
  }
  torch::Tensor probs = torch::softmax(scores, -1);
  if (training && dropout_p > 0.0) probs = torch::dropout(probs, dropout_p, /*train=*/true);
  return torch::matmul(probs, v);
}

}  // namespace lockstep
