#include "harness/trainer/attention/sdpa_attention.h"

#include <torch/torch.h>

namespace lockstep {

torch::Tensor SdpaAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            bool causal, double dropout_p, bool training) {
  // Positional arguments only: 2.1 added `scale` and 2.5 `enable_gqa` after these, with defaults.
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{},
                                          training ? dropout_p : 0.0, causal);
}

}  // namespace lockstep
