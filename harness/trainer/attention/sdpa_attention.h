#pragma once

#include <torch/types.h>

namespace lockstep {

// at::scaled_dot_product_attention: on CUDA the flash kernel for bf16/fp16 (memory-efficient or
// math for fp32), on CPU torch 2.x's own flash kernel (sdpa_attention_test pins which).
torch::Tensor SdpaAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            bool causal, double dropout_p, bool training);

}  // namespace lockstep
