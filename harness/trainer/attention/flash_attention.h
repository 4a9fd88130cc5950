#pragma once

#include <torch/types.h>

#include <cstdint>

namespace lockstep {

inline constexpr int64_t kDefaultFlashTile = 16;

// Tiled online-softmax attention in the FlashAttention-2 style, differentiable through a custom
// autograd function whose backward recomputes the scores per tile from q, k, v and the saved
// log-sum-exp, so no [Tq, Tk] matrix is ever kept. `tile` is the query and key tile length; T need
// not be a multiple of it. Dropout on the probabilities would need the forward's random mask again
// in the backward, so this path applies dropout_p to the attention output instead. The backward
// is once-differentiable (no double backward).
torch::Tensor FlashAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             bool causal, double dropout_p, bool training,
                             int64_t tile = kDefaultFlashTile);

// The forward alone: the output and the per-row log-sum-exp of the scaled, masked scores
// ([B, H, Tq], in float for bfloat16 and half inputs: the type the path accumulates in). Exposed
// so tests can check the statistic the backward relies on.
struct FlashForwardResult {
  torch::Tensor out;
  torch::Tensor lse;
};
FlashForwardResult FlashAttentionForward(const torch::Tensor& q, const torch::Tensor& k,
                                         const torch::Tensor& v, bool causal, int64_t tile);

}  // namespace lockstep
