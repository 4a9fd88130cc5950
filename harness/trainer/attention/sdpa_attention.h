#pragma once

#include <torch/types.h>

namespace lockstep {

// Whether this LibTorch has at::scaled_dot_product_attention (LibTorch >= 2.0).
bool SdpaAvailable();

// at::scaled_dot_product_attention, which picks the flash kernel on CUDA. Where this LibTorch
// lacks it, throws c10::Error; scenario validation rejects sdpa before that (AttentionAvailable).
torch::Tensor SdpaAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                            bool causal, double dropout_p, bool training);

}  // namespace lockstep
