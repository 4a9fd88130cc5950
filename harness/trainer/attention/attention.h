// The attention paths of the transformer behind one signature, and the dispatch between them.
// q, k, v are [B, H, T, D]; the result is [B, H, Tq, D]. `causal` masks key j for query i when
// j > i (top-left aligned, as at::scaled_dot_product_attention does). Dropout acts only when
// `training`.
#pragma once

#include <torch/types.h>

#include "harness/scenario/scenario.h"
#include "harness/trainer/attention/flash_attention.h"
#include "harness/trainer/attention/naive_attention.h"
#include "harness/trainer/attention/sdpa_attention.h"

namespace lockstep {

// The transformer's entry point.
torch::Tensor Attend(AttentionKind kind, const torch::Tensor& q, const torch::Tensor& k,
                     const torch::Tensor& v, bool causal, double dropout_p, bool training);

}  // namespace lockstep
