#include "harness/trainer/attention/attention.h"

#include <c10/util/Exception.h>
#include <torch/version.h>

namespace lockstep {

Status AttentionAvailable(AttentionKind kind) {
  if (kind == AttentionKind::kSdpa && !SdpaAvailable()) {
    return UnavailableError(
        "attention: sdpa needs at::scaled_dot_product_attention, which this LibTorch (" TORCH_VERSION
        ") lacks; build against LibTorch >= 2.0 (-DTorch_DIR=...), or use attention: naive or flash");
  }
  return Status::Ok();
}

torch::Tensor Attend(AttentionKind kind, const torch::Tensor& q, const torch::Tensor& k,
                     const torch::Tensor& v, bool causal, double dropout_p, bool training) {
  switch (kind) {
    case AttentionKind::kNaive:
      return NaiveAttention(q, k, v, causal, dropout_p, training);
    case AttentionKind::kFlash:
      return FlashAttention(q, k, v, causal, dropout_p, training);
    case AttentionKind::kSdpa:
      return SdpaAttention(q, k, v, causal, dropout_p, training);
  }
  TORCH_CHECK(false, "Attend: unknown attention kind ", static_cast<int>(kind));
}

}  // namespace lockstep
