#pragma once

#include <torch/types.h>

namespace lockstep {

// Materialized softmax(QK^T / sqrt(D) + causal mask) V, with dropout on the probabilities. The
// reference the other attention paths are tested against.
torch::Tensor NaiveAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             bool causal, double dropout_p, bool training);

}  // namespace lockstep
